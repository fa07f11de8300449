"""The exact offline optimum of a discrete instance: a time-indexed integer program (HiGHS via
``scipy.optimize.milp``) that knows every arrival in advance.

Variables: binary x[j,t,c] (job j runs configuration c in slot t, only t >= a_j) and binary
z[j,T] (j completes at the end of slot T, only T >= a_j with u_j(T) > 0). Constraints:

* sum_T z[j,T] <= 1                                        (at most one completion)
* sum_c x[j,t,c] <= sum_{T >= t} z[j,T]                    (one configuration per slot, none
                                                            after the completion slot, none
                                                            for a job that does not complete)
* sum_{t,c} g_j(c) x[j,t,c] >= V_j sum_T z[j,T]            (the work is done; with the previous
                                                            constraint all of it by the chosen T)
* sum_{j,c} y_s(c) x[j,t,c] <= O_s                         (GPUs of server s in slot t)
* sum_{j,c} nic_share [k_c > 1][y_s(c) > 0] x[j,t,c] <= 1  (NIC of server s in slot t)

Objective: maximise sum_{j,T} u_j(T) z[j,T]. ``verify`` re-checks a solution independently.
``brute_force`` enumerates every combination of plans on tiny instances (the tests compare).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from ringsched.optimum.instance import Instance

TOL = 1e-6


@dataclass
class Optimum:
    utility: float  # best solution found (the optimum when status == "optimal")
    bound: float  # an upper bound on the optimum (the MILP's dual bound)
    gap: float  # relative MIP gap (0 when proven optimal)
    status: str  # "optimal" | "time_limit" | ...
    wall_s: float
    completion: dict[int, int] = field(default_factory=dict)  # job id -> completion slot
    schedule: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # job id -> (slot, config)

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"


def _columns(inst: Instance) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """The variables: x as (job index, slot, config) and z as (job index, completion slot), for
    the jobs with a configuration and a completion slot of positive utility."""
    cols_x: list[tuple[int, int, int]] = []
    cols_z: list[tuple[int, int]] = []
    for ji, j in enumerate(inst.jobs):
        if not j.configs:
            continue
        zT = [T for T in range(j.arrival, inst.slots) if j.u[T] > 0]
        if not zT:
            continue  # no completion slot with positive utility: the job cannot matter
        cols_z += [(ji, T) for T in zT]
        for t in range(j.arrival, inst.slots):
            for c in range(len(j.configs)):
                cols_x.append((ji, t, c))
    return cols_x, cols_z


class _Rows:
    """The constraint matrix, built row by row: (entries, lower bound, upper bound)."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, entries, lb: float, ub: float) -> None:
        r = len(self.lo)
        for col, v in entries:
            self.rows.append(r)
            self.cols.append(col)
            self.vals.append(v)
        self.lo.append(lb)
        self.hi.append(ub)

    def constraint(self, n: int) -> LinearConstraint:
        A = coo_array((self.vals, (self.rows, self.cols)), shape=(len(self.lo), n)).tocsr()
        return LinearConstraint(A, self.lo, self.hi)


def _job_rows(inst: Instance, cols_x, zidx: dict, m: _Rows) -> None:
    """Per job: one completion at most, configurations only up to it, and the work done."""
    zs_of: dict[int, list[tuple[int, int]]] = {}
    for (ji, T), col in zidx.items():
        zs_of.setdefault(ji, []).append((T, col))
    xs_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for col, (ji, t, c) in enumerate(cols_x):
        xs_of.setdefault((ji, t), []).append((c, col))
    for ji, zl in zs_of.items():
        j = inst.jobs[ji]
        m.add([(col, 1.0) for _, col in zl], -np.inf, 1.0)
        prog = []
        for t in range(j.arrival, inst.slots):
            xl = xs_of.get((ji, t), [])
            m.add([(col, 1.0) for _, col in xl] + [(col, -1.0) for T, col in zl if T >= t], -np.inf, 0.0)
            prog += [(col, float(j.g[c])) for c, col in xl]
        m.add(prog + [(col, -float(j.work)) for _, col in zl], 0.0, np.inf)


