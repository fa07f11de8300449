"""Per-job speed on a placement, memoised: the one place policies and the simulator ask
"how fast does this job run there?".

A placement is summarised by its shape: workers w, servers k, the most workers on one server
d, and racks r. The step time of a (model, batch, shape, inter-server bandwidth) is computed
once with the pure model in ``ring.py`` and cached, because a trace has few distinct shapes
and a simulation asks millions of times.
"""

from __future__ import annotations

from collections import Counter

from ringsched.cluster.model import Cluster
from ringsched.perfmodel.catalogue import get_profile
from ringsched.perfmodel.physical import ring_params
from ringsched.perfmodel.ring import RingParams, step_time_s

Placement = tuple[int, ...]
"""Sorted server indices, one entry per worker: (0, 0, 3, 3) is 2 workers on server 0 and 2 on
server 3. The empty tuple means "not running"."""

Shape = tuple[int, int, int, int]
"""(workers, servers, most workers on one server, racks)."""


def shape_of(placement: Placement, rack_index=None) -> Shape:
    if not placement:
        return (0, 0, 0, 0)
    counts = Counter(placement)
    racks = 1 if rack_index is None else max(1, len({int(rack_index[s]) for s in counts}))
    return (len(placement), len(counts), max(counts.values()), racks)


def consolidated_shape(workers: int, gpus_per_server: int) -> Shape:
    """The shape of ``workers`` packed onto as few servers of ``gpus_per_server`` as possible."""
    k = -(-workers // gpus_per_server)
    return (workers, k, min(workers, gpus_per_server), 1)


class SpeedModel:
    """Step time and throughput of catalogue models on one cluster, cached by shape."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._racked = bool(cluster.racks)
        # A ring that crosses racks gets, on the uplink, the fair share of one server's NIC
        # under the rack's oversubscription (docs/cluster.md).
        self._rack_Bps = None
        if self._racked:
            per_rack = Counter(s.rack for s in cluster.servers)
            self._rack_Bps = min(r.uplink_Bps / per_rack[r.name] for r in cluster.racks if per_rack[r.name])
        self._params: dict[str, RingParams] = {}
        self._step: dict[tuple, float] = {}
        self._shapes: dict[Placement, Shape] = {}
        self._custom: set[str] = set()
        self.version = 0  # bumps when parameters change: callers' caches of speeds are stale then

    def params(self, model: str) -> RingParams:
        p = self._params.get(model)
        if p is None:
            p = self._params[model] = ring_params(get_profile(model), self.cluster)
        return p

    def set_params(self, model: str, params: RingParams) -> None:
        """Use ``params`` for ``model`` from now on (a job type outside the catalogue, or one
        refitted online from measured step times); forgets cached step times of that model."""
        self._params[model] = params
        self._custom.add(model)
        self.version += 1
        self._step = {k: v for k, v in self._step.items() if k[0] != model}

    def shape(self, placement: Placement) -> Shape:
        # placements repeat all the time in a simulation (a job on one server, two ...): cache
        sh = self._shapes.get(placement)
        if sh is None:
            if len(self._shapes) >= 1 << 18:
                self._shapes.clear()
            sh = self._shapes[placement] = shape_of(placement, self.cluster.rack_index if self._racked else None)
        return sh

    def step_time_s(self, model: str, local_bsz: int, shape: Shape, inter_Bps: float | None = None) -> float:
        """Seconds per iteration; ``inter_Bps`` overrides the NIC bandwidth a cross-server ring gets."""
        key = (model, local_bsz, shape, inter_Bps)
        t = self._step.get(key)
        if t is None:
            w, k, d, r = shape
            p = self.params(model)
            if ((inter_Bps is not None and k > 1) or r > 1) and model not in self._custom:
                p = ring_params(get_profile(model), self.cluster, reserved_Bps=inter_Bps,
                                rack_Bps=self._rack_Bps if r > 1 else None)
            t = self._step[key] = float(step_time_s(p, local_bsz, w, k, d, r))
        return t

    def throughput_sps(self, model: str, local_bsz: int, shape: Shape, inter_Bps: float | None = None) -> float:
        """Samples per second of the whole job (0 when not running)."""
        if shape[0] == 0:
            return 0.0
        return shape[0] * local_bsz / self.step_time_s(model, local_bsz, shape, inter_Bps)
