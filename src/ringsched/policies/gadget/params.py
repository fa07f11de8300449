"""GADGET's tunables, validated as a whole, and what is derived from them and the workload:
the worker-count menu, a job's utility horizon and the price bounds L and U."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ringsched.job import Job
from ringsched.perfmodel.speed import consolidated_shape

ADMISSIONS = ("deferred", "strict")
SUBROUTINES = ("contiguous", "exact")
BOUND_RULES = ("workload", "theory")
RING_SPEEDS = ("crossing", "placement")


@dataclass(frozen=True)
class GadgetParams:
    """Tunables; None means "derived from the workload" (docs/theory.md, parameters)."""

    admission: str = "deferred"  # "deferred" or "strict"
    L: float | None = None  # lowest utility per unit of resource a plan can earn
    U: float | None = None  # highest utility per unit of one resource
    zeta: float = 1.0  # usage share at which the price reaches U
    zeta_nic: float | None = None  # ... for NIC prices (None: zeta); the quantised rule of docs/theory.md section 6
    bounds: str = "workload"  # how L is derived: "theory" (condition A2, loose) or "workload" (docs/theory.md)
    nic_share: float = 0.5  # beta = nic_share x NIC bandwidth, reserved on each NIC a ring crosses
    restart_s: float | None = None  # checkpoint-restart cost a plan expects when a job moves (None: the world's, Nodes.restart_s)
    max_steps: int = 48  # plan-search steps; a longer horizon is planned in blocks of slots
    tail_utility: float = 0.02  # plans complete before the utility falls below this share of its maximum
    retry_every: int = 3  # deferred jobs are offered again every this many slots (or when resources free up)
    retry_backoff: int = 0  # ... doubling that after each failed re-offer, at most this many times
    max_plans_per_slot: int = 16
    bound_first: bool = True  # test a cheap payoff bound before each search (same decisions, faster)
    work_conserving: bool = True
    # the chosen plan (its worker count and embedding) starts as late as its payoff stays within
    # this share of the job's utility of the best; 0: off (docs/theory.md section 9: it leaves
    # the near slots to later arrivals, a large gain on overloaded traces, a small loss on some)
    late_share: float = 0.2
    # a planned job running early on lent GPUs (its plan's first placement, or one of the same
    # shape) gets its plan started there now when the ledger has room (new plans then do not
    # displace it)
    commit_early_runs: bool = True
    # a plan segment that starts now moves onto the servers its job already runs on when they
    # have the same shape and are free in the ledger for the segment (a restart saved;
    # CommitmentBook.stay_put). Off in the theorem's configuration: a moved reservation lowers
    # the prices where it leaves (docs/theory.md section 9)
    stay_put: bool = True
    # deferred admission: a job is admitted only by a plan that keeps at least this share of
    # what it could still earn running alone from now (0.5), and not once that is below
    # tail_utility of its maximum; 0: any paying plan (Gadget.too_late)
    on_time_share: float = 0.5
    # deferred admission: the first job with nothing left to earn that needs more than one GPU,
    # neither runs nor has a plan and has waited its time alone is planned at any payoff, one
    # at a time (a reservation against starvation behind jobs on lent GPUs: gadget/reserve.py)
    reserve_wide: bool = True
    displace: int = 4  # failed offers per decision that may take a longer job's near GPUs (displace.py)
    # ... and offers whose plan starts after this decision (the fairness objective sets it: a
    # short job's plan for the next slot boundary costs its slowdown most)
    displace_late: bool = False
    lend_lookahead: int = 4  # lend only GPUs that stay uncommitted for this many slots
    # ... or, for a job that ends sooner (restart included, its remaining work at the estimates'
    # pessimistic factor), GPUs that stay uncommitted until it ends: backfilling ahead of plans
    # that start within the lookahead (lending.py _backfill)
    backfill: bool = True
    # triage in lending: idle jobs that could no longer keep this share of their maximum
    # utility even run alone from now are lent GPUs after every job that still can, before those
    # past the tail (0: off, else above tail_utility; lending.py; the fairness objective sets 0).
    # Under overload a late job that keeps running makes the next one late too
    lend_triage_share: float = 0.5
    # ... and a job counts as too late only when it would be even with its estimated remaining
    # work scaled by this quantile of true / estimated work over the jobs finished so far (the
    # factor at most 1). Under noisy estimates an over-estimated job looked too late and was
    # given up wrongly; under exact ones every ratio is 1 and nothing changes (estimate_error.py)
    lend_triage_quantile: float = 0.1
    # when the finished jobs' ratios true / estimated work agree within this factor (their 10%
    # and 90% quantiles), the estimator has a consistent bias and every estimate is scaled by
    # their median (0: off; estimate_error.py, calibration.py). Wider ratios are noise, whose
    # median leans short (the short jobs finish first): no correction is taken from them
    calibrate_spread: float = 1.25
    top_up: bool = True  # lend idle GPUs to planned jobs too (on top of their plan) when it pays for the restarts
    top_up_gain: float = 0.1  # ... when it gains at least this share of the progress over the lookahead
    # a one-server plan that starts within its window's first pack_within steps moves to the
    # fullest server that hosts it, costing up to pack_slack x its utility more (0: off;
    # docs/theory.md section 9: packing later plans too loses utility under load)
    pack_slack: float = 100.0
    pack_within: int = 3
    # objectives (docs/objectives.md, energy): utility per second a busy GPU costs, and per second
    # a server costs while a plan is the first to put workers on it in a slot; added to GPU prices
    energy_cost_per_gpu_s: float = 0.0
    server_cost_per_s: float = 0.0
    # objectives (convergence): plan each job's work up to its estimated convergence point,
    # where the world then stops it (policies/gadget/objective_terms.py)
    stop_converged: bool = False
    # objectives (fairness): a job without a plan whose rho would pass this is planned whatever
    # its payoff (0: off; policies/gadget/objective_terms.py)
    rho_guard: float = 0.0
    # the per-job plan search: "contiguous" (trace mode: gap-free plans of one worker count on the
    # greedy embedding) or "exact" (every configuration in every slot, the theorem's subroutine;
    # for small instances: it enumerates per-server worker vectors and counts work in samples)
    subroutine: str = "contiguous"
    max_per_server: int | None = None  # the most workers a plan puts on one server (None: its GPUs)
    # several GPU types (docs/theory.md section 11; measured in docs/suite-history.md): a plan may also
    # run on one type and then on another (one change, charged the world's checkpoint-restart:
    # policies/gadget/type_switch.py), and a job running its plan on a slower type is lent idle
    # GPUs of a faster one when that pays for the restarts (policies/gadget/upgrade.py)
    type_switch: bool = True
    type_upgrade: bool = True
    # type_upgrade moves jobs on lent GPUs of a slow type too (no plan, or before it starts; upgrade.py)
    upgrade_lent: bool = True
    # ... and charges a job that starts now no restart to move (it pays one anywhere: gain.start_gain)
    upgrade_starts: bool = True
    # GPUs of the cluster that no one elastic job's plan or lent ring takes (the lane): the last
    # GPU speeds a job by about 1/N, while holding every GPU keeps each arrival waiting for the
    # job's whole run (docs/theory.md section 9); a job whose fewest workers need them gets them,
    # and a top-up may use them when it pays for its restarts
    lane_gpus: int = 1

    def __post_init__(self) -> None:
        for problem in self.problems():
            raise ValueError(problem)

    def problems(self) -> list[str]:
        """Every option with an impossible value, as one sentence each (empty: all valid)."""
        out = []

        def need(ok: bool, text: str) -> None:
            if not ok:
                out.append(text)

        need(self.admission in ADMISSIONS, f"admission must be one of {', '.join(ADMISSIONS)}, got {self.admission!r}")
        need(self.bounds in BOUND_RULES, f"bounds must be one of {', '.join(BOUND_RULES)}, got {self.bounds!r}")
        for name in ("L", "U"):
            v = getattr(self, name)
            need(v is None or _positive(v), f"{name} must be a positive number, got {v}")
        if _positive(self.L) and _positive(self.U):
            need(self.U > self.L, f"U must exceed L, got L={self.L}, U={self.U}")
        need(0 < self.zeta <= 1, f"zeta must lie in (0, 1], got {self.zeta}")
        need(self.zeta_nic is None or 0 < self.zeta_nic <= 1, f"zeta_nic must lie in (0, 1], got {self.zeta_nic}")
        need(self.subroutine in SUBROUTINES, f"subroutine must be one of {', '.join(SUBROUTINES)}, got {self.subroutine!r}")
        need(self.max_per_server is None or self.max_per_server >= 1,
             f"max_per_server must be at least 1, got {self.max_per_server}")
        need(0 < self.nic_share <= 1, f"nic_share must lie in (0, 1], got {self.nic_share}")
        need(self.restart_s is None or _non_negative(self.restart_s), f"restart_s must be >= 0, got {self.restart_s}")
        need(0 < self.tail_utility < 1, f"tail_utility must lie in (0, 1), got {self.tail_utility}")
        for name in ("max_steps", "retry_every", "max_plans_per_slot", "lend_lookahead"):
            v = getattr(self, name)
            need(v >= 1, f"{name} must be at least 1, got {v}")
        for name in ("retry_backoff", "pack_within", "displace", "lane_gpus"):
            v = getattr(self, name)
            need(v >= 0, f"{name} must be at least 0, got {v}")
        need(0 <= self.on_time_share < 1, f"on_time_share must lie in [0, 1), got {self.on_time_share}")
        need(self.lend_triage_share == 0 or self.tail_utility < self.lend_triage_share < 1,
             f"lend_triage_share must be 0 (off) or lie in (tail_utility, 1), got {self.lend_triage_share}")
        need(0 < self.lend_triage_quantile <= 1,
             f"lend_triage_quantile must lie in (0, 1], got {self.lend_triage_quantile}")
        need(self.calibrate_spread == 0 or (math.isfinite(self.calibrate_spread) and self.calibrate_spread >= 1),
             f"calibrate_spread must be 0 (off) or at least 1, got {self.calibrate_spread}")
        need(self.rho_guard == 0 or (math.isfinite(self.rho_guard) and self.rho_guard >= 1),
             f"rho_guard must be 0 (off) or at least 1, got {self.rho_guard}")
        for name in ("late_share", "top_up_gain", "pack_slack", "energy_cost_per_gpu_s",
                     "server_cost_per_s"):
            v = getattr(self, name)
            need(_non_negative(v), f"{name} must be a non-negative number, got {v}")
        return out

    def most_workers(self, job: Job, total_gpus: int) -> int:
        """The most workers GADGET gives ``job`` on a cluster of ``total_gpus``: its own most, but
        never the last ``lane_gpus`` of the cluster unless its fewest need them."""
        return min(job.max_workers, max(total_gpus - self.lane_gpus, job.min_workers))

    def menu(self, job: Job, total_gpus: int) -> list[int]:
        """The worker counts GADGET plans ``job`` with on a cluster of ``total_gpus``."""
        return worker_menu(job.min_workers, self.most_workers(job, total_gpus))

    def restart_for(self, nodes) -> float:
        """The restart cost a plan expects: the option, else the world's."""
        return self.restart_s if self.restart_s is not None else nodes.restart_s