def _capacity_rows(inst: Instance, cols_x, m: _Rows) -> None:
    """Per server and slot: its GPUs, and its NIC shared by the rings that cross servers."""
    gpu_rows: dict[tuple[int, int], list] = {}
    nic_rows: dict[tuple[int, int], list] = {}
    for col, (ji, t, c) in enumerate(cols_x):
        j = inst.jobs[ji]
        y = j.Y[c]
        for s in np.flatnonzero(y):
            gpu_rows.setdefault((s, t), []).append((col, float(y[s])))
            if j.multi[c]:
                nic_rows.setdefault((s, t), []).append((col, inst.nic_share))
    for (s, t), e in gpu_rows.items():
        m.add(e, -np.inf, float(inst.O[s]))
    for (s, t), e in nic_rows.items():
        m.add(e, -np.inf, 1.0)


def solve(inst: Instance, *, time_limit_s: float = 60.0, rel_gap: float = 1e-9, verify_solution: bool = True) -> Optimum:
    t0 = time.perf_counter()
    cols_x, cols_z = _columns(inst)
    nx, nz = len(cols_x), len(cols_z)
    if nz == 0:
        return Optimum(0.0, 0.0, 0.0, "optimal", time.perf_counter() - t0)
    zidx = {key: nx + i for i, key in enumerate(cols_z)}
    m = _Rows()
    _job_rows(inst, cols_x, zidx, m)
    _capacity_rows(inst, cols_x, m)
    n = nx + nz
    obj = np.zeros(n)
    for (ji, T), col in zidx.items():
        obj[col] = -inst.jobs[ji].u[T]
    # HiGHS stops at an absolute gap of 1e-6 (not settable through scipy): scale the utilities
    # so that the largest is 1e6 and that gap is 1e-12 of it
    scale = 1e6 / max(1e-300, float(np.abs(obj).max()))
    obj *= scale
    res = milp(obj, constraints=m.constraint(n), integrality=np.ones(n), bounds=Bounds(0, 1),
               options={"time_limit": float(time_limit_s), "mip_rel_gap": rel_gap, "disp": False})
    wall = time.perf_counter() - t0
    if res.x is None:
        raise RuntimeError(f"HiGHS found no solution: {res.message}")
    opt = _optimum(inst, res, cols_x, zidx, scale, wall)
    if verify_solution:
        verify(inst, opt.completion, opt.schedule)
        if abs(opt.utility + float(res.fun) / scale) > 1e-6 * max(1.0, opt.utility):
            raise RuntimeError(f"objective {-res.fun / scale} != recomputed utility {opt.utility}")
    return opt


def _optimum(inst: Instance, res, cols_x, zidx: dict, scale: float, wall: float) -> Optimum:
    """The solution read back: completions, schedules, utility recomputed, bound and gap."""
    sol = np.round(res.x).astype(np.int64)
    completion, schedule = {}, {}
    for (ji, T), col in zidx.items():
        if sol[col]:
            completion[inst.jobs[ji].id] = T
    for col, (ji, t, c) in enumerate(cols_x):
        if sol[col]:
            schedule.setdefault(inst.jobs[ji].id, []).append((t, c))
    util = float(sum(inst.jobs[_pos(inst, jid)].u[T] for jid, T in completion.items()))
    status = "optimal" if res.status == 0 else ("time_limit" if res.status == 1 else f"status_{res.status}")
    dual_bound = getattr(res, "mip_dual_bound", None)
    bound = -float(dual_bound) / scale if dual_bound is not None and np.isfinite(dual_bound) else util
    gap = float(res.mip_gap) if getattr(res, "mip_gap", None) is not None and np.isfinite(res.mip_gap) else 0.0
    bound = max(bound, util)
    return Optimum(util, bound, gap, status, wall, completion, {k: sorted(v) for k, v in schedule.items()})


