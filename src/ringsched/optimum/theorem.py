"""The theorem's parameters of a discrete instance (docs/theory.md, sections 3, 5 and 6).

delta_max is the largest share of one resource any configuration takes; zeta = 1 - delta_max
for the "textbook" rule (the theorem as stated), the thresholds of section 6 for the
"quantised" rule, 1 for "one" (the trace-mode default, no guarantee); U and L are the tightest
values of the theorem's conditions on the plan set of the proof (first-completion plans of
positive utility):

* U = max over plans l and resources r with delta_l(r) > 0 of u_l / delta_l(r): for a
  configuration c, no plan containing c completes before a_j + n_c - 1 with
  n_c = 1 + ceil((V_j - g_c)^+ / g_max), so u_j(a_j + n_c - 1) / (smallest share of c) bounds
  u_l / delta_l(r) over the plans containing c (tight when such a plan exists);
* L = min over plans l of u_l / sum_r delta_l(r): for every completion slot T with
  u_j(T) > 0 a knapsack dynamic program gives the largest total demand of a first-completion
  plan completing at T (progress < V_j before its last slot), exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ringsched.optimum.instance import DiscreteJob, Instance
from ringsched.policies.gadget.prices import PriceFunction

ZETA_RULES = ("textbook", "quantised", "one")


@dataclass(frozen=True)
class TheoremParams:
    U: float
    L: float
    delta_max: float  # largest share of one resource (GPU or NIC) a configuration takes
    zeta_gpu: float  # the GPU price reaches U at this usage
    zeta_nic: float  # the NIC price reaches U at this usage
    theta: float
    bound: float  # the guaranteed ratio 1 / max(2 theta, 1 + theta) for beta = 1 (0: no guarantee)
    rule: str = "textbook"
    has_plans: bool = True

    @property
    def zeta(self) -> float:
        return min(self.zeta_gpu, self.zeta_nic)

    def guaranteed_ratio(self, beta: float = 1.0) -> float:
        return guaranteed_ratio(self.theta, beta) if self.bound > 0 else 0.0

    def prices(self) -> tuple[PriceFunction, PriceFunction]:
        return PriceFunction(self.L, self.U, self.zeta_gpu), PriceFunction(self.L, self.U, self.zeta_nic)


def guaranteed_ratio(theta: float, beta: float = 1.0, pack_slack: float = 0.0) -> float:
    """GADGET's utility / OPT is at least 1 / max((2 + eps) beta theta, 1 + (1 + eps) beta theta)
    with eps = ``pack_slack`` (docs/theory.md, section 5; eps = 0: 1 / max(2 beta theta, 1 + beta theta))."""
    if not math.isfinite(theta) or not math.isfinite(beta) or not math.isfinite(pack_slack):
        return 0.0
    bt = beta * theta
    return 1.0 / max((2.0 + pack_slack) * bt, 1.0 + (1.0 + pack_slack) * bt)


def _first_completion_max_demand(job: DiscreteJob, demand: np.ndarray, slots: int) -> np.ndarray:
    """(slots,) the largest total demand of a first-completion plan of ``job`` completing at the
    end of each slot (-inf where none exists): progress < V in the slots before the last one,
    at most one configuration per slot."""
    V, g = job.work, job.g
    out = np.full(slots, -np.inf)
    if not len(g):
        return out
    # best_last[q]: the heaviest configuration that completes from progress q (g_c >= V - q)
    r = V - np.arange(V)  # units still needed from q
    ok = g[None, :] >= r[:, None]
    best_last = np.where(ok, demand[None, :], -np.inf).max(axis=1)
    F = np.full(V, -np.inf)
    F[0] = 0.0
    for T in range(job.arrival, slots):
        out[T] = float(np.max(F + best_last))
        new = F.copy()
        for c in range(len(g)):
            p = int(g[c])
            if p < V:
                np.maximum(new[p:], F[:V - p] + demand[c], out=new[p:])
        F = new
    return out


def theorem_parameters(inst: Instance, rule: str = "textbook") -> TheoremParams:
    """U, L, the price thresholds zeta, theta and the guaranteed ratio of an instance.

    ``rule``: "textbook" is the theorem as stated (zeta = 1 - delta_max for every resource);
    "quantised" uses that usage comes in quanta (1/O_s of a GPU resource, nic_share of a NIC):
    a plan that does not fit resource r then finds z_r >= 1 - delta_max(r) + quantum(r), so the
    price may reach U only there (docs/theory.md, "Quantised demands"): a valid, tighter
    guarantee; "one" is the trace-mode default zeta = 1, for which the theorem gives no
    guarantee (bound 0)."""
    if rule not in ZETA_RULES:
        raise ValueError(f"rule must be one of {ZETA_RULES}, got {rule!r}")
    U, L = 0.0, np.inf
    for j in inst.jobs:
        if not j.configs:
            continue
        g, gmax = j.g, int(j.g.max())
        n_c = 1 + np.ceil(np.maximum(0, j.work - g) / gmax).astype(np.int64)
        T_c = j.arrival + n_c - 1
        ok = T_c < inst.slots
        if ok.any():
            u_c = np.where(ok, j.u[np.minimum(T_c, inst.slots - 1)], 0.0)
            U = max(U, float((u_c / inst.min_share(j)).max()))
        dmax = _first_completion_max_demand(j, inst.demand(j), inst.slots)
        pos = (j.u > 0) & np.isfinite(dmax) & (np.arange(inst.slots) >= j.arrival)
        if pos.any():
            L = min(L, float((j.u[pos] / dmax[pos]).min()))
    dm = inst.delta_max
    if not np.isfinite(L) or U <= 0:
        return TheoremParams(U=2.0, L=1.0, delta_max=dm, zeta_gpu=1.0, zeta_nic=1.0, theta=1.0, bound=1.0,
                             rule=rule, has_plans=False)
    U = max(U, L * (1 + 1e-9))  # a larger U keeps (A1); PriceFunction needs U > L
    # per resource type: the largest share and the usage from which a plan may not fit
    jobs = [j for j in inst.jobs if j.configs]
    dm_gpu = max(float((j.Y / inst.O).max()) for j in jobs)
    dm_nic = inst.nic_share if any(j.multi.any() for j in jobs) else 0.0
    if rule == "textbook":
        if dm >= 1:
            raise ValueError(f"delta_max = {dm} >= 1: the theorem needs every share of a resource below 1 (A3)")
        zg = zn = 1.0 - dm
    elif rule == "quantised":
        # GPU usage of server s is a multiple of 1/O_s and a share at most cap_s / O_s: a server a
        # configuration does not fit has more than O_s - cap_s GPUs in use
        zg = 1.0
        for s, o in enumerate(inst.O):
            cap_s = max(int(j.Y[:, s].max()) for j in jobs)
            if cap_s > 0:
                zg = min(zg, (int(o) - cap_s + 1) / int(o))
        # every NIC demand is nu = nic_share: a NIC a ring does not fit holds more than 1 - nu, and
        # its usage is a multiple of nu, so at least the next multiple of nu above 1 - nu
        nu = inst.nic_share
        zn = float(min(1.0, nu * (math.floor((1.0 - nu) / nu + 1e-9) + 1)))
    else:
        zg = zn = 1.0
    theta = 0.0
    for d, z in ((dm_gpu, zg), (dm_nic, zn)):
        if d > 0:
            theta = max(theta, PriceFunction(L, U, z).theta(d))
    bound = 0.0 if rule == "one" else guaranteed_ratio(theta)
    return TheoremParams(U=U, L=L, delta_max=dm, zeta_gpu=zg, zeta_nic=zn, theta=theta, bound=bound, rule=rule)


def min_cost_by_completion(cost: np.ndarray, units: np.ndarray, need: int) -> np.ndarray:
    """(steps,) the cheapest first-completion plan completing in each step (+inf if none):
    an independent dynamic program used to check ``best_plan`` and to measure beta."""
    n, m = cost.shape
    best = np.full(need, np.inf)
    best[0] = 0.0
    comp = np.full(n, np.inf)
    for i in range(n):
        new = best.copy()
        for o in range(m):
            c, p = cost[i, o], int(units[i, o])
            if not np.isfinite(c) or p <= 0:
                continue
            comp[i] = min(comp[i], float(best[max(0, need - p):].min()) + c)
            if p < need:
                np.minimum(new[p:], best[:need - p] + c, out=new[p:])
        best = new
    return comp
