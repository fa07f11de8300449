"""GADGET on a discrete instance: the algorithm of the theorem (docs/theory.md), run exactly.

Jobs are taken in arrival order (ties by id). At job j's arrival every resource
r = (server, slot, gpu|nic) has the price p_r = P(z_r) of its committed usage fraction z_r,
with P(z) = L((1 + U/L)^(z/zeta) - 1) (``PriceFunction``). For every slot t >= a_j the options
are the job's configurations that fit in the free GPUs and free NIC share of slot t (the
exact subroutine; the fast variant offers only the greedy embedding of each worker count of
the trace-mode menu); a configuration y costs

    sum_s (y_s / O_s) P(z_gpu[s, t])  +  [k > 1] sum_{s: y_s > 0} nic_share P(z_nic[s, t]).

``best_plan`` (the trace-mode policy's dynamic program) then gives the plan of largest
payoff u_j(T) - cost over completion slots T; the job is admitted iff the payoff is > 0
(strict admission), its usage is committed and the prices rise.

Parameters (``theorem_parameters``): delta_max is the largest share of one resource any
configuration takes; zeta = 1 - delta_max for the "textbook" rule (the theorem as stated),
the thresholds of docs/theory.md section 6 for the "quantised" rule, 1 for "one" (the trace-mode
default, no guarantee); U and L are the tightest values of the theorem's conditions on the plan
set of the proof (first-completion plans of positive utility, docs/theory.md):

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
import time
from dataclasses import dataclass, field

import numpy as np

from ringsched.optimum.instance import DiscreteJob, Instance
from ringsched.policies.gadget.embed import embed
from ringsched.policies.gadget.plan import best_contiguous, best_plan
from ringsched.policies.gadget.params import worker_menu
from ringsched.policies.gadget.prices import PriceFunction

NIC_TOL = 1e-9


# ------------------------------------------------------------------ theorem parameters
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


# ------------------------------------------------------------------ options at given prices
def exact_options(inst: Instance, job: DiscreteJob, used_gpu, used_nic, pg, pn) -> np.ndarray:
    """(steps, configs) cost of every configuration in every slot from the arrival on, +inf where
    it does not fit. ``pg``/``pn`` are the (servers, slots) prices of whole resources."""
    a = job.arrival
    O = inst.O[:, None]
    Y = job.Y
    occ = (Y > 0) & job.multi[:, None]  # NIC use
    cost = (Y / inst.O) @ pg[:, a:] + inst.nic_share * (occ @ pn[:, a:])
    free = O - used_gpu[:, a:]
    fit = np.all(Y[:, :, None] <= free[None], axis=1)
    nic_ok = used_nic[:, a:] + inst.nic_share <= 1.0 + NIC_TOL
    fit &= np.all(~occ[:, :, None] | nic_ok[None], axis=1)
    return np.where(fit, cost, np.inf).T


def menu(job: DiscreteJob, limit: int) -> list[int]:
    """The trace-mode worker-count menu: powers of two within the bounds, plus both bounds."""
    return worker_menu(job.wmin, min(job.wmax, limit))


def _embed_inputs(inst: Instance, job: DiscreteJob, used_gpu, used_nic, pg, pn):
    """What the greedy embedding sees from the job's arrival on: (servers, slots, free GPUs,
    GPU price per GPU, free NIC share, the ring's NIC price, configuration -> index)."""
    a = job.arrival
    free = np.minimum(inst.O[:, None] - used_gpu[:, a:], inst.max_per_server)
    return (inst.num_servers, inst.slots - a, free, pg[:, a:] / inst.O[:, None], 1.0 - used_nic[:, a:],
            inst.nic_share * pn[:, a:], {y: c for c, y in enumerate(job.configs)})


