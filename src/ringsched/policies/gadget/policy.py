"""GADGET: online primal-dual scheduling of ring-all-reduce jobs with greedy ring embedding.

The contract (design brief, section 4; theory in docs/theory.md):

1. every (server, slot) has a GPU price and a NIC price, exponential in the committed share;
2. when a job is offered, its cheapest plan (worker count and ring embedding for every slot up
   to a completion slot T) is found for every T at current prices, and the plan with the
   largest payoff u(T - a) - cost is taken (in trace mode started as late as it still pays
   nearly as much, ``late_share``: the near slots are left to later arrivals);
3. the embedding inside that search is the greedy ring embedding (``embed.py``);
4. a positive payoff admits the job: its plan is committed and prices rise (a one-server
   ring of a plan that starts soon first moves to the fullest server that hosts it, within a
   slack: ``pack_slack``, ``pack_within``, against fragmentation). Otherwise, in
   ``deferred`` admission (default) the job is offered again in later slots; in ``strict``
   admission (the textbook setting) it is rejected for good;
5. GPUs left idle in the current slot are lent to jobs without a commitment in it, then on
   top of planned jobs' placements when that pays for the restarts (``work_conserving``,
   ``top_up``), without touching any commitment.

A committed plan is never broken by GADGET: each slot it returns the committed placement of
every planned job, or a superset of it when idle GPUs are lent on top. Plans end early when a
job finishes early (its later reservations are released), and a job that falls behind its
plan (a restart cost, a failed server) gets a new plan for what is left.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from ringsched.embedding import consolidated, counts_to_placement
from ringsched.job import Job
from ringsched.perfmodel.speed import consolidated_shape
from ringsched.policies.base import JobState, Nodes, Policy
from ringsched.policies.gadget import kernels
from ringsched.policies.gadget.embed import StepEmbeddings, embed
from ringsched.policies.gadget.plan import choose, contiguous_payoffs, uniform_plans, uniform_row_payoffs
from ringsched.policies.gadget.prices import Ledger, PriceFunction
from ringsched.policies.registry import register


@dataclass(frozen=True)
class GadgetParams:
    """Tunables; None means "derived from the workload" (docs/theory.md, parameters)."""

    admission: str = "deferred"  # "deferred" or "strict"
    L: float | None = None  # lowest utility per unit of resource a plan can earn
    U: float | None = None  # highest utility per unit of one resource
    zeta: float = 1.0  # usage share at which the price reaches U
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
    near_payoff: float = 0.0  # plans within this share of the job's utility of the best count as ties: finish earliest
    # the chosen plan (its worker count and embedding) starts as late as its payoff stays within
    # this share of the job's utility of the best; 0: off (docs/theory.md section 9: it leaves
    # the near slots to later arrivals, a large gain on overloaded traces, a small loss on some)
    late_share: float = 0.2
    # a planned job running early on lent GPUs (its plan's first placement, or one of the same
    # shape) gets its plan started there now when the ledger has room (new plans then do not
    # displace it)
    commit_early_runs: bool = True
    lend_lookahead: int = 4  # lend only GPUs that stay uncommitted for this many slots
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

    def __post_init__(self) -> None:
        if self.admission not in ("deferred", "strict"):
            raise ValueError(f"admission must be 'deferred' or 'strict', got {self.admission!r}")
        if not 0 < self.nic_share <= 1:
            raise ValueError("nic_share must lie in (0, 1]")
        if not (0 <= self.late_share < math.inf):
            raise ValueError("late_share must be a non-negative number")
        if not (self.pack_slack >= 0 and math.isfinite(self.pack_slack)) or self.pack_within < 0:
            raise ValueError("pack_slack and pack_within must be non-negative (0: no packing)")


@dataclass
class PriceWindow:
    """What a plan search sees from one slot on, in steps of ``b`` slots: (servers, steps) free
    GPUs, price of one GPU, free NIC share, price of a ring's NIC share, and server costs."""

    b: int
    steps: int
    step_len_s: float
    starts_s: np.ndarray
    free: np.ndarray
    gp: np.ndarray
    bfree: np.ndarray
    bp: np.ndarray
    srv: np.ndarray | None


@dataclass
class Plan:
    """A committed plan: segments (first slot, end slot exclusive, placement), in order."""

    segments: list[tuple[int, int, tuple]]
    finish_s: float
    payoff: float
    cost: float

    @property
    def first_slot(self) -> int:
        return self.segments[0][0]

    @property
    def last_slot(self) -> int:
        return self.segments[-1][1] - 1

    @property
    def first_placement(self) -> tuple:
        return self.segments[0][2]

    def at(self, slot: int) -> tuple:
        for a, b, pl in self.segments:
            if a <= slot < b:
                return pl
            if slot < a:
                break
        return ()


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


def _nic_need(own: np.ndarray, counts: np.ndarray, base_multi: bool) -> tuple[np.ndarray, bool]:
    """Servers that need a NIC share they do not hold when a ring on ``own`` grows to
    ``counts``, and whether the grown ring crosses servers."""
    multi = bool((counts > 0).sum() > 1)
    need = (counts > 0) & (own == 0) if base_multi else (counts > 0)
    return need, multi


def _menu(job: Job, limit: int) -> list[int]:
    return worker_menu(job.min_workers, min(job.max_workers, limit))


def utility_horizon_s(job: Job, tail: float) -> float:
    """The JCT at which the job's utility has fallen to ``tail`` of its maximum (capped at 60 days)."""
    u0 = float(job.utility.max_value)
    cap = 60 * 86400.0
    if u0 <= 0 or float(job.utility(cap)) > tail * u0:
        return cap
    inverse = getattr(job.utility, "jct_at_value", None)
    if inverse is not None:  # closed form (the sigmoid): no bisection at every arrival
        return min(cap, inverse(tail * u0))
    lo, hi = 0.0, cap
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float(job.utility(mid)) > tail * u0:
            lo = mid
        else:
            hi = mid
    return hi


