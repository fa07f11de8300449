"""Discrete instances for the exact offline optimum and the empirical check of GADGET's
guarantee (docs/theory.md).

An instance is the model of the proof, made finite:

* ``S`` servers; server s has ``gpus[s]`` GPUs and one NIC whose capacity is normalised to 1;
* ``slots`` time slots 0..slots-1 of ``slot_s`` seconds each;
* ``nic_share``: the fraction of a NIC a ring reserves on every NIC it crosses (a ring over
  k > 1 servers uses ``nic_share`` of the NIC of each of its servers in that slot; a ring on
  one server uses no NIC);
* jobs j with an arrival slot ``arrival``, integer work ``work`` (progress units), worker
  bounds [``wmin``, ``wmax``], a utility per completion slot ``utility[T]`` (completion at
  the END of slot T, non-increasing in T, 0 for T < arrival), and a configuration table:
  a configuration c is a vector y of per-server worker counts (sum in [wmin, wmax], at most
  ``max_per_server`` on one server) with its integer progress per slot ``progress[c]``.

Progress comes from the ring performance model (``ringsched.perfmodel.speed.SpeedModel``):
for the shape (w, k, d) of y (workers, servers, most workers on one server),

    g_j(c) = floor(throughput_sps(model, bsz, (w, k, d, 1), inter_Bps) * slot_s / unit_j)

with ``inter_Bps = nic_share x NIC`` when k > 1 (the reserved-bandwidth model), and the unit
chosen so that one worker does exactly ``units_per_gpu_slot`` units in a slot (4 by
default; cross-server rings of communication-heavy models may do less per worker, even less
than one worker alone).

``random_instance`` is the documented generator (docs/theory.md, "The empirical check").
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property

import numpy as np

from ringsched.cluster.model import Cluster, Server
from ringsched.utility.functions import DeadlineUtility, LinearUtility, SigmoidUtility
from ringsched.perfmodel.catalogue import get_profile
from ringsched.perfmodel.speed import SpeedModel

EPS = 1e-9


@dataclass(frozen=True, eq=False)
class DiscreteJob:
    id: int
    arrival: int
    work: int
    wmin: int
    wmax: int
    utility: tuple[float, ...]  # per completion slot T (end of slot T), 0 for T < arrival
    configs: tuple[tuple[int, ...], ...]  # per-server worker counts
    progress: tuple[int, ...]  # units per slot of each configuration
    model: str = ""
    kind: str = ""  # utility family, for reports

    @cached_property
    def Y(self) -> np.ndarray:
        """(configs, servers) worker counts."""
        return np.asarray(self.configs, dtype=np.int64).reshape(len(self.configs), -1)

    @cached_property
    def g(self) -> np.ndarray:
        return np.asarray(self.progress, dtype=np.int64)

    @cached_property
    def u(self) -> np.ndarray:
        return np.asarray(self.utility, dtype=float)

    @cached_property
    def multi(self) -> np.ndarray:
        """Whether each configuration's ring crosses servers (k > 1)."""
        return (self.Y > 0).sum(axis=1) > 1