def fast_options(inst: Instance, job: DiscreteJob, used_gpu, used_nic, pg, pn,
                 exact_cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fast variant's options: for each menu worker count the configuration the greedy ring
    embedding (``embed.embed``) picks in each slot. Returns ((steps, menu) cost, (steps, menu)
    configuration index, -1 where there is none)."""
    S, n, free, gprice, bfree, bprice, index = _embed_inputs(inst, job, used_gpu, used_nic, pg, pn)
    ws = menu(job, int(np.minimum(inst.O, inst.max_per_server).sum()))
    cost = np.full((n, len(ws)), np.inf)
    cfg = np.full((n, len(ws)), -1, dtype=np.int64)
    for o, w in enumerate(ws):
        e = embed(w, free, gprice, bfree, bprice, inst.nic_share)
        for i in np.flatnonzero(e.ok):
            c = index.get(tuple(int(v) for v in e.counts(int(i), S)))
            if c is None or not np.isfinite(exact_cost[i, c]):
                continue  # a configuration without progress (not in the table)
            cfg[i, o] = c
            cost[i, o] = exact_cost[i, c]
    return cost, cfg


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


# ------------------------------------------------------------------ the run
@dataclass
class JobOutcome:
    id: int
    admitted: bool
    payoff: float  # best payoff at arrival (-inf when no plan fits)
    completion: int | None = None  # completion slot
    utility: float = 0.0
    cost: float = 0.0
    schedule: list[tuple[int, int]] = field(default_factory=list)  # (slot, configuration index)
    beta_eff: float | None = None  # fast variant: the beta this arrival needs (docs/theory.md)
    payoff_exact: float | None = None  # fast variant: the exact subroutine's best payoff, same prices


@dataclass
class GadgetRun:
    variant: str
    utility: float
    dual: float  # final dual objective sum_j mu_j + sum_r p_r (>= OPT for the exact variant)
    params: TheoremParams
    outcomes: list[JobOutcome]
    used_gpu: np.ndarray
    used_nic: np.ndarray
    wall_s: float = 0.0

    @property
    def admitted(self) -> list[int]:
        return [o.id for o in self.outcomes if o.admitted]

    @property
    def beta_eff(self) -> float:
        vals = [o.beta_eff for o in self.outcomes if o.beta_eff is not None]
        return max(vals) if vals else 1.0


def _utility_of_step(u: np.ndarray, arrival: int, n: int):
    """best_plan's utility(jct) with steps of length 1 starting at 0: time t in (i, i+1] is
    completion in step i, worth u_j at the end of slot arrival + i."""
    def f(t):
        idx = np.clip(np.ceil(np.asarray(t, dtype=float) - 1e-9).astype(np.int64) - 1, 0, n - 1)
        return u[arrival + idx]
    return f


VARIANTS = ("exact", "fast", "contiguous")


def _from_plan(ch, cfg_of):
    """(payoff, cost, completion step, [(step, configuration)]) of a ``best_plan`` choice."""
    if ch is None:
        return None
    return (float(ch.payoff), float(ch.cost), int(ch.step),
            [(i, cfg_of(i, o)) for i, o in enumerate(ch.options) if o >= 0])


def contiguous_choice(inst: Instance, job: DiscreteJob, used_gpu, used_nic, pg, pn, exact_cost, util):
    """The trace-mode search (``Gadget.search`` with ``plan.best_contiguous``, near_payoff = 0,
    no restart charge) on a discrete instance: for every worker count of the menu, the per-slot
    greedy embedding and, when it exists, one fixed embedding that stays free from the first
    slot that fits until the job would be done there; the plan runs without gaps from some slot
    until done. Returns (payoff, cost, completion step, [(step, configuration)]) or None."""
    S, n, free, gprice, bfree, bprice, index = _embed_inputs(inst, job, used_gpu, used_nic, pg, pn)
    steps = np.arange(n, dtype=float)
    best = None
    for w in menu(job, int(np.minimum(inst.O, inst.max_per_server).sum())):
        e = embed(w, free, gprice, bfree, bprice, inst.nic_share)
        cfg = np.full(n, -1, dtype=np.int64)
        for i in np.flatnonzero(e.ok):
            c = index.get(tuple(int(v) for v in e.counts(int(i), S)))
            if c is not None and np.isfinite(exact_cost[i, c]):
                cfg[i] = c
        cands = [cfg]
        ok = np.flatnonzero(cfg >= 0)
        if ok.size:
            s0 = int(ok[0])
            s1 = min(n, s0 + int(np.ceil(job.work / job.g[cfg[s0]])) + 1)
            one = embed(w, free[:, s0:s1].min(axis=1, keepdims=True), gprice[:, s0:s1].sum(axis=1, keepdims=True),
                        bfree[:, s0:s1].min(axis=1, keepdims=True), bprice[:, s0:s1].sum(axis=1, keepdims=True),
                        inst.nic_share)
            c = index.get(tuple(int(v) for v in one.counts(0, S))) if one.ok[0] else None
            if c is not None:
                fixed = np.full(n, -1, dtype=np.int64)
                fixed[s0:s1] = np.where(np.isfinite(exact_cost[s0:s1, c]), c, -1)
                cands.insert(0, fixed)
        for cf in cands:
            cost = np.where(cf >= 0, exact_cost[np.arange(n), np.maximum(cf, 0)], np.inf)
            prog = np.where(cf >= 0, job.g[np.maximum(cf, 0)], 0).astype(float)
            ch = best_contiguous(cost, prog, float(job.work), steps, 1.0, util, 0.0, 0.0)
            if ch is not None and (best is None or ch.payoff > best[0].payoff or
                                   (ch.payoff >= best[0].payoff and ch.finish_s < best[0].finish_s)):
                best = (ch, cf)
    if best is None:
        return None
    ch, cf = best
    return (float(ch.payoff), float(ch.cost), int(ch.end), [(i, int(cf[i])) for i in range(ch.start, ch.end + 1)])


def _pack(inst: Instance, job: DiscreteJob, sched, used_gpu, pg, budget: float):
    """Each one-server configuration of ``sched`` moved to the fullest server that hosts it with
    the same progress, while the extra cost stays within ``budget`` (the trace-mode
    ``pack_slack``, docs/theory.md section 5, packing). Returns (schedule, extra cost)."""
    O = inst.O
    Y = job.Y
    single = (Y > 0).sum(axis=1) == 1
    out, extra = [], 0.0
    for t, c in sched:
        if not single[c]:
            out.append((t, c))
            continue
        s = int(np.flatnonzero(Y[c])[0])
        w = int(Y[c, s])
        here = w / O[s] * pg[s, t]
        best = (-(used_gpu[s, t] + w) / O[s], 0.0, c)  # fullest after placing, then cheapest
        for c2 in np.flatnonzero(single & (Y.sum(axis=1) == w) & (job.g == job.g[c])):
            s2 = int(np.flatnonzero(Y[c2])[0])
            if used_gpu[s2, t] + w > O[s2]:
                continue
            more = w / O[s2] * pg[s2, t] - here
            if extra + more > budget + 1e-12:
                continue
            key = (-(used_gpu[s2, t] + w) / O[s2], more, int(c2))
            if key < best:
                best = key
        extra += best[1]
        out.append((t, int(best[2])))
    return out, extra


def run_gadget(inst: Instance, variant: str = "exact", params: TheoremParams | None = None, *,
               rule: str = "textbook", pack_slack: float = 0.0) -> GadgetRun:
    """GADGET with strict admission on ``inst``. ``variant``: "exact" (all fitting configurations,
    beta = 1); "fast" (per slot, the greedy embedding of each worker count of the menu, gaps and
    changes of size allowed); "contiguous" (the current trace-mode search: per worker count of
    the menu, plans without gaps, on the per-slot greedy embedding or on one fixed embedding,
    ``plan.best_contiguous``). The approximate variants also measure, at every arrival, the beta
    the proof would need against the exact subroutine at the same prices. ``pack_slack`` > 0
    moves each admitted plan's one-server configurations to the fullest servers, at an extra cost
    of at most ``pack_slack`` x its utility (``_pack``; the guarantee becomes
    ``guaranteed_ratio(theta, beta, pack_slack)``)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    t0 = time.perf_counter()
    params = params or theorem_parameters(inst, rule)
    price_g, price_n = params.prices()
    S, slots = inst.num_servers, inst.slots
    used_gpu = np.zeros((S, slots), dtype=np.int64)
    used_nic = np.zeros((S, slots))
    O = inst.O[:, None]
    outcomes: list[JobOutcome] = []
    mu_sum = 0.0
    total = 0.0
    for job in sorted(inst.jobs, key=lambda j: (j.arrival, j.id)):
        a, n = job.arrival, slots - job.arrival
        if not job.configs:
            outcomes.append(JobOutcome(job.id, False, -np.inf))
            continue
        pg = price_g(used_gpu / O)
        pn = price_n(used_nic)
        ex_cost = exact_options(inst, job, used_gpu, used_nic, pg, pn)
        ex_units = np.broadcast_to(job.g, ex_cost.shape)
        util = _utility_of_step(job.u, a, n)
        steps = np.arange(n, dtype=float)
        ex_choice = best_plan(ex_cost, ex_units, ex_units.astype(float), job.work, steps, 1.0, util, 0.0)
        ex_mc = min_cost_by_completion(ex_cost, ex_units, job.work)
        ex_best = float(np.max(job.u[a:] - ex_mc)) if np.isfinite(ex_mc).any() else -np.inf
        ex_pay = ex_choice.payoff if ex_choice is not None else -np.inf
        if not (ex_pay == ex_best or abs(ex_pay - ex_best) <= 1e-9 * max(1.0, abs(ex_best))):
            raise RuntimeError(f"job {job.id}: best_plan payoff {ex_pay} != dynamic program {ex_best}")
        out = JobOutcome(job.id, False, ex_pay)
        if variant == "exact":
            pick = _from_plan(ex_choice, lambda i, o: o)
        else:
            if variant == "fast":
                f_cost, f_cfg = fast_options(inst, job, used_gpu, used_nic, pg, pn, ex_cost)
                f_units = np.where(f_cfg >= 0, job.g[np.maximum(f_cfg, 0)], 0)
                ch = best_plan(f_cost, f_units, f_units.astype(float), job.work, steps, 1.0, util, 0.0)
                pick = _from_plan(ch, lambda i, o, f_cfg=f_cfg: int(f_cfg[i, o]))
            else:
                pick = contiguous_choice(inst, job, used_gpu, used_nic, pg, pn, ex_cost, util)
            out.payoff = pick[0] if pick is not None else -np.inf
            out.payoff_exact = ex_pay
            mu_f = max(0.0, out.payoff)
            need = job.u[a:] - mu_f  # beta * mincost_T must cover u_T - mu for every T
            bet = 1.0
            for i in np.flatnonzero((need > 1e-12) & np.isfinite(ex_mc)):
                bet = max(bet, need[i] / ex_mc[i] if ex_mc[i] > 0 else np.inf)
            out.beta_eff = float(bet)
        if pick is not None and pick[0] > 0:
            payoff, cost, step, rel = pick
            sched = [(a + i, c) for i, c in rel]
            if pack_slack > 0:
                sched, more = _pack(inst, job, sched, used_gpu, pg, pack_slack * float(job.u[a + step]))
                cost += more
            prog = sum(int(job.g[c]) for _, c in sched)
            before = prog - int(job.g[sched[-1][1]])
            if prog < job.work or before >= job.work or sched[-1][0] != a + step:
                raise RuntimeError(f"job {job.id}: plan is not a first-completion plan")
            for t, c in sched:
                y = job.Y[c]
                used_gpu[:, t] += y
                if job.multi[c]:
                    used_nic[y > 0, t] += inst.nic_share
            if np.any(used_gpu > O) or np.any(used_nic > 1 + 1e-6):
                raise RuntimeError(f"job {job.id}: committed plan exceeds capacity")
            T = a + step
            out.admitted, out.completion, out.utility = True, T, float(job.u[T])
            out.cost, out.schedule = float(cost), sched
            mu_sum += float(payoff)
            total += float(job.u[T])
        outcomes.append(out)
    dual = mu_sum + float(price_g(used_gpu / O).sum() + price_n(used_nic).sum())
    return GadgetRun(variant, total, dual, params, outcomes, used_gpu, used_nic, time.perf_counter() - t0)