@register
class Gadget(Policy):
    name = "gadget"
    Params = GadgetParams  # the options of a ``gadget:key=value,...`` spec
    periodic = True
    rigid = False
    ring_aware = True

    def __init__(self, params: GadgetParams | None = None, **overrides):
        self.p = params or GadgetParams(**overrides)
        self.prices_g: PriceFunction | None = None
        self.prices_b: PriceFunction | None = None
        self.ledger: Ledger | None = None
        self.plans: dict[str, Plan] = {}
        self.counts: dict[str, list[np.ndarray]] = {}
        self.last_try: dict[str, int] = {}
        self.epoch = 0  # bumps whenever reservations are released
        self.tried_epoch: dict[str, int] = {}
        self.misses: dict[str, int] = {}  # failed re-offers in a row (the retry back-off)
        self.horizon: dict[str, tuple[float, float]] = {}  # (utility horizon s, samples/s alone)
        self._rates: dict[tuple, float] = {}
        self._early_fail: dict[str, tuple] = {}  # job -> (placement, its servers' _freed, up, blocking slot)
        self._freed: list[int] = []  # per server: ledger changes that freed capacity there
        self._unstarted: dict[str, Plan] = {}  # plans whose first slot may lie ahead (commit order)
        self._seq: dict[str, int] = {}  # each plan's place in commit order (the order of ``plans``)
        self._ends: list[tuple[int, int, str]] = []  # heap of (plan end slot, seq, job)
        self._alone: dict[str, tuple] = {}  # (samples/s at the widest consolidated size, arrival, index)
        self._placement_cache: dict[tuple, tuple] = {}  # ``_placement``
        self._speed_version = 0
        self.bound_skips = 0
        self.plans_made = 0
        self.rejected_payoff = 0

    # ------------------------------------------------------------ parameters
    def prepare(self, jobs, cluster, speed=None) -> None:
        """Price bounds from the workload's utilities and sizes (OASiS assumes such bounds known)."""
        if self.p.L is not None and self.p.U is not None:
            self._set_prices(self.p.L, self.p.U)
            return
        L, U = self.derive_bounds(jobs, cluster, speed)
        self._set_prices(self.p.L or L, self.p.U or U)

    def derive_bounds(self, jobs, cluster, speed=None, slot_s: float = 300.0) -> tuple[float, float]:
        """(L, U) per the theorem's conditions (docs/theory.md), from the workload.

        U (A1): the most utility per unit of ONE resource a plan can claim: a job's whole
        utility over the smallest share of one server's GPUs (one GPU) or NIC (the ring's share)
        it can take in one slot. L (A2): the least utility per unit of resource any plan in the
        search window earns: the tail utility over the largest demand (the widest allocation for
        the whole window). Prices run from 0 on an idle server to U on a full one."""
        from ringsched.perfmodel.speed import SpeedModel

        speed = speed or SpeedModel(cluster)
        o = int(cluster.gpus.max())
        min_share = min(1.0 / o, self.p.nic_share) if self.ring_aware else 1.0 / o
        u_max = max(float(j.utility.max_value) for j in jobs)
        lo = []
        for j in jobs:
            w = min(j.max_workers, cluster.total_gpus)
            shape = consolidated_shape(w, o)
            per_slot = w / o + (self.p.nic_share * shape[1] if self.ring_aware and shape[1] > 1 else 0.0)
            if self.p.bounds == "theory":
                h = utility_horizon_s(j, self.p.tail_utility)
                lo.append(self.p.tail_utility * float(j.utility.max_value) / (per_slot * max(h / slot_s, 1.0)))
            else:  # "workload": the density of each job's own fastest plan
                t_iso = j.work_samples / speed.throughput_sps(j.model, j.local_bsz, shape)
                lo.append(float(j.utility.max_value) / (per_slot * max(t_iso / slot_s, 1.0)))
        U = u_max / min_share
        L = min(max(min(lo), U * 1e-12), U / 2)
        return L, U

    def _set_prices(self, L: float, U: float) -> None:
        self.prices_g = PriceFunction(L, U, self.p.zeta)
        self.prices_b = PriceFunction(L, U, self.p.zeta)

    def _ensure(self, nodes: Nodes, jobs) -> None:
        if self.ledger is None:
            c = nodes.cluster
            self.ledger = Ledger(c.gpus, np.array([s.nic_Bps for s in c.servers]))
            self._freed = [0] * c.num_servers
        if self.prices_g is None:
            self.prepare([js.job if isinstance(js, JobState) else js for js in jobs], nodes.cluster, nodes.speed)

    # ------------------------------------------------------------ plan search
    def _restart_s(self, nodes: Nodes) -> float:
        return self.p.restart_s if self.p.restart_s is not None else nodes.restart_s

    def _beta_Bps(self, nodes: Nodes) -> float:
        return self.p.nic_share * nodes.cluster.servers[0].nic_Bps

    def _plan_rate(self, nodes: Nodes, job: Job, w: int, k: int, d: int) -> float:
        if not self.ring_aware and w > 1:
            k, d = min(w, nodes.cluster.num_servers), 1  # blind: every ring crosses servers
        shape = (w, k, d, 1)
        return nodes.speed.throughput_sps(job.model, job.local_bsz, shape, self._beta_Bps(nodes) if k > 1 else None)

    def _steps(self, nodes: Nodes, slot: int, horizon_end_s: float) -> tuple[int, int]:
        """(b, steps): the window from ``slot`` to ``horizon_end_s`` in at most max_steps steps of b slots."""
        n_slots = max(1, math.ceil((horizon_end_s - slot * nodes.slot_s) / nodes.slot_s))
        b = max(1, math.ceil(n_slots / self.p.max_steps))
        return b, math.ceil(n_slots / b)

    def window(self, nodes: Nodes, slot: int, horizon_end_s: float) -> PriceWindow:
        """Free resources and prices from absolute ``slot`` to ``horizon_end_s``, in steps."""
        c = nodes.cluster
        slot_s = nodes.slot_s
        now = slot * slot_s
        b, steps = self._steps(nodes, slot, horizon_end_s)
        used_g, used_b = self.ledger.window(slot, slot + steps * b)
        S = c.num_servers
        gpus = c.gpus[:, None]
        top, total, btop, btotal, any_b = kernels.window_stats(used_g, used_b, b, self.ledger.front, slot)
        free = gpus - top  # free in every slot of the step
        free[:, 0] = np.minimum(free[:, 0], nodes.capacity - used_g[:, 0])
        np.maximum(free, 0, out=free)
        # a step of b slots is priced at its mean usage (b x P(mean)): one exponential per step
        # instead of per slot keeps long windows cheap (it slightly under-prices uneven steps)
        mean_g = total / b if b > 1 else used_g.astype(float)
        gp = b * self.prices_g(mean_g / gpus) / gpus
        if self.ring_aware and any_b:
            bfree = 1.0 - btop
            bp = b * self.p.nic_share * self.prices_b(btotal / b)
        else:  # no NIC share committed in the window (or blind to rings): all free, price 0
            bfree = np.ones((S, steps))
            bp = np.zeros((S, steps))
        if self.p.energy_cost_per_gpu_s:
            gp = gp + self.p.energy_cost_per_gpu_s * b * slot_s
        srv = None
        if self.p.server_cost_per_s:  # slots in which the server has nothing committed
            srv = ((used_g == 0) * (self.p.server_cost_per_s * slot_s)).reshape(S, steps, b).sum(axis=2)
        step_len = b * slot_s
        return PriceWindow(b, steps, step_len, now + step_len * np.arange(steps), free, gp, bfree, bp, srv)

    def _max_rate(self, nodes: Nodes, job: Job, w: int) -> float:
        """The fastest any ``w``-worker plan can run (an upper bound over the shapes the search
        uses). In the ring model (docs/model.md) every parameter is non-negative and, for a
        given number k of servers, the step time grows with d, the most workers on a server:
        so the fastest shape on k servers has d = ceil(w / k). One server (k = 1, d = w) and
        every k from 2 to min(w, S) are tried (cached per model, batch and w)."""
        key = (job.model, job.local_bsz, w)
        r = self._rates.get(key)
        if r is None:
            c = nodes.cluster
            r = max((self._plan_rate(nodes, job, w, k, -(-w // k)) for k in range(2, min(w, c.num_servers) + 1)),
                    default=0.0)
            if w <= int(c.gpus.max()):
                r = max(r, self._plan_rate(nodes, job, w, 1, w))
            self._rates[key] = r
        return r

    def quick_bound(self, job: Job, remaining: float, nodes: Nodes, slot: int, horizon_end_s: float) -> float:
        """A looser upper bound on the search's payoff than ``payoff_bounds``, without a window
        (``quick_bounds`` for one job)."""
        return float(self.quick_bounds([(job, remaining, horizon_end_s)], nodes, slot)[0])

    def quick_bounds(self, offers, nodes: Nodes, slot: int) -> np.ndarray:
        """``quick_bound`` of several (job, remaining samples, horizon end) at once: the offers of
        one decision share the work. Offers made in between only raise prices, so bounds taken
        at the start of a decision stay upper bounds for all of its offers.

        A step's price of a GPU is b x P(mean usage of its server) / G (``window``); its lowest
        over servers, from the ledger's running usage sums, bounds every plan's cost per GPU
        (it ignores which servers have a free GPU, and rings and NICs). With the fastest rate
        (``_max_rate``) every plan of the search is matched as in ``payoff_bounds``. Most offers
        of a busy trace end here."""
        J = len(offers)
        out = np.full(J, -np.inf)
        m = self.p.max_steps
        rows, B, steps = [], np.ones(J, dtype=np.int64), np.zeros(J, dtype=np.int64)
        for i, (job, remaining, end_s) in enumerate(offers):
            B[i], steps[i] = self._steps(nodes, slot, end_s)
            for w in _menu(job, nodes.cluster.total_gpus):
                rows.append((i, w, self._max_rate(nodes, job, w)))
        if not rows:
            return out
        step_len = B * nodes.slot_s
        edges = np.minimum(np.arange(m + 1)[None, :], steps[:, None]) * B[:, None]  # (J, m + 1) slots
        Z = self.ledger.usage_prefix(slot, slot + int(edges[:, -1].max()))
        # P rises: the lowest price is that of the least used server (at the largest G, for clusters
        # with servers of different sizes), so one exponential per step; the usage is lowered
        # by 1e-6 so that rounding in the running sums cannot raise the bound's prices
        z = kernels.lowest_block_usage(Z, edges, B, 1e-6)  # (J, m)
        low = B[:, None] * self.prices_g(z) / float(nodes.cluster.gpus.max())
        if self.p.energy_cost_per_gpu_s:
            low = low + self.p.energy_cost_per_gpu_s * step_len[:, None]
        low[np.arange(m)[None, :] >= steps[:, None]] = np.inf  # beyond a job's window
        job_of = np.array([r[0] for r in rows])
        w = np.array([r[1] for r in rows], dtype=float)
        prog = np.array([r[2] for r in rows]) * step_len[job_of]
        rem = np.array([offers[i][1] for i in job_of])
        finish, cost = uniform_plans(w[:, None] * low[job_of], prog, rem, slot * nodes.slot_s, step_len[job_of])
        first = np.searchsorted(job_of, np.arange(J + 1))  # (rows are grouped by offer, in order)
        for i, (job, _, _) in enumerate(offers):
            a, z = first[i], first[i + 1]
            if z > a:
                pay = np.asarray(job.utility(finish[a:z] - job.arrival_s), dtype=float) - cost[a:z]
                out[i] = float(np.max(pay))  # (-inf where no plan fits: cost inf)
        return out

    def _window_if_it_can_pay(self, job: Job, remaining: float, nodes: Nodes, slot: int,
                              end_s: float, quick: float | None = None) -> tuple[PriceWindow, dict] | None:
        """The price window for a search with the bound of each worker count, or None when an
        upper bound on the payoff says that no plan pays (the cheap ``quick_bound`` first,
        unless given, then ``payoff_bounds``)."""
        tiny = 1e-9 * float(job.utility.max_value)  # (the margin covers rounding in the running sums)
        if quick is None:
            quick = self.quick_bound(job, remaining, nodes, slot, end_s)
        if quick < -tiny:
            return None
        win = self.window(nodes, slot, end_s)
        bounds = self.payoff_bounds(job, remaining, nodes, win)
        if not bounds.size or bounds.max() <= -tiny:
            return None
        return win, dict(zip(_menu(job, nodes.cluster.total_gpus), (bounds + tiny).tolist()))

    def payoff_bounds(self, job: Job, remaining: float, nodes: Nodes, win: PriceWindow) -> np.ndarray:
        """Per worker count of the job's menu, an upper bound on the payoff of the search's plans
        with that count in ``win``, many times cheaper than the search.

        It relaxes the search: each step's cost is that of the w cheapest free GPUs anywhere
        (no ring, no NIC price; every embedding the search can pick costs at least that) and its
        progress is the fastest shape's (``_max_rate``). Every plan of the search is then matched
        by a relaxed plan that starts in the same step, finishes no later and costs no more.
        A job whose bounds are not positive is not searched (its offer fails as the search
        would have), and the search skips worker counts that cannot beat its best plan."""
        menu = _menu(job, nodes.cluster.total_gpus)
        if not menu:
            return np.zeros(0)
        w = np.array(menu)
        rates = np.array([self._max_rate(nodes, job, x) for x in menu]) * win.step_len_s
        total = win.free.sum(axis=0)

        def value(cost):
            return uniform_row_payoffs(cost, rates, remaining, float(win.starts_s[0]), win.step_len_s,
                                       job.utility, job.arrival_s)

        # first the looser bound (every GPU at the step's lowest price): no sort when it decides
        low = np.where(win.free > 0, win.gp, np.inf).min(axis=0)
        fits = total[None, :] >= w[:, None]
        top = value(np.where(fits, w[:, None] * low[None, :], np.inf))
        if top.max() <= 0 or menu == [1]:  # (for one worker both bounds are the same)
            return top
        order = np.argsort(win.gp, axis=0, kind="stable")  # (servers, steps): cheapest first
        fs = np.take_along_axis(win.free, order, axis=0)
        ps = np.take_along_axis(win.gp, order, axis=0)
        cf = np.cumsum(fs, axis=0)
        cc = np.cumsum(fs * ps, axis=0)
        # the w cheapest free GPUs of each step: up to the server that completes w GPUs
        j = np.minimum((cf[None, :, :] < w[:, None, None]).sum(axis=1), cf.shape[0] - 1)  # (menu, steps)
        cols = np.arange(win.steps)[None, :]
        before_f = np.where(j > 0, cf[j - 1, cols], 0)
        before_c = np.where(j > 0, cc[j - 1, cols], 0.0)
        return value(np.where(fits, before_c + (w[:, None] - before_f) * ps[j, cols], np.inf))

    def search(self, job: Job, remaining: float, nodes: Nodes, slot: int, *, horizon_end_s: float,
               current: tuple = (), ran_before: bool = False, win: PriceWindow | None = None,
               w_bounds: dict | None = None) -> Plan | None:
        """The best plan for ``remaining`` samples of ``job`` starting at absolute ``slot``.

        Trace mode searches, for every worker count of the job's menu, every plan that runs
        without gaps from some step until done (``plan.contiguous_payoffs``, then ``plan.choose``);
        ``current`` is where the job runs now (kept while it fits: no restart), ``ran_before``
        charges a restart.
        ``w_bounds`` (upper bounds on the payoff per worker count, ``payoff_bounds``) asks only
        for a plan that pays: counts whose bound is negative, or below the best plan found so
        far, are skipped, and None may come back where every plan has a payoff of at most 0."""
        c = nodes.cluster
        S = c.num_servers
        if win is None:
            win = self.window(nodes, slot, horizon_end_s)
        b, steps, step_len = win.b, win.steps, win.step_len_s
        free, gp, bfree, bp, srv = win.free, win.gp, win.bfree, win.bp, win.srv
        menu = _menu(job, c.total_gpus)
        if not menu:
            return None
        starts = win.starts_s
        best = None
        gp_all = gp
        prune = w_bounds is not None and self.p.near_payoff == 0  # (ties within near_payoff need every count)
        for w in menu:
            if prune and (w_bounds[w] < 0 or (best is not None and w_bounds[w] < best[0].payoff)):
                continue  # no plan with w workers pays, or beats the best one found
            # an empty server's cost, shared by the (at most one server's worth of) workers put there
            gp = gp_all if srv is None else gp_all + srv / min(w, int(c.gpus.max()))
            e = embed(w, free, gp, bfree, bp, self.p.nic_share, ring_aware=self.ring_aware)
            if e.order is None and e.single is not None:  # one server in every step: one shape
                prog = np.full(steps, self._plan_rate(nodes, job, w, 1, w) * step_len)
            else:
                prog = np.zeros(steps)
                kd = e.k * 1000 + e.d
                for code in np.unique(kd[e.ok]):
                    rate = self._plan_rate(nodes, job, w, int(code // 1000), int(code % 1000))
                    prog[kd == code] = rate * step_len
            if current and len(current) == w:
                # staying where it runs is free of a restart: use it while it fits
                cc = np.bincount(np.asarray(current), minlength=S)
                fits = np.all(cc[:, None] <= free, axis=0)
                if self.ring_aware and (cc > 0).sum() > 1:
                    fits &= np.all(bfree[cc > 0] >= self.p.nic_share - 1e-12, axis=0)
                first = np.flatnonzero(~fits)
                stay = steps if first.size == 0 else int(first[0])
                if stay:
                    sh = nodes.speed.shape(current)
                    rate = self._plan_rate(nodes, job, w, sh[1], sh[2])
                    e.cost[:stay] = (cc[:, None] * gp[:, :stay]).sum(axis=0) + \
                        ((cc > 0)[:, None] * bp[:, :stay]).sum(axis=0) * (sh[1] > 1)
                    e.ok[:stay] = True
                    prog[:stay] = rate * step_len
                    e.head = (stay, cc)
            elif ran_before:
                prog[0] = max(0.0, prog[0] - self._restart_s(nodes) * prog[0] / step_len)
            near = self.p.near_payoff * float(job.utility.max_value)
            cands = [e]
            fixed = self._fixed_embedding(w, e, prog, remaining, free, gp, bfree, bp, nodes, job, step_len)
            if fixed is not None:
                cands.insert(0, fixed)  # one placement for the whole run: no migrations
            for cand in cands:
                pays = contiguous_payoffs(cand.cost, prog if cand is e else cand.progress, remaining, starts,
                                          step_len, job.utility, job.arrival_s)
                ch = choose(pays, near)
                if ch is not None and (best is None or ch.payoff > best[0].payoff + near or
                                       (ch.payoff >= best[0].payoff - near and ch.finish_s < best[0].finish_s)):
                    best = (ch, cand, gp, pays)
        if best is None:
            return None
        ch, e, gp, pays = best
        if self.p.late_share > 0:  # the same worker count and embedding, started as late as it still pays as much
            floor = ch.payoff - self.p.late_share * float(job.utility.max_value)
            if ch.payoff > 0:  # (admission is still decided by a positive payoff)
                floor = max(floor, 1e-9 * float(job.utility.max_value))
            ch = choose(pays, floor=floor) or ch
        if self.ring_aware and self.p.pack_slack > 0 and not current:  # keeping servers whole is for rings
            e = self._packed(ch, e, free, gp, float(job.utility(ch.finish_s - job.arrival_s)))
        if e.constant:  # one placement throughout: one segment
            return Plan([(slot + ch.start * b, slot + (ch.end + 1) * b, counts_to_placement(e.fixed))],
                        ch.finish_s, ch.payoff, ch.cost)
        segments: list[tuple[int, int, tuple]] = []
        prev = None
        for i in range(ch.start, ch.end + 1):
            counts = e.counts(i, S)
            # keep the previous step's servers when they are free here too (saves a restart)
            if prev is not None and np.all(prev <= free[:, i]) and \
                    (not self.ring_aware or (prev > 0).sum() == 1 or np.all(bfree[prev > 0, i] >= self.p.nic_share - 1e-12)):
                counts = prev
            prev = counts
            pl = counts_to_placement(counts)
            a, z = slot + i * b, slot + (i + 1) * b
            if segments and segments[-1][2] == pl and segments[-1][1] == a:
                segments[-1] = (segments[-1][0], z, pl)
            else:
                segments.append((a, z, pl))
        return Plan(segments, ch.finish_s, ch.payoff, ch.cost)

    def _packed(self, ch, e, free, gp, u: float):
        """The plan's ring on one fixed server, the fullest that hosts it for the whole plan, when
        that costs at most ``pack_slack`` x the plan's utility more than the cheapest embedding.

        Exponential prices spread one-server rings over the emptiest servers, which leaves no
        whole server for the wide rings that need one (fragmentation); packing small rings keeps
        servers whole. The slack enters the guarantee as a factor (docs/theory.md, packing).
        Only a plan that starts within its window's first ``pack_within`` steps is packed: packing
        plans that start later too cost 1-5% of the utility under load (docs/theory.md, section 9)."""
        a, z = ch.start, ch.end + 1
        if a >= self.p.pack_within or not np.all(e.k[a:z] == 1) or not np.all(e.ok[a:z]):
            return e
        w = e.w
        room = free[:, a:z].min(axis=1)
        cost = w * gp[:, a:z].sum(axis=1)
        ok = (room >= w) & (cost <= ch.cost + self.p.pack_slack * u)
        if not ok.any():
            return e
        cand = np.flatnonzero(ok)
        s = int(cand[np.lexsort((cost[cand], room[cand]))[0]])  # tightest fit, then cheapest
        counts = np.zeros(free.shape[0], dtype=np.int64)
        counts[s] = w
        return StepEmbeddings(w, e.cost, e.k, e.d, e.ok, fixed=counts)

    def _fixed_embedding(self, w, e, prog, remaining, free, gp, bfree, bp, nodes, job, step_len):
        """One embedding that stays free from the first step that fits until the job would be
        done there (estimated at that step's speed): the plan then never migrates."""
        s0, s1, fmin, bmin, gsum, bsum = kernels.fixed_window(e.ok, prog, float(remaining), free, bfree, gp, bp)
        if s0 < 0:
            return None
        fits, counts = kernels.embed_one(w, fmin, gsum, bmin, bsum, self.p.nic_share, self.ring_aware)
        if not fits:
            return None
        sh = nodes.speed.shape(counts_to_placement(counts))
        rate = self._plan_rate(nodes, job, w, sh[1], sh[2])
        n = free.shape[1]
        cost = kernels.fixed_cost(counts, gp, bp, s0, s1, sh[1] > 1)
        ok = np.isfinite(cost)
        fx = StepEmbeddings(w, cost, np.full(n, sh[1]), np.full(n, sh[2]), ok, fixed=counts)
        fx.progress = np.where(ok, rate * step_len, 0.0)
        return fx

    def _commit(self, jid: str, plan: Plan) -> None:
        self.plans[jid] = plan
        self._unstarted[jid] = plan
        self._seq[jid] = seq = self.plans_made
        heapq.heappush(self._ends, (plan.segments[-1][1], seq, jid))  # (segment ends never move)
        for a, z, pl in plan.segments:
            counts, bw = self._usage(pl)
            self.ledger.add_range(a, z, counts, bw)
        self.plans_made += 1

    def _usage(self, pl: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(GPUs per server, NIC share per server) a placement reserves; shared: read only."""
        return self._placement(pl)[4:]

    def _release(self, jid: str, from_slot: int) -> None:
        plan = self.plans.pop(jid, None)
        if plan is None:
            return
        self._unstarted.pop(jid, None)
        del self._seq[jid]
        for a, z, pl in plan.segments:
            if z > from_slot:
                self._free(max(a, from_slot), z, pl)
        self.epoch += 1
        self._early_fail.pop(jid, None)

    def _horizon_end(self, js: JobState, nodes: Nodes) -> float:
        hr = self.horizon.get(js.job_id)
        if hr is None:  # (the utility's horizon, and the speed alone on the widest ring: fixed per job)
            hr = self.horizon[js.job_id] = (
                utility_horizon_s(js.job, self.p.tail_utility),
                max(nodes.throughput_sps(js, min(js.job.max_workers, nodes.cluster.total_gpus)), 1e-12))
        end = js.job.arrival_s + hr[0]
        # a job past its horizon (or behind its plan) still gets a window to finish in
        alone = js.remaining_at(nodes.now_s) / hr[1]
        return max(end, nodes.now_s + 4 * alone + 2 * nodes.slot_s)

    # ------------------------------------------------------------ interface
    def admit(self, job: Job, nodes: Nodes) -> str | None:
        reason = super().admit(job, nodes)
        if reason or self.p.admission != "strict":
            return reason
        self._ensure(nodes, [job])
        slot = round(nodes.now_s / nodes.slot_s)
        h = utility_horizon_s(job, self.p.tail_utility)
        plan = self.search(job, job.work_samples, nodes, slot, horizon_end_s=job.arrival_s + h)
        if plan is None or plan.payoff <= 0:
            self.rejected_payoff += 1
            return "no plan with positive payoff at arrival (strict admission)"
        self._commit(job.job_id, plan)
        return None

    def optimize(self, jobs, nodes, previous_allocations):
        self._ensure(nodes, jobs)
        if getattr(nodes.speed, "version", 0) != self._speed_version:  # refitted: cached speeds are stale
            self._speed_version = getattr(nodes.speed, "version", 0)
            self._rates.clear()
            self._alone.clear()
            self.horizon.clear()
        slot = round(nodes.now_s / nodes.slot_s)
        active = {js.job_id: js for js in jobs}
        seq = self._seq
        for jid in sorted(self.plans.keys() - active.keys(), key=seq.__getitem__):  # (in commit order)
            self._release(jid, slot)  # finished early: free its later reservations
        behind: set[str] = set()
        ends = self._ends
        over = []  # plans over (from the heap of plan ends: stale entries are dropped)
        while ends and ends[0][0] <= slot:
            _, k, jid = heapq.heappop(ends)
            if jid in self.plans and seq[jid] == k:
                over.append((k, jid))
        over = [jid for _, jid in sorted(over)]
        if not nodes.up.all():  # and plans that run on a failed server now
            done = set(over)
            over = [jid for jid, plan in self.plans.items() if jid in done or
                    ((pl := plan.at(slot)) and not nodes.up[list(set(pl))].all())]
        for jid in over:
            self._release(jid, slot)  # plan over but work left, or a failed server
            behind.add(jid)
        out: dict[str, tuple] = {}
        # offer jobs without a plan: those behind first, then new ones, then deferred ones, each by
        # arrival. A deferred job is offered again every retry_every slots, doubling the wait after
        # each offer that failed (up to 2^retry_backoff), and at most once a slot when reservations
        # were released: re-offers rarely succeed and were most of GADGET's time on long traces.
        cap = self.p.max_plans_per_slot
        groups: tuple[list, list, list, list] = ([], [], [], [])  # behind (new, tried), new, tried
        for js in jobs:
            jid = js.job_id
            if jid not in self.plans:
                groups[(0 if jid in behind else 2) + (jid in self.last_try)].append(js)
        by_arrival = (lambda js: (js.job.arrival_s, js.index))  # (a total order)
        first = sorted(groups[0], key=by_arrival) + sorted(groups[1], key=by_arrival) + sorted(groups[2], key=by_arrival)
        ready = [js for js in groups[3] if self._retry_due(js.job_id, slot)]
        offers = []
        for js in first[:cap] + heapq.nsmallest(max(0, cap - len(first)), ready, key=by_arrival):
            must = js.job_id in behind or (js.first_start_s is not None and self.p.admission == "strict")
            offers.append((js, self.last_try.get(js.job_id), must))
        quick = {}
        if self.p.bound_first:  # the cheap bounds of the decision's offers, at once
            free_to_skip = [js for js, _, must in offers if not must]
            vals = self.quick_bounds([(js.job, js.remaining_at(nodes.now_s), self._horizon_end(js, nodes))
                                      for js in free_to_skip], nodes, slot)
            quick = {js.job_id: float(v) for js, v in zip(free_to_skip, vals)}
        for js, last, must in offers:
            jid = js.job_id
            self.last_try[jid] = slot
            self.tried_epoch[jid] = self.epoch
            plan = self.offer(js, nodes, slot, previous_allocations.get(jid, ()), must=must, quick=quick.get(jid))
            if plan is not None and (plan.payoff > 0 or must):
                self._commit(jid, plan)
                self.misses.pop(jid, None)
            elif last is not None:
                self.misses[jid] = self.misses.get(jid, 0) + 1
        running_plan = []  # jobs running their plan in this slot below their most workers (a top-up may grow them)
        for jid, plan in self.plans.items():
            if plan.segments[0][0] > slot:
                continue  # not started
            pl = plan.at(slot)
            if pl:
                prev = previous_allocations.get(jid, ())
                if prev and prev != pl and len(prev) == len(pl):
                    pl = self._stay_put(plan, slot, prev, nodes)
                out[jid] = pl
                js = active[jid]
                if len(pl) < js.job.max_workers:
                    running_plan.append(js)
        if self.p.work_conserving:
            self._lend(jobs, nodes, slot, out, previous_allocations, running_plan)
            if self.p.commit_early_runs:
                self._commit_early_runs(out, slot, nodes)
        return out

    def _commit_early_runs(self, out: dict, slot: int, nodes: Nodes) -> None:
        """A planned job that runs early on lent GPUs, on its plan's first placement or on one of
        the same shape, gets its first segment moved there and started now when the ledger has
        room for it: the slots until its plan starts are committed too. Lent GPUs are invisible
        to prices, so new plans would otherwise land there and move the job (with late starts, a
        long job restarted dozens of times). A check that failed is not repeated until the
        ledger frees something on the servers it would take or the slot that blocked it has
        passed (commits only fill it). Only plans that have not started are looked at."""
        cap = nodes.capacity
        up = nodes.up.tobytes()
        freed = self._freed
        for jid, plan in list(self._unstarted.items()):
            a, z, pl = plan.segments[0]
            if a <= slot:  # started (its first slot only ever moves earlier)
                del self._unstarted[jid]
                continue
            now = out.get(jid)
            if not now:
                continue
            same = now == pl
            if not same and (len(now) != len(pl) or nodes.speed.shape(now) != nodes.speed.shape(pl)):
                continue
            # only freed capacity on the servers it would take can make a failed check pass
            mark = sum(freed[s] for s, _ in self._sparse(now)[3])
            failed = self._early_fail.get(jid)
            if failed is not None and failed[:3] == (now, mark, up) and slot <= failed[3]:
                continue
            new = self._usage(now)
            old = None if same else self._usage(pl)
            # the slots it would newly take: until its plan starts (same placement), or, moving,
            # until its first segment ends, less its own reservation there
            block = self.ledger.first_overflow(slot, a if same else z, *new, cap, None if same else (a, *old))
            if block is not None:
                self._early_fail[jid] = (now, mark, up, block)
                continue
            if not same:
                self._move_segment(plan, 0, now)
            self.ledger.add_range(slot, a, *new)
            plan.segments[0] = (slot, z, now)
            del self._unstarted[jid]
            self._early_fail.pop(jid, None)

    def _retry_due(self, jid: str, slot: int) -> bool:
        """Whether a deferred job is offered again now: every retry_every slots (doubled after each
        failed offer, up to 2^retry_backoff times), and at most once a slot after a release."""
        last = self.last_try[jid]
        wait = self.p.retry_every << min(self.misses.get(jid, 0), self.p.retry_backoff)
        return not (slot - last < wait and (self.tried_epoch.get(jid) == self.epoch or slot == last))

    def offer(self, js: JobState, nodes: Nodes, slot: int, current: tuple = (), *, must: bool = False,
              quick: float | None = None) -> Plan | None:
        """One offer: the job's best plan at current prices, or None when none exists or, unless
        the plan is taken whatever its payoff (``must``), when an upper bound on the payoff shows
        that none can pay (``bound_first``: the search is skipped, with the same outcome).
        ``quick`` is the job's ``quick_bound`` when the decision computed it already."""
        remaining = js.remaining_at(nodes.now_s)
        end_s = self._horizon_end(js, nodes)
        win = bounds = None
        if not must and self.p.bound_first:
            found = self._window_if_it_can_pay(js.job, remaining, nodes, slot, end_s, quick)
            if found is None:
                self.bound_skips += 1
                return None
            win, bounds = found
        return self.search(js.job, remaining, nodes, slot, horizon_end_s=end_s, win=win, current=current,
                           ran_before=js.first_start_s is not None, w_bounds=bounds)

    def _stay_put(self, plan: Plan, slot: int, prev: tuple, nodes: Nodes) -> tuple:
        """A plan segment that starts now moves to where its job already runs (on lent GPUs,
        or its previous segment's servers) when that placement has the same shape and is free
        in the ledger for the whole segment: the job keeps running instead of restarting.
        Only the job's own reservation moves; the placement the job gets is returned."""
        i = next((k for k, (a, _, _) in enumerate(plan.segments) if a == slot), None)
        if i is None:
            return plan.at(slot)
        a, z, pl = plan.segments[i]
        if nodes.speed.shape(prev) != nodes.speed.shape(pl):
            return pl
        old = self._usage(pl)
        new = self._usage(prev)
        if self.ledger.first_overflow(a, z, *new, nodes.capacity, (a, *old)) is None:
            self._move_segment(plan, i, prev)
            return prev
        return pl

    def _move_segment(self, plan: Plan, i: int, pl: tuple) -> None:
        """Segment i of a committed plan runs on ``pl`` instead; only the job's own reservation
        moves, and what it left is free again."""
        a, z, old = plan.segments[i]
        self._free(a, z, old)
        self.ledger.add_range(a, z, *self._usage(pl))
        plan.segments[i] = (a, z, pl)

    def _free(self, a: int, z: int, pl: tuple) -> None:
        """Remove placement ``pl``'s reservation from slots [a, z); its servers count a release
        (``_freed``: failed early-run checks there may pass now)."""
        self.ledger.add_range(a, z, *self._usage(pl), sign=-1)
        for s, _ in self._sparse(pl)[3]:
            self._freed[s] += 1

    def wakeup_s(self, now_s: float, slot_s: float) -> float | None:
        """The next slot in which a committed plan runs (the simulator must not stop before)."""
        nxt = [max(plan.first_slot, int(now_s // slot_s) + 1) for plan in self.plans.values()
               if plan.last_slot * slot_s > now_s]
        return min(nxt) * slot_s if nxt else None

    def _lend(self, jobs, nodes: Nodes, slot: int, out: dict, previous, running_plan) -> None:
        """Idle GPUs of this slot go to jobs with nothing committed in it, shortest first; what
        is still idle then tops up planned jobs (``_top_up``)."""
        k = max(1, self.p.lend_lookahead)
        used_g, used_b = self.ledger.window(slot, slot + k)
        now_free = np.maximum(nodes.capacity - used_g[:, 0], 0)  # this slot only
        now_bfree = 1.0 - used_b[:, 0]
        free = np.maximum(nodes.capacity - used_g.max(axis=1), 0)  # stays free a while
        bfree = 1.0 - used_b.max(axis=1)
        if now_free.sum() == 0:
            return
        idle = [js for js in jobs if js.job_id not in out]
        if free.sum() == 0:  # nothing stays free: only planned jobs can start early (where their plan runs)
            idle = [js for js in idle if js.job_id in self.plans]
        if idle:
            self._lend_idle(idle, nodes, out, previous, free, now_free, bfree, now_bfree)
        if self.p.top_up and now_free.sum() > 0:
            self._top_up(running_plan, nodes, out, previous, free, now_free, bfree, now_bfree)

    def _placement(self, pl: tuple) -> tuple:
        """What GADGET reads of a placement, computed once (placements repeat): its servers, the
        workers on each, whether it crosses servers, the (server, workers) pairs as Python ints,
        and the GPUs and NIC share it reserves per server (``_sparse``, ``_usage``)."""
        r = self._placement_cache.get(pl)
        if r is None:
            if len(self._placement_cache) >= 1 << 16:
                self._placement_cache.clear()
            srv, cnt = np.unique(np.asarray(pl, dtype=np.int64), return_counts=True)
            counts = np.zeros(self.ledger.gpus.size, dtype=np.int64)
            counts[srv] = cnt
            bw = np.zeros(counts.size)
            if self.ring_aware and srv.size > 1:
                bw[srv] = self.p.nic_share
            r = self._placement_cache[pl] = (srv, cnt, srv.size > 1, tuple(zip(srv.tolist(), cnt.tolist())), counts, bw)
        return r

    def _sparse(self, pl: tuple) -> tuple[np.ndarray, np.ndarray, bool, tuple]:
        """(servers, workers on each, crosses servers, the (server, workers) pairs) of a placement."""
        return self._placement(pl)[:4]

    def _fits_now(self, pairs: tuple, multi: bool, now_free, now_bfree) -> bool:
        """Whether a placement's GPUs (and NIC share, if it crosses servers) are idle in this slot.
        Scalar checks (on lists): placements have one or a few servers, and this runs for every
        idle job."""
        if not multi:
            s, c = pairs[0]
            return now_free[s] >= c
        nic = self.p.nic_share
        return all(now_free[s] >= c and now_bfree[s] >= nic for s, c in pairs)

    def _take_now(self, pairs: tuple, multi: bool, free, now_free, bfree, now_bfree) -> int:
        """Lend a placement's GPUs in this slot (``free``, which also covers the lookahead, stays
        at most ``now_free``); returns the change of ``free``'s total."""
        nic = self.p.nic_share
        change = 0
        for s, c in pairs:
            now_free[s] -= c
            if free[s] > now_free[s]:
                change += int(now_free[s] - free[s])
                free[s] = now_free[s]
            if multi:
                now_bfree[s] -= nic
                if bfree[s] > now_bfree[s]:
                    bfree[s] = now_bfree[s]
        return change

    def _lend_idle(self, idle, nodes: Nodes, out: dict, previous, free, now_free, bfree, now_bfree) -> None:
        """Lend to jobs with nothing committed in this slot (arrays are updated in place)."""
        now = nodes.now_s
        nic = self.p.nic_share

        def fixed(js):  # (speed at its widest consolidated size, arrival, index): fixed per job
            r = self._alone[js.job_id] = (max(nodes.throughput_sps(js, js.job.max_workers), 1e-12),
                                          js.job.arrival_s, js.index)
            return r

        get = self._alone.get
        meta = np.array([get(js.job_id) or fixed(js) for js in idle])
        # (JobState.remaining_at, inlined: this runs for every idle job at every decision)
        rem = np.array([max(0.0, (w := js.job.work_samples) - min(w, js.done_samples + js.rate_sps *
                                                                   max(0.0, now - js.run_from_s))) for js in idle])
        # shortest remaining time alone first (then arrival, then index: a total order)
        order = np.lexsort((meta[:, 2], meta[:, 1], rem / meta[:, 0]))
        # the loop reads and writes single servers: Python lists are several times faster at
        # that than numpy scalars (written back at the end)
        arrays = (free, now_free, bfree, now_bfree)
        free, now_free, bfree, now_bfree = (x.tolist() for x in arrays)
        free_total = sum(free)
        now_total = sum(now_free)
        for i in order.tolist():
            if now_total == 0:
                break  # nothing left to lend in this slot
            js = idle[i]
            prev = previous.get(js.job_id, ())
            plan = self.plans.get(js.job_id)
            if plan is not None:
                # a planned job starts early where its plan will run it (no move later): its
                # own reservations are what the lookahead would see there, so check this slot
                first = plan.first_placement
                _, _, multi, pairs = self._sparse(first)
                if self._fits_now(pairs, multi, now_free, now_bfree):
                    out[js.job_id] = first
                    free_total += self._take_now(pairs, multi, free, now_free, bfree, now_bfree)
                    now_total -= len(first)
                    continue
                # its planned servers are busy now: lend it others until its plan starts
            if free_total < js.job.min_workers:
                continue
            if prev:
                # where it runs on lent GPUs now, it stays while they are idle in this slot: a
                # commitment due later takes them back then, and moving earlier gains nothing
                _, _, multi, pairs = self._sparse(prev)
                if self._fits_now(pairs, multi, now_free, now_bfree):
                    out[js.job_id] = prev
                    free_total += self._take_now(pairs, multi, free, now_free, bfree, now_bfree)
                    now_total -= len(prev)
                    continue
            # a lent ring stays inside one server unless the job cannot run on fewer GPUs:
            # lent GPUs may be taken back next slot, and a spread ring is slow anyway
            w = min(js.job.max_workers, max(max(free), js.job.min_workers))
            free_arr = np.array(free, dtype=np.int64)
            while w >= js.job.min_workers:
                pl = consolidated(w, free_arr)
                if pl is not None:
                    _, _, multi, pairs = self._sparse(pl)
                    if not multi or all(bfree[s] >= nic for s, _ in pairs):
                        out[js.job_id] = pl
                        for s, c in pairs:
                            free[s] -= c
                            now_free[s] -= c
                            if multi:
                                bfree[s] -= nic
                        free_total = sum(free)
                        now_total -= w
                        break
                w -= 1
        for x, v in zip(arrays, (free, now_free, bfree, now_bfree)):
            x[:] = v

    def _top_up(self, running_plan, nodes: Nodes, out: dict, previous, free, now_free, bfree, now_bfree) -> None:
        """Idle GPUs on top of a planned job's committed placement, shortest job first.

        The job keeps every GPU of its plan (the commitment is untouched) and gains lent ones,
        placed on its own servers first. A top-up starts only on GPUs that stay uncommitted for
        the lookahead and only when, counting a restart to grow and one to shrink back, it
        gains ``top_up_gain`` of the job's progress over the lookahead (or finishes the job
        sooner within it); it lasts while its lent GPUs stay uncommitted. This is what makes
        GADGET work-conserving at light load and lets jobs grow when others finish early."""
        now = nodes.now_s
        restart = self._restart_s(nodes)
        window = max(1, self.p.lend_lookahead) * nodes.slot_s
        S = free.size
        nic = self.p.nic_share
        if not running_plan:
            return
        cands = list(running_plan)
        speed = nodes.speed

        def rate(js, counts):
            return speed.throughput_sps(js.job.model, js.job.local_bsz, speed.shape(counts_to_placement(counts)))

        cands.sort(key=lambda js: (js.remaining_at(now) / max(nodes.throughput_sps(js, len(out[js.job_id])), 1e-12),
                                   js.job.arrival_s, js.index))
        for js in cands:
            if now_free.sum() == 0:
                break
            jid, base = js.job_id, out[js.job_id]
            own = np.bincount(np.asarray(base), minlength=S)
            base_multi = (own > 0).sum() > 1
            prev = previous.get(jid, ())
            if len(prev) > len(base):  # topped up before: keep it while the lent GPUs stay idle
                extra = np.bincount(np.asarray(prev), minlength=S) - own
                new_srv, multi = _nic_need(own, own + extra, base_multi)
                if np.all(extra >= 0) and np.all(extra <= now_free) and \
                        (not multi or np.all(now_bfree[new_srv] >= nic - 1e-12)):
                    out[jid] = prev
                    self._take_lent(extra, new_srv if multi else None, free, now_free, bfree, now_bfree)
                    continue
            avail = np.minimum(free, now_free)
            room = int(avail.sum())
            if room == 0:
                continue
            rem = js.remaining_at(now)
            r0 = rate(js, own)
            if r0 <= 0 or rem <= 0:
                continue
            t_old = rem / r0
            if t_old <= restart + nodes.slot_s:
                continue  # nearly done: a restart cannot pay
            best = None
            order = np.lexsort((np.arange(S), -avail, own == 0))  # own servers, then the emptiest
            for w in worker_menu(len(base) + 1, min(js.job.max_workers, len(base) + room)):
                need = w - len(base)
                extra = np.zeros(S, dtype=np.int64)
                for s_ in order:
                    if need == 0:
                        break
                    t_ = min(int(avail[s_]), need)
                    extra[s_] += t_
                    need -= t_
                if need:
                    continue
                counts = own + extra
                new_srv, multi = _nic_need(own, counts, base_multi)
                if multi and not np.all(np.minimum(bfree, now_bfree)[new_srv] >= nic - 1e-12):
                    continue
                r1 = rate(js, counts)
                t_new = restart + rem / r1
                if t_new <= window:  # done while lent
                    gain = (t_old - t_new) / t_old
                else:  # progress over the window, less a restart to grow and one to shrink back
                    gain = (r1 * (window - restart) - r0 * restart) / (r0 * window) - 1.0
                if gain >= self.p.top_up_gain and (best is None or gain > best[0]):
                    best = (gain, counts, extra, new_srv if multi else None)
            if best is not None:
                _, counts, extra, new_srv = best
                out[jid] = counts_to_placement(counts)
                self._take_lent(extra, new_srv, free, now_free, bfree, now_bfree)

    def _take_lent(self, extra, new_srv, free, now_free, bfree, now_bfree) -> None:
        now_free -= extra
        np.minimum(free, now_free, out=free)
        if new_srv is not None:
            now_bfree[new_srv] -= self.p.nic_share
            np.minimum(bfree, now_bfree, out=bfree)


@register
class Oasis(Gadget):
    """OASiS (INFOCOM'18) as a baseline: the same primal-dual machinery, blind to ring placement.

    It prices GPUs only, takes the cheapest GPUs wherever they are, and plans every ring as if
    it crossed servers; the simulated world still runs the rings where they were placed."""

    name = "oasis"
    ring_aware = False
