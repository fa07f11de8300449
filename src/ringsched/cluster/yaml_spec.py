"""The YAML form of a cluster, validated with pydantic; errors name the file, line and field.

    latency_intra_s: 5.0e-6        # optional, defaults as in cluster.model
    latency_inter_s: 2.5e-5
    racks:                          # optional
      - {name: r0, uplink_Bps: 5.0e10}
    servers:
      - {count: 4, gpus: 8, intra_Bps: 1.5e11, nic_Bps: 1.25e10, rack: r0}
      - {name: big, gpus: 16}
      - {count: 16, gpus: 4, gpu: t4}   # GPU type; links default to the type's

Every number is bounded (``validation.bounds.LIMITS``, docs/cluster.md); unknown and
duplicate keys, unknown racks and repeated names are refused.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ringsched.cluster import model as cm
from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS
from ringsched.validation.pydantic_errors import input_error
from ringsched.validation.yaml_doc import YamlDoc, location, read_yaml

_Bandwidth = LIMITS["bandwidth_Bps"].pydantic(float)
_Latency = LIMITS["latency_s"].pydantic(float)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerGroup(_Strict):
    name: str | None = None
    count: LIMITS["servers"].pydantic(int) = 1
    gpus: LIMITS["server_gpus"].pydantic(int)
    intra_Bps: _Bandwidth | None = None  # default: the GPU type's (cluster.model.gpu_link_defaults)
    nic_Bps: _Bandwidth | None = None
    rack: str | None = None
    gpu: str = Field("h200", pattern=r"^[a-z0-9][a-z0-9_-]*$")


class RackSpec(_Strict):
    name: str
    uplink_Bps: _Bandwidth


class ClusterSpec(_Strict):
    servers: list[ServerGroup] = Field(min_length=1)
    racks: list[RackSpec] = []
    latency_intra_s: _Latency = cm.DEFAULT_LATENCY_INTRA_S
    latency_inter_s: _Latency = cm.DEFAULT_LATENCY_INTER_S
    reduction_Bps: LIMITS["reduction_Bps"].pydantic(float) = cm.DEFAULT_REDUCTION_BPS


def _fail(doc: YamlDoc, msg: str, loc: tuple) -> InputError:
    return InputError(msg, file=doc.file, row=doc.line_of(loc), field=location(loc))


def _check_names(spec: ClusterSpec, doc: YamlDoc) -> None:
    """Unique rack and server names, known racks, bounded totals (pydantic checked each field)."""
    racks: set[str] = set()
    for i, r in enumerate(spec.racks):
        if r.name in racks:
            raise _fail(doc, f"duplicate rack name {r.name!r}", ("racks", i, "name"))
        racks.add(r.name)
    names: set[str] = set()
    servers = gpus = 0
    for i, g in enumerate(spec.servers):
        if g.rack is not None and g.rack not in racks:
            raise _fail(doc, f"unknown rack {g.rack!r}; racks: {', '.join(sorted(racks)) or 'none'}",
                        ("servers", i, "rack"))
        if g.name is not None and g.name in names:
            raise _fail(doc, f"duplicate server name {g.name!r}", ("servers", i, "name"))
        names.add(g.name)
        servers += g.count
        gpus += g.count * g.gpus
        for what, total in (("servers", servers), ("total_gpus", gpus)):
            if LIMITS[what].problem(total):
                raise _fail(doc, f"the cluster would have {total:,} {what.replace('total_', '')}; at most "
                                 f"{LIMITS[what].hi:,.0f}", ("servers", i, "count"))


def load_cluster_yaml(path: str) -> cm.Cluster:
    doc = read_yaml(path)
    if not isinstance(doc.value, dict):
        raise InputError("expected a mapping with a 'servers' list", file=doc.file, row=doc.line_of(()),
                         field="servers")
    try:
        spec = ClusterSpec.model_validate(doc.value)
    except ValidationError as e:
        raise input_error(e, doc) from None
    _check_names(spec, doc)
    servers = []
    for gi, g in enumerate(spec.servers):
        for j in range(g.count):
            base = g.name or f"g{gi}s"
            name = base if g.count == 1 and g.name else f"{base}{j}"
            intra, nic = cm.gpu_link_defaults(g.gpu)
            servers.append(cm.Server(name, g.gpus, g.intra_Bps or intra, g.nic_Bps or nic, g.rack, g.gpu))
    try:
        return cm.Cluster(tuple(servers), tuple(cm.Rack(r.name, r.uplink_Bps) for r in spec.racks),
                          spec.latency_intra_s, spec.latency_inter_s, spec.reduction_Bps)
    except ValueError as e:  # generated names that collide with given ones
        raise InputError(str(e), file=doc.file, field="servers") from None
