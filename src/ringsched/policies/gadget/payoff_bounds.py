"""Upper bounds on the payoff of GADGET's plan search, many times cheaper than the search: an
offer whose bound is not positive is not searched (the offer fails as the search would have),
so decisions are the same with or without them (``bound_first``; docs/theory.md)."""

from __future__ import annotations

import numpy as np

from ringsched.job import Job
from ringsched.policies.gadget import kernels
from ringsched.policies.gadget.plan import uniform_plans, uniform_row_payoffs
from ringsched.policies.gadget.search import PlanSearch, PriceWindow


class PayoffBounds:
    """The bounds of one policy's search (its prices, rates and ledger)."""

    def __init__(self, search: PlanSearch):
        self.search = search

    def quick_bound(self, job: Job, remaining: float, nodes, slot: int, horizon_end_s: float) -> float:
        """A looser upper bound on the search's payoff than ``payoff_bounds``, without a window
        (``quick_bounds`` for one job)."""
        return float(self.quick_bounds([(job, remaining, horizon_end_s)], nodes, slot)[0])

    def quick_bounds(self, offers, nodes, slot: int) -> np.ndarray:
        """``quick_bound`` of several (job, remaining samples, horizon end) at once: the offers of
        one decision share the work. Offers made in between only raise prices, so bounds taken
        at the start of a decision stay upper bounds for all of its offers.

        A step's price of a GPU is b x P(mean usage of its server) / G (``window``); its lowest
        over servers, from the ledger's running usage sums, bounds every plan's cost per GPU
        (it ignores which servers have a free GPU, and rings and NICs). With the fastest rate
        (``max_rate``) every plan of the search is matched as in ``payoff_bounds``. Most offers
        of a busy trace end here."""
        s = self.search
        J = len(offers)
        out = np.full(J, -np.inf)
        m = s.p.max_steps
        rows, B, steps = [], np.ones(J, dtype=np.int64), np.zeros(J, dtype=np.int64)
        for i, (job, remaining, end_s) in enumerate(offers):
            B[i], steps[i] = s.steps(nodes, slot, end_s)
            for w in self.search.p.menu(job, nodes.cluster.total_gpus):
                rows.append((i, w, s.max_rate(nodes, job, w)))
        if not rows:
            return out
        step_len = B * nodes.slot_s
        edges = np.minimum(np.arange(m + 1)[None, :], steps[:, None]) * B[:, None]  # (J, m + 1) slots
        Z = s.ledger.usage_prefix(slot, slot + int(edges[:, -1].max()))
        # P rises: the lowest price is that of the least used server (at the largest G, for clusters
        # with servers of different sizes), so one exponential per step; the usage is lowered
        # by 1e-6 so that rounding in the running sums cannot raise the bound's prices
        z = kernels.lowest_block_usage(Z, edges, B, 1e-6)  # (J, m)
        low = B[:, None] * s.prices_g(z) / float(nodes.cluster.gpus.max())
        if s.p.energy_cost_per_gpu_s:
            low = low + s.p.energy_cost_per_gpu_s * step_len[:, None]
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

    def window_if_it_can_pay(self, job: Job, remaining: float, nodes, slot: int, end_s: float,
                             quick: float | None = None, by_s: float = np.inf) -> tuple[PriceWindow, dict] | None:
        """The price window for a search with the bound of each worker count, or None when an
        upper bound on the payoff says that no plan pays (the cheap ``quick_bound`` first,
        unless given, then ``bounds_by``), or that none that finishes by ``by_s`` pays (a
        relaxed plan finishes no later than the plan it matches: none of those is left out)."""
        tiny = 1e-9 * float(job.utility.max_value)  # (the margin covers rounding in the running sums)
        if quick is None:
            quick = self.quick_bound(job, remaining, nodes, slot, end_s)
        if quick < -tiny:
            return None
        win = self.search.window(nodes, slot, end_s)
        bounds, on_time = self.bounds_by(job, remaining, nodes, win, by_s)
        if not bounds.size or bounds.max() <= -tiny or on_time.max() <= -tiny:
            return None
        return win, dict(zip(self.search.p.menu(job, nodes.cluster.total_gpus), (bounds + tiny).tolist()))

    def bounds_by(self, job: Job, remaining: float, nodes, win: PriceWindow,
                  by_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Per worker count of the job's menu, upper bounds on the payoff of the search's plans
        with that count in ``win``: of all of them, and of those that finish by ``by_s``.

        It relaxes the search: each step's cost is that of the w cheapest free GPUs anywhere
        (no ring, no NIC price; every embedding the search can pick costs at least that) and its
        progress is the fastest shape's (``max_rate``). Every plan of the search is then matched
        by a relaxed plan that starts in the same step, finishes no later and costs no more.
        The search skips worker counts whose bound cannot beat its best plan."""
        menu = self.search.p.menu(job, nodes.cluster.total_gpus)
        if not menu:
            return np.zeros(0), np.zeros(0)
        w = np.array(menu)
        rates = np.array([self.search.max_rate(nodes, job, x) for x in menu]) * win.step_len_s
        total = win.free.sum(axis=0)

        def value(cost):
            return uniform_row_payoffs(cost, rates, remaining, float(win.starts_s[0]), win.step_len_s,
                                       job.utility, job.arrival_s, by_s)

        # first the looser bound (every GPU at the step's lowest price): no sort when it decides
        low = np.where(win.free > 0, win.gp, np.inf).min(axis=0)
        fits = total[None, :] >= w[:, None]
        top = value(np.where(fits, w[:, None] * low[None, :], np.inf))
        if top[1].max() <= 0 or menu == [1]:  # (for one worker both bounds are the same)
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