@dataclass(frozen=True, eq=False)
class Instance:
    gpus: tuple[int, ...]
    slots: int
    nic_share: float
    jobs: tuple[DiscreteJob, ...]
    slot_s: float = 300.0
    max_per_server: int = 2
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        S = len(self.gpus)
        if S < 1 or min(self.gpus) < 1:
            raise ValueError("need at least one server with at least one GPU")
        if not 0 < self.nic_share <= 1:
            raise ValueError("nic_share must lie in (0, 1]")
        if self.slots < 1:
            raise ValueError("need at least one slot")
        for j in self.jobs:
            if not 0 <= j.arrival < self.slots:
                raise ValueError(f"job {j.id}: arrival {j.arrival} outside [0, {self.slots})")
            if j.work < 1:
                raise ValueError(f"job {j.id}: work must be >= 1 unit")
            if len(j.utility) != self.slots:
                raise ValueError(f"job {j.id}: utility needs one value per slot")
            u = np.asarray(j.utility[j.arrival:])
            if np.any(u < 0) or np.any(np.diff(u) > 1e-12):
                raise ValueError(f"job {j.id}: utility must be non-negative and non-increasing")
            if len(j.configs) != len(j.progress):
                raise ValueError(f"job {j.id}: one progress value per configuration")
            for y, g in zip(j.configs, j.progress):
                if len(y) != S or any(v < 0 or v > o for v, o in zip(y, self.gpus)):
                    raise ValueError(f"job {j.id}: configuration {y} does not fit the servers")
                if not j.wmin <= sum(y) <= j.wmax or g < 1:
                    raise ValueError(f"job {j.id}: configuration {y} outside the worker bounds or without progress")

    # ------------------------------------------------------------ derived arrays
    @property
    def num_servers(self) -> int:
        return len(self.gpus)

    @cached_property
    def O(self) -> np.ndarray:
        return np.asarray(self.gpus, dtype=np.int64)

    def demand(self, job: DiscreteJob) -> np.ndarray:
        """(configs,) total normalised demand of one slot of each configuration:
        sum_s y_s / O_s + [k > 1] * nic_share * k."""
        return (job.Y / self.O).sum(axis=1) + job.multi * self.nic_share * (job.Y > 0).sum(axis=1)

    def min_share(self, job: DiscreteJob) -> np.ndarray:
        """(configs,) the smallest positive share of one resource a configuration takes."""
        sh = np.where(job.Y > 0, job.Y / self.O, np.inf).min(axis=1)
        return np.where(job.multi, np.minimum(sh, self.nic_share), sh)

    def max_share(self, job: DiscreteJob) -> np.ndarray:
        """(configs,) the largest share of one resource a configuration takes."""
        sh = (job.Y / self.O).max(axis=1)
        return np.where(job.multi, np.maximum(sh, self.nic_share), sh)

    @cached_property
    def delta_max(self) -> float:
        """The largest share of one resource any configuration of any job takes in one slot."""
        vals = [float(self.max_share(j).max()) for j in self.jobs if j.configs]
        return max(vals) if vals else 0.0

    # ------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        return {"gpus": list(self.gpus), "slots": self.slots, "nic_share": self.nic_share,
                "slot_s": self.slot_s, "max_per_server": self.max_per_server, "meta": self.meta,
                "jobs": [{k: (list(map(list, v)) if k == "configs" else list(v) if isinstance(v, tuple) else v)
                          for k, v in asdict(j).items()} for j in self.jobs]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> "Instance":
        jobs = tuple(DiscreteJob(**{**j, "utility": tuple(j["utility"]), "configs": tuple(map(tuple, j["configs"])),
                                    "progress": tuple(j["progress"])}) for j in d["jobs"])
        return cls(gpus=tuple(d["gpus"]), slots=d["slots"], nic_share=d["nic_share"], jobs=jobs,
                   slot_s=d.get("slot_s", 300.0), max_per_server=d.get("max_per_server", 2), meta=d.get("meta", {}))


# ------------------------------------------------------------------ building jobs
def enumerate_configs(gpus, wmin: int, wmax: int, max_per_server: int) -> list[tuple[int, ...]]:
    """Every per-server worker vector with at most ``max_per_server`` (and O_s) on a server and
    a total in [wmin, wmax]."""
    ranges = [range(min(o, max_per_server) + 1) for o in gpus]
    return [y for y in itertools.product(*ranges) if wmin <= sum(y) <= wmax]


def perf_progress(speed: SpeedModel, model: str, bsz: int, configs, nic_Bps: float, nic_share: float,
                  slot_s: float, units_per_gpu_slot: int) -> list[int]:
    """Progress units per slot of each configuration from the ring performance model."""
    one = speed.throughput_sps(model, bsz, (1, 1, 1, 1))
    unit = one * slot_s / units_per_gpu_slot  # samples per unit: one worker does exactly this many units
    out = []
    for y in configs:
        w = sum(y)
        k = sum(1 for v in y if v > 0)
        d = max(y)
        thr = speed.throughput_sps(model, bsz, (w, k, d, 1), nic_share * nic_Bps if k > 1 else None)
        out.append(int(math.floor(thr * slot_s / unit + EPS)))
    return out


def make_job(jid: int, arrival: int, work: int, wmin: int, wmax: int, utility, gpus, slots: int,
             nic_share: float, max_per_server: int, speed: SpeedModel, model: str, *,
             slot_s: float = 300.0, units_per_gpu_slot: int = 4, kind: str = "") -> DiscreteJob:
    """A job of the catalogue ``model`` whose configurations come from the performance model;
    ``utility`` is a callable of the JCT in seconds (an ``ringsched.utility.functions`` object)
    or a sequence of per-slot values."""
    ys = enumerate_configs(gpus, wmin, wmax, max_per_server)
    bsz = get_profile(model).default_local_bsz
    g = perf_progress(speed, model, bsz, ys, speed.cluster.servers[0].nic_Bps, nic_share, slot_s, units_per_gpu_slot)
    keep = [(y, p) for y, p in zip(ys, g) if p > 0]
    O = np.asarray(gpus, dtype=float)

    def demand(y):
        y = np.asarray(y)
        k = int((y > 0).sum())
        return float((y / O).sum() + (nic_share * k if k > 1 else 0.0))

    # order: least demand first, then most progress (ties in the plan search go to the lighter one)
    keep.sort(key=lambda yp: (demand(yp[0]), -yp[1], yp[0]))
    if callable(utility):
        T = np.arange(slots)
        jct = (T + 1 - arrival) * slot_s
        u = np.where(T >= arrival, np.asarray(utility(np.maximum(jct, 0.0)), dtype=float), 0.0)
    else:
        u = np.asarray(utility, dtype=float)
    # exact non-increase despite floating noise
    u[arrival:] = np.minimum.accumulate(u[arrival:])
    return DiscreteJob(id=jid, arrival=arrival, work=int(work), wmin=wmin, wmax=wmax,
                       utility=tuple(float(v) for v in u), configs=tuple(y for y, _ in keep),
                       progress=tuple(int(p) for _, p in keep), model=model, kind=kind)


