"""The cluster: servers with GPUs, intra-server and NIC bandwidth, optionally in racks whose
uplinks are oversubscribed.

Two ways to write one (docs/cluster.md):

* a spec string ``NxG[,key=value...]``: N servers of G GPUs with the documented defaults,
  e.g. ``16x8``, ``64x8,nic_Gbps=200``, ``64x8,racks=8,oversub=4``;
* a YAML file (``*.yaml`` / ``*.yml``), validated with pydantic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS, Bound
from ringsched.validation.keyvalue import key_values

# Documented defaults (docs/cluster.md): an 8-GPU NVLink server with a 100 Gb/s NIC.
DEFAULT_INTRA_BPS = 150e9  # achievable per-GPU NVLink all-reduce bandwidth, bytes/s
DEFAULT_NIC_BPS = 12.5e9  # 100 Gb/s Ethernet/InfiniBand NIC, bytes/s each direction
DEFAULT_LATENCY_INTRA_S = 5e-6  # per ring step inside a server
DEFAULT_LATENCY_INTER_S = 25e-6  # per ring step across servers
DEFAULT_REDUCTION_BPS = 1.0e12  # GPU reduction speed C (memory-bound: read 2, write 1)


_GPU_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


# Default links (intra_Bps, nic_Bps) per built-in GPU type; provenance in perfmodel/gpus.py and
# docs/catalogue.md (t4: the median effective all-reduce bandwidths of the six T4 fits).
GPU_LINKS_BPS: dict[str, tuple[float, float]] = {
    "h200": (DEFAULT_INTRA_BPS, DEFAULT_NIC_BPS),
    "t4": (2.73e9, 0.83e9),
}


def gpu_link_defaults(gpu: str) -> tuple[float, float]:
    """(intra_Bps, nic_Bps) a server of GPU type ``gpu`` gets unless the spec says otherwise
    (a type from a --gpu-profiles folder gets the H200 defaults)."""
    return GPU_LINKS_BPS.get(gpu, (DEFAULT_INTRA_BPS, DEFAULT_NIC_BPS))


@dataclass(frozen=True)
class Server:
    name: str
    gpus: int
    intra_Bps: float = DEFAULT_INTRA_BPS
    nic_Bps: float = DEFAULT_NIC_BPS
    rack: str | None = None
    gpu: str = "h200"  # GPU type (perfmodel/gpus.py): a ring runs on one type

    def __post_init__(self) -> None:
        if not _GPU_NAME.match(self.gpu):
            raise ValueError(f"server {self.name}: GPU type must be a lower-case name, got {self.gpu!r}")
        if self.gpus < 1:
            raise ValueError(f"server {self.name}: gpus must be >= 1, got {self.gpus}")
        for f in ("intra_Bps", "nic_Bps"):
            v = getattr(self, f)
            if not np.isfinite(v) or v <= 0:
                raise ValueError(f"server {self.name}: {f} must be a positive number, got {v}")


@dataclass(frozen=True)
class Rack:
    name: str
    uplink_Bps: float

    def __post_init__(self) -> None:
        if not np.isfinite(self.uplink_Bps) or self.uplink_Bps <= 0:
            raise ValueError(f"rack {self.name}: uplink_Bps must be a positive number, got {self.uplink_Bps}")


@dataclass(frozen=True)
class Cluster:
    servers: tuple[Server, ...]
    racks: tuple[Rack, ...] = ()
    latency_intra_s: float = DEFAULT_LATENCY_INTRA_S
    latency_inter_s: float = DEFAULT_LATENCY_INTER_S
    reduction_Bps: float = DEFAULT_REDUCTION_BPS

    def __post_init__(self) -> None:
        if not self.servers:
            raise ValueError("a cluster needs at least one server")
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ValueError("server names must be unique")
        rack_names = {r.name for r in self.racks}
        if len(rack_names) != len(self.racks):
            raise ValueError("rack names must be unique")
        for s in self.servers:
            if s.rack is not None and s.rack not in rack_names:
                raise ValueError(f"server {s.name}: unknown rack {s.rack!r}")
        for f in ("latency_intra_s", "latency_inter_s", "reduction_Bps"):
            v = getattr(self, f)
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{f} must be a finite non-negative number, got {v}")

    @property
    def num_servers(self) -> int:
        return len(self.servers)

    @cached_property
    def gpus(self) -> np.ndarray:
        """GPUs per server, in server order."""
        return np.array([s.gpus for s in self.servers], dtype=np.int64)

    @cached_property
    def total_gpus(self) -> int:  # (cached: schedulers ask for it at every plan offer)
        return int(self.gpus.sum())

    @cached_property
    def gpu_types(self) -> tuple[str, ...]:
        """The GPU types present, in order of first appearance."""
        return tuple(dict.fromkeys(s.gpu for s in self.servers))

    @cached_property
    def rack_index(self) -> np.ndarray:
        """Rack number of every server (-1 when the cluster has no racks)."""
        order = {r.name: i for i, r in enumerate(self.racks)}
        return np.array([order.get(s.rack, -1) for s in self.servers], dtype=np.int64)

    def describe(self) -> str:
        groups: dict[tuple, int] = {}
        for s in self.servers:
            key = (s.gpus, s.intra_Bps, s.nic_Bps, s.gpu)
            groups[key] = groups.get(key, 0) + 1
        parts = [f"{n}x{g}{'' if t == 'h200' else ' ' + t.upper()} GPUs (intra {i / 1e9:g} GB/s, "
                 f"NIC {b * 8 / 1e9:g} Gb/s)" for (g, i, b, t), n in groups.items()]  # h200: as before types
        racks = f", {len(self.racks)} racks" if self.racks else ""
        return "; ".join(parts) + racks


_SPEC = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*$")
_BW, _LAT = LIMITS["bandwidth_Bps"], LIMITS["latency_s"]
# key -> (meaning, bound in the key's unit)
_KEYS: dict[str, tuple[str, Bound]] = {
    "intra_GBps": ("intra-server bandwidth, GB/s", _BW.scaled(1e-9, "GB/s")),
    "nic_Gbps": ("NIC bandwidth, Gb/s", _BW.scaled(8e-9, "Gb/s")),
    "racks": ("number of racks (servers split evenly)", LIMITS["racks"]),
    "oversub": ("rack uplink oversubscription (uplink = servers per rack x NIC / oversub)", LIMITS["oversub"]),
    "latency_intra_us": ("per-step latency inside a server, microseconds", _LAT.scaled(1e6, "us")),
    "latency_inter_us": ("per-step latency across servers, microseconds", _LAT.scaled(1e6, "us")),
}


def _size(spec: str) -> tuple[int, int]:
    m = _SPEC.match(spec.split(",")[0])
    if not m:
        raise InputError(f"bad cluster spec {spec!r}: expected NxG (e.g. 16x8) or a YAML file", field="cluster")
    n = LIMITS["servers"].parse(m.group(1), field="cluster", what=f"cluster {spec!r}: servers")
    g = LIMITS["server_gpus"].parse(m.group(2), field="cluster", what=f"cluster {spec!r}: GPUs per server")
    if LIMITS["total_gpus"].problem(n * g):
        raise InputError(f"cluster {spec!r} has {n * g:,} GPUs; at most {LIMITS['total_gpus'].hi:,.0f}",
                         field="cluster")
    return n, g


def parse_spec(spec: str) -> Cluster:
    """``NxG[,key=value...]`` -> Cluster. Keys: see ``_KEYS`` and docs/cluster.md."""
    n, g = _size(spec)
    known = [*_KEYS, "gpu"]
    texts = key_values(spec.split(",")[1:], known, what=f"cluster {spec!r}", field="cluster")
    gpu = texts.pop("gpu", "h200").lower()
    if not _GPU_NAME.match(gpu):
        raise InputError(f"cluster option gpu must be a GPU type name, got {gpu!r}", field="cluster")
    vals = {k: _KEYS[k][1].parse(v, field="cluster", what=f"cluster option {k}") for k, v in texts.items()}
    intra0, nic0 = gpu_link_defaults(gpu)
    intra = vals.get("intra_GBps", intra0 / 1e9) * 1e9
    nic = vals.get("nic_Gbps", nic0 * 8 / 1e9) * 1e9 / 8
    n_racks = int(vals.get("racks", 0))
    if n_racks > n:
        raise InputError(f"impossible cluster {spec!r}: more racks than servers", field="cluster")
    racks: tuple[Rack, ...] = ()
    rack_of = [None] * n
    if n_racks >= 1:
        per = int(np.ceil(n / n_racks))
        oversub = vals.get("oversub", 1.0)
        racks = tuple(Rack(f"r{i}", per * nic / oversub) for i in range(n_racks))
        rack_of = [f"r{min(i // per, n_racks - 1)}" for i in range(n)]
    elif "oversub" in vals:
        raise InputError("cluster option oversub needs racks=R", field="cluster")
    servers = tuple(Server(f"s{i}", g, intra, nic, rack_of[i], gpu) for i in range(n))
    return Cluster(
        servers, racks,
        latency_intra_s=vals.get("latency_intra_us", DEFAULT_LATENCY_INTRA_S * 1e6) * 1e-6,
        latency_inter_s=vals.get("latency_inter_us", DEFAULT_LATENCY_INTER_S * 1e6) * 1e-6,
    )


def load_cluster(spec: str) -> Cluster:
    """A cluster from a spec string or a YAML file path."""
    if spec.strip().lower().endswith((".yaml", ".yml")) or Path(spec).is_file():
        from ringsched.cluster.yaml_spec import load_cluster_yaml

        return load_cluster_yaml(spec)
    return parse_spec(spec)