@dataclass(frozen=True)
class OasisParams(GadgetParams):
    """OASiS' options: GADGET's, and how it times a ring of several workers that it plans."""

    # crossing: as if every worker sat on its own server with nic_share of its NIC (blind to
    # rings, it times the ring that a placement by price alone may give); placement: at the
    # speed of the GPUs it picked, as GADGET times its plans (docs/suite.md, "What the
    # embedding adds": the ablation)
    ring_speed: str = "crossing"

    def problems(self) -> list[str]:
        out = super().problems()
        if self.ring_speed not in RING_SPEEDS:
            out.append(f"ring_speed must be one of {', '.join(RING_SPEEDS)}, got {self.ring_speed!r}")
        return out


def _positive(v) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def _non_negative(v) -> bool:
    return math.isfinite(v) and v >= 0


def worker_menu(lo: int, hi: int) -> list[int]:
    """Worker counts a plan may use: powers of two in [lo, hi], plus both bounds."""
    if lo > hi:
        return []
    ws = {lo, hi}
    p = 1
    while p <= hi:
        if p >= lo:
            ws.add(p)
        p *= 2
    return sorted(ws)


def utility_horizon_s(job: Job, tail: float) -> float:
    """The JCT at which the job's utility has fallen to ``tail`` of its maximum (capped at 60 days)."""
    return jct_at_value_s(job, tail * float(job.utility.max_value))