def cluster_of(gpus) -> Cluster:
    return Cluster(servers=tuple(Server(name=f"s{i}", gpus=int(o)) for i, o in enumerate(gpus)))


MODELS = ("resnet50", "vgg16", "bert_base", "ncf", "resnet18", "transformer")


def random_instance(rng: np.random.Generator, *, max_jobs: int = 8, max_slots: int = 16,
                    nic_share: float = 0.5, slot_s: float = 300.0, units_per_gpu_slot: int = 4,
                    models=MODELS) -> Instance:
    """A random small instance (the generator of ``ringsched optimum-check``).

    * 2 or 3 servers of 4 GPUs; a job takes at most 2 GPUs of one server in a slot
      (``max_per_server`` = O_s / 2), so with ``nic_share`` = 0.5 no job takes more than half of
      any resource in a slot: delta_max = 0.5 < 1, as the theorem requires (condition A3).
    * slots: uniform in [max(6, max_slots - 4), max_slots]; jobs: uniform in [max(2, max_jobs - 4), max_jobs];
      arrivals uniform over the first half of the horizon.
    * each job: a catalogue model from ``models``; worker bounds: rigid with probability 0.2
      (wmin = wmax in {1, 2, 4}), else wmin in {1, 1, 2} and wmax in {2, 4, 4, 6} (capped by the
      cluster); work = n x (progress of the job's best configuration of m = clip(2, wmin, wmax) workers) x U(0.75, 1.25)
      units, n uniform in {2, ..., 5}, so a job needs n slots at that moderate size.
    * utility (``ringsched.utility.functions``) with value log-uniform in [1, 10] and
      d = n slots the job's duration at the moderate size: sigmoid (probability 0.4; target
      JCT U(1.2, 2.5) x d slots, steepness U(1, 3) per slot), linear (0.3; reaching 0 at
      U(2, 4) x d slots) or deadline (0.3; deadline U(1, 2) x d slots, nothing after it with
      probability 0.5, else decaying with a time constant of d slots).
    """
    S = int(rng.integers(2, 4))
    gpus = (4,) * S
    cap = 2
    slots = int(rng.integers(max(6, max_slots - 4), max_slots + 1))
    n_jobs = int(rng.integers(max(2, max_jobs - 4), max_jobs + 1))
    speed = SpeedModel(cluster_of(gpus))
    wtop = cap * S
    jobs = []
    arrivals = sorted(int(a) for a in rng.integers(0, max(1, slots // 2), size=n_jobs))
    for jid, a in enumerate(arrivals):
        model = str(rng.choice(list(models)))
        if rng.random() < 0.2:
            wmin = wmax = int(min(rng.choice([1, 2, 4]), wtop))
        else:
            wmin = int(rng.choice([1, 1, 2]))
            wmax = int(min(rng.choice([2, 4, 4, 6]), wtop))
            wmin = min(wmin, wmax)
        m = min(max(wmin, 2), wmax)  # the moderate size
        ys = enumerate_configs(gpus, m, m, cap)
        bsz = get_profile(model).default_local_bsz
        g_mod = max(perf_progress(speed, model, bsz, ys, speed.cluster.servers[0].nic_Bps, nic_share, slot_s,
                                  units_per_gpu_slot) or [units_per_gpu_slot])
        g_mod = max(g_mod, 1)
        n = int(rng.integers(2, 6))
        work = max(1, int(round(n * g_mod * rng.uniform(0.75, 1.25))))
        value = float(np.exp(rng.uniform(0.0, np.log(10.0))))
        r = rng.random()
        if r < 0.4:
            kind = "sigmoid"
            target = rng.uniform(1.2, 2.5) * n * slot_s
            util = SigmoidUtility(value, target, rng.uniform(1.0, 3.0) / slot_s)
        elif r < 0.7:
            kind = "linear"
            util = LinearUtility(value, value / (rng.uniform(2.0, 4.0) * n * slot_s))
        else:
            kind = "deadline"
            decay = 0.0 if rng.random() < 0.5 else 1.0 / (n * slot_s)
            util = DeadlineUtility(value, rng.uniform(1.0, 2.0) * n * slot_s, decay)
        jobs.append(make_job(jid, a, work, wmin, wmax, util, gpus, slots, nic_share, cap, speed, model,
                             slot_s=slot_s, units_per_gpu_slot=units_per_gpu_slot, kind=kind))
    return Instance(gpus=gpus, slots=slots, nic_share=nic_share, jobs=tuple(jobs), slot_s=slot_s,
                    max_per_server=cap)


REGIMES = ("default", "small-demand")


def small_demand_instance(rng: np.random.Generator, *, jobs: tuple[int, int] = (40, 48), slots: tuple[int, int] = (9, 11),
                          servers: int = 4, gpus: int = 16, tail: float = 0.5, slot_s: float = 300.0,
                          units_per_gpu_slot: int = 4, models=MODELS) -> Instance:
    """An instance of the small-demand regime of docs/theory.md (section 7), the generator of
    ``optimum-check --regime small-demand``.

    * ``servers`` servers of ``gpus`` GPUs; a configuration puts at most one worker on a server
      and a ring reserves nu = 1 / ``gpus`` of each NIC it crosses: no configuration takes more
      than delta = 1 / ``gpus`` of any resource in a slot;
    * jobs: uniform in ``jobs``, arrivals uniform over the first half of the horizon (``slots``),
      worker bounds wmin in {1, 2} and wmax in {1, ..., servers}, work n x (progress of the
      moderate size, 2 workers or wmax) x U(0.75, 1.25) units with n in {2, ..., 4};
    * utilities: maximum log-uniform in [1, 2] (a bounded range), sigmoid, linear or deadline
      as in ``random_instance``, **truncated**: u_j(T) = 0 where u_j(T) < ``tail`` x u_j^max
      (the truncation of tiny utilities; OPT of the truncated instance is at least
      OPT - tail x sum_j u_j^max of the untruncated one).
    """
    S = servers
    gp = (gpus,) * S
    n_slots = int(rng.integers(slots[0], slots[1] + 1))
    n_jobs = int(rng.integers(jobs[0], jobs[1] + 1))
    nic_share = 1.0 / gpus
    speed = SpeedModel(cluster_of(gp))
    arrivals = sorted(int(a) for a in rng.integers(0, max(1, n_slots // 2), size=n_jobs))
    out = []
    for jid, a in enumerate(arrivals):
        model = str(rng.choice(list(models)))
        wmin = int(rng.choice([1, 2]))
        wmax = max(wmin, int(rng.integers(1, S + 1)))
        m = min(2, wmax) if wmin == 1 else wmin
        bsz = get_profile(model).default_local_bsz
        ys = enumerate_configs(gp, m, m, 1)
        g_mod = max(max(perf_progress(speed, model, bsz, ys, speed.cluster.servers[0].nic_Bps, nic_share, slot_s,
                                      units_per_gpu_slot) or [1]), 1)
        n = int(rng.integers(2, 5))
        work = max(1, int(round(n * g_mod * rng.uniform(0.75, 1.25))))
        value = float(np.exp(rng.uniform(0.0, np.log(2.0))))
        util, kind = _utility(rng, value, n, slot_s)
        j = make_job(jid, a, work, wmin, wmax, util, gp, n_slots, nic_share, 1, speed, model, slot_s=slot_s,
                     units_per_gpu_slot=units_per_gpu_slot, kind=kind)
        u = np.asarray(j.utility)
        u = np.where(u >= tail * u[a:].max(), u, 0.0)
        out.append(DiscreteJob(**{**j.__dict__, "utility": tuple(float(v) for v in u)}))
    return Instance(gpus=gp, slots=n_slots, nic_share=nic_share, jobs=tuple(out), slot_s=slot_s, max_per_server=1,
                    meta={"regime": "small-demand", "tail": tail})


def _utility(rng, value: float, n: int, slot_s: float):
    """A sigmoid (0.4), linear (0.3) or deadline (0.3) utility of maximum ``value`` for a job of
    n slots at its moderate size (the families of ``random_instance``)."""
    r = rng.random()
    if r < 0.4:
        return SigmoidUtility(value, rng.uniform(1.2, 2.5) * n * slot_s, rng.uniform(1.0, 3.0) / slot_s), "sigmoid"
    if r < 0.7:
        return LinearUtility(value, value / (rng.uniform(2.0, 4.0) * n * slot_s)), "linear"
    decay = 0.0 if rng.random() < 0.5 else 1.0 / (n * slot_s)
    return DeadlineUtility(value, rng.uniform(1.0, 2.0) * n * slot_s, decay), "deadline"