def _pos(inst: Instance, jid: int) -> int:
    for i, j in enumerate(inst.jobs):
        if j.id == jid:
            return i
    raise KeyError(jid)


def verify(inst: Instance, completion: dict[int, int], schedule: dict[int, list[tuple[int, int]]]) -> float:
    """Check a solution independently of the solver: arrivals, one configuration per slot, work
    done by the completion slot, nothing after it, GPU and NIC capacities. Returns its utility."""
    S, slots = inst.num_servers, inst.slots
    used_gpu = np.zeros((S, slots), dtype=np.int64)
    used_nic = np.zeros((S, slots))
    total = 0.0
    for jid, sched in schedule.items():
        if sched and jid not in completion:
            raise AssertionError(f"job {jid} runs but does not complete")
    for jid, T in completion.items():
        j = inst.jobs[_pos(inst, jid)]
        sched = schedule.get(jid, [])
        slots_used = [t for t, _ in sched]
        if len(set(slots_used)) != len(slots_used):
            raise AssertionError(f"job {jid}: two configurations in one slot")
        if any(t < j.arrival or t > T for t in slots_used):
            raise AssertionError(f"job {jid}: runs before its arrival or after its completion slot")
        if sum(int(j.g[c]) for _, c in sched) < j.work:
            raise AssertionError(f"job {jid}: work not done by slot {T}")
        for t, c in sched:
            y = j.Y[c]
            used_gpu[:, t] += y
            if j.multi[c]:
                used_nic[y > 0, t] += inst.nic_share
        total += float(j.u[T])
    if np.any(used_gpu > inst.O[:, None]):
        raise AssertionError("GPU capacity exceeded")
    if np.any(used_nic > 1.0 + TOL):
        raise AssertionError("NIC capacity exceeded")
    return total


# ------------------------------------------------------------------ brute force (tiny instances)
def job_plans(inst: Instance, job) -> list[tuple[int, tuple[tuple[int, int], ...]]]:
    """Every first-completion plan of a job with positive utility: (completion slot, ((slot, config), ...))."""
    out = []
    slots = inst.slots

    def rec(t, prog, sched):
        if t >= slots:
            return
        for c in range(-1, len(job.configs)):
            if c < 0:
                rec(t + 1, prog, sched)
                continue
            p = prog + int(job.g[c])
            s2 = sched + ((t, c),)
            if p >= job.work:
                if job.u[t] > 0:
                    out.append((t, s2))
            else:
                rec(t + 1, p, s2)

    rec(job.arrival, 0, ())
    return out


def brute_force(inst: Instance, max_plans: int = 200_000) -> float:
    """The optimum by depth-first enumeration of plan combinations (tiny instances only)."""
    plans = [job_plans(inst, j) for j in inst.jobs]
    if sum(len(p) for p in plans) > max_plans:
        raise ValueError("instance too large for brute force")
    S, slots = inst.num_servers, inst.slots
    used_gpu = np.zeros((S, slots), dtype=np.int64)
    used_nic = np.zeros((S, slots))
    O = inst.O[:, None]
    best = 0.0

    def dfs(k: int, val: float) -> None:
        nonlocal best
        if k == len(inst.jobs):
            best = max(best, val)
            return
        dfs(k + 1, val)
        j = inst.jobs[k]
        for T, sched in plans[k]:
            for t, c in sched:
                used_gpu[:, t] += j.Y[c]
                if j.multi[c]:
                    used_nic[j.Y[c] > 0, t] += inst.nic_share
            if not (np.any(used_gpu > O) or np.any(used_nic > 1 + TOL)):
                dfs(k + 1, val + float(j.u[T]))
            for t, c in sched:
                used_gpu[:, t] -= j.Y[c]
                if j.multi[c]:
                    used_nic[j.Y[c] > 0, t] -= inst.nic_share

    dfs(0, 0.0)
    return best