def jct_at_value_s(job: Job, v: float) -> float:
    """The JCT at which the job's utility has fallen to ``v`` (capped at 60 days)."""
    u0 = float(job.utility.max_value)
    cap = 60 * 86400.0
    if u0 <= 0 or float(job.utility(cap)) > v:
        return cap
    inverse = getattr(job.utility, "jct_at_value", None)
    if inverse is not None:  # closed form (the sigmoid): no bisection at every arrival
        return min(cap, inverse(v))
    lo, hi = 0.0, cap
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float(job.utility(mid)) > v:
            lo = mid
        else:
            hi = mid
    return hi


def derive_bounds(p: GadgetParams, ring_aware: bool, jobs, cluster, speed=None,
                  slot_s: float = 300.0) -> tuple[float, float]:
    """(L, U) from the workload (``prepare``: the whole trace, before it runs; docs/theory.md
    section 9, parameters).

    U is a valid (A1) bound: the most utility per unit of ONE resource a plan can claim, a
    job's whole utility over the smallest share of one server's GPUs (one GPU) or NIC (the
    ring's share) it can take in one slot. L is not an (A2) bound in general: ``bounds=theory``
    takes the tail utility over the consolidated ring's demand for the whole utility horizon,
    ``bounds=workload`` (default) the value density of each job's fastest plan on its slowest
    GPU type; the least over the jobs, kept within [1e-12 U, U / 2]. Prices run from 0 on an
    idle server to U on a full one."""
    from ringsched.perfmodel.speed import SpeedModel

    speed = speed or SpeedModel(cluster)
    o = int(cluster.gpus.max())
    min_share = min(1.0 / o, p.nic_share) if ring_aware else 1.0 / o
    u_max = max(float(j.utility.max_value) for j in jobs)
    lo = []
    for j in jobs:
        w = min(j.max_workers, cluster.total_gpus)
        shape = consolidated_shape(w, o)
        per_slot = w / o + (p.nic_share * shape[1] if ring_aware and shape[1] > 1 else 0.0)
        if p.bounds == "theory":
            h = utility_horizon_s(j, p.tail_utility)
            lo.append(p.tail_utility * float(j.utility.max_value) / (per_slot * max(h / slot_s, 1.0)))
        else:  # "workload": the density of each job's own fastest plan, on its slowest GPU type
            # (a plan may take any type: L must hold over every type's plans, docs/theory.md s. 11)
            tput = min(speed.throughput_sps(j.model, j.local_bsz, shape, gpu=t) for t in cluster.gpu_types)
            t_iso = j.work_samples / tput
            lo.append(float(j.utility.max_value) / (per_slot * max(t_iso / slot_s, 1.0)))
    U = u_max / min_share
    L = min(max(min(lo), U * 1e-12), U / 2)
    return L, U
