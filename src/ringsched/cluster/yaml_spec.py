"""The YAML form of a cluster, validated with pydantic; errors name the file and field.

    latency_intra_s: 5.0e-6        # optional, defaults as in cluster.model
    latency_inter_s: 2.5e-5
    racks:                          # optional
      - {name: r0, uplink_Bps: 5.0e10}
    servers:
      - {count: 4, gpus: 8, intra_Bps: 1.5e11, nic_Bps: 1.25e10, rack: r0}
      - {name: big, gpus: 16}
      - {count: 16, gpus: 4, gpu: t4}   # GPU type; links default to the type's
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from ringsched.cluster import model as cm
from ringsched.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerGroup(_Strict):
    name: str | None = None
    count: PositiveInt = 1
    gpus: PositiveInt
    intra_Bps: PositiveFloat | None = None  # default: the GPU type's (cluster.model.gpu_link_defaults)
    nic_Bps: PositiveFloat | None = None
    rack: str | None = None
    gpu: str = Field("h200", pattern=r"^[a-z0-9][a-z0-9_-]*$")


class RackSpec(_Strict):
    name: str
    uplink_Bps: PositiveFloat


class ClusterSpec(_Strict):
    servers: list[ServerGroup] = Field(min_length=1)
    racks: list[RackSpec] = []
    latency_intra_s: float = Field(cm.DEFAULT_LATENCY_INTRA_S, ge=0, allow_inf_nan=False)
    latency_inter_s: float = Field(cm.DEFAULT_LATENCY_INTER_S, ge=0, allow_inf_nan=False)
    reduction_Bps: float = Field(cm.DEFAULT_REDUCTION_BPS, ge=0, allow_inf_nan=False)


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_cluster_yaml(path: str) -> cm.Cluster:
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", file=path)
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        row = mark.line + 1 if mark is not None else None
        raise InputError(f"not valid YAML ({getattr(e, 'problem', None) or e})", file=path, row=row) from None
    if not isinstance(doc, dict):
        raise InputError("expected a mapping with a 'servers' list", file=path, field="servers")
    try:
        spec = ClusterSpec.model_validate(doc)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], file=path, field=_loc(err["loc"])) from None
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
    except ValueError as e:
        raise InputError(str(e), file=path, field="servers") from None
