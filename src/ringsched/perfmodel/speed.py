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
from ringsched.perfmodel.efficiency import AdaptiveRun, noise_scale
from ringsched.perfmodel.gpus import GpuProfiles, default_profiles
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
    """Step time and throughput of catalogue models on one cluster, cached by shape.

    Every call takes an optional GPU type ``gpu``; without it, the cluster's first server's
    type (the only one on a homogeneous cluster), so type-blind policies plan on that type.
    ``profiles`` adds parameter files (``--gpu-profiles DIR``) to the built-in ones."""

    def __init__(self, cluster: Cluster, profiles: GpuProfiles | None = None):
        self.cluster = cluster
        self.profiles = profiles or default_profiles()
        for t in cluster.gpu_types:
            self.profiles.check_type(t)
        self.gpu = cluster.servers[0].gpu  # the default type
        self._server_gpu = tuple(s.gpu for s in cluster.servers)
        self._first_server = {t: next(s for s in cluster.servers if s.gpu == t) for t in cluster.gpu_types}
        self._racked = bool(cluster.racks)
        # A ring that crosses racks gets, on the uplink, the fair share of one server's NIC
        # under the rack's oversubscription (docs/cluster.md).
        self._rack_Bps = None
        if self._racked:
            per_rack = Counter(s.rack for s in cluster.servers)
            self._rack_Bps = min(r.uplink_Bps / per_rack[r.name] for r in cluster.racks if per_rack[r.name])
        self._params: dict[tuple[str, str], RingParams] = {}
        self._step: dict[tuple, float] = {}
        self._shapes: dict[Placement, Shape] = {}
        self._custom: set[tuple[str, str]] = set()  # (model, gpu) with fixed, fitted parameters
        self._typed: dict[tuple[str, str], object] = {}
        self.version = 0  # bumps when parameters change: callers' caches of speeds are stale then

    def typed(self, model: str, gpu: str | None = None):
        """The model on a GPU type (``gpus.TypedModel``: profile or fitted parameters)."""
        key = (model, gpu or self.gpu)
        tm = self._typed.get(key)
        if tm is None:
            tm = self._typed[key] = self.profiles.model_on(*key)
        return tm

    def params(self, model: str, gpu: str | None = None) -> RingParams:
        key = (model, gpu or self.gpu)
        p = self._params.get(key)
        if p is None:
            tm = self.typed(*key)
            if tm.fitted is not None:
                p = tm.fitted
                self._custom.add(key)
            else:
                p = ring_params(tm.profile, self.cluster, server=self._first_server.get(key[1]))
            self._params[key] = p
        return p

    def set_params(self, model: str, params: RingParams, gpu: str | None = None) -> None:
        """Use ``params`` for ``model`` (on ``gpu``, default type) from now on (a job type
        outside the catalogue, or one refitted online from measured step times); forgets
        cached step times of that model."""
        key = (model, gpu or self.gpu)
        self._params[key] = params
        self._custom.add(key)
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

    def step_time_s(self, model: str, local_bsz: int, shape: Shape, inter_Bps: float | None = None,
                    gpu: str | None = None) -> float:
        """Seconds per iteration; ``inter_Bps`` overrides the NIC bandwidth a cross-server ring gets."""
        gpu = gpu or self.gpu
        key = (model, local_bsz, shape, inter_Bps, gpu)
        t = self._step.get(key)
        if t is None:
            w, k, d, r = shape
            p = self.params(model, gpu)
            if ((inter_Bps is not None and k > 1) or r > 1) and (model, gpu) not in self._custom:
                p = ring_params(self.typed(model, gpu).profile, self.cluster, server=self._first_server.get(gpu),
                                reserved_Bps=inter_Bps, rack_Bps=self._rack_Bps if r > 1 else None)
            t = self._step[key] = float(step_time_s(p, local_bsz, w, k, d, r))
        return t

    def throughput_sps(self, model: str, local_bsz: int, shape: Shape, inter_Bps: float | None = None,
                       gpu: str | None = None) -> float:
        """Samples per second of the whole job (0 when not running)."""
        if shape[0] == 0:
            return 0.0
        return shape[0] * local_bsz / self.step_time_s(model, local_bsz, shape, inter_Bps, gpu)

    def step_time_on(self, model: str, local_bsz: int, placement: Placement,
                     inter_Bps: float | None = None) -> float:
        """Step time on an actual placement: on its GPU type, or, for a ring that spans types,
        on the slowest of them (every step waits for the slowest worker)."""
        shape = self.shape(placement)
        types = {self._server_gpu[s] for s in placement} if len(self._first_server) > 1 else {self.gpu}
        return max(self.step_time_s(model, local_bsz, shape, inter_Bps, t) for t in sorted(types))

    def progress_sps(self, job, done_samples: float, placement: Placement,
                     inter_Bps: float | None = None) -> float:
        """What the world credits a running job per second: samples at its own batch.

        A rigid-batch job: its throughput at its own per-GPU batch (efficiency 1, as before
        statistical efficiency existed). An adaptive-batch job with a measured noise scale:
        in each epoch, throughput at the per-GPU batch that maximises goodput on this placement
        times the statistical efficiency of its total batch relative to the user's (goodput.py),
        shown as the constant rate that finishes its remaining work exactly (``AdaptiveRun``)."""
        if not placement:
            return 0.0
        run = self.adaptive_run(job, placement, inter_Bps)
        if run is not None:
            return run.rate_sps(done_samples)
        w = len(placement)
        return w * job.local_bsz / self.step_time_on(job.model, job.local_bsz, placement, inter_Bps)

    def adaptive_run(self, job, placement: Placement, inter_Bps: float | None = None) -> AdaptiveRun | None:
        """An adaptive-batch job's run on ``placement``, re-tuning its batch at every epoch
        (goodput.py; None for a rigid-batch job or a model without a noise scale: its progress
        is its throughput, constant)."""
        if not job.adaptive_batch or noise_scale(job.model) is None or not placement:
            return None
        from ringsched.perfmodel.goodput import adaptive_run

        return adaptive_run(self, job, placement, inter_Bps)
