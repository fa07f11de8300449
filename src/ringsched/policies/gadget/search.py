"""GADGET's per-job plan search: the price window a job sees from one slot on, and the best
plan in it (the "dual subroutine" of the primal-dual framework, docs/theory.md).

For every worker count of the job's menu: the per-step greedy ring embedding (``embed.py``)
and one fixed embedding, each searched for plans that run without gaps from some step until
done (``plan.contiguous_payoffs``); the best payoff wins, then is started as late as it still
pays nearly as much (``late_share``) and, when it sits on one server and starts soon, packed
onto the fullest server that hosts it (``pack_slack``). On several GPU types each type's servers
are searched apart, and plans that run on one type and then on another (``type_switch.py``)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ringsched.embedding import counts_to_placement
from ringsched.job import Job
from ringsched.perfmodel.efficiency import noise_scale
from ringsched.perfmodel.goodput import goodput_of
from ringsched.policies.gadget import kernels
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.embed import StepEmbeddings, embed
from ringsched.policies.gadget.exact import exact_plan
from ringsched.policies.gadget.gpu_types import TypeView, placement_gpu, restrict, type_views
from ringsched.policies.gadget.params import GadgetParams
from ringsched.policies.gadget.plan import choose, contiguous_payoffs
from ringsched.policies.gadget.prices import Ledger, PriceFunction
from ringsched.policies.gadget.type_switch import SwitchCandidate, switch_payoffs


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


class PlanSearch:
    """Prices, rates and the plan search of one policy; reads the ledger, never writes it."""

    def __init__(self, p: GadgetParams, ring_aware: bool, rings_crossing: bool = False):
        self.p = p
        self.ring_aware = ring_aware
        self.rings_crossing = rings_crossing  # every ring of w > 1 timed as if it crossed servers (``plan_rate``)
        self.ledger: Ledger | None = None
        self.prices_g: PriceFunction | None = None
        self.prices_b: PriceFunction | None = None
        self._rates: dict[tuple, float] = {}
        self.exact_tables: dict[tuple, tuple] = {}  # configurations of the exact subroutine (``exact.py``)
        self._views: tuple[object, tuple[TypeView, ...]] | None = None  # (cluster, its GPU types)
        # adaptive-batch jobs: their share of the work done at this decision (``plan_rate``)
        self.done_fraction: dict[str, float] = {}

    def set_prices(self, L: float, U: float) -> None:
        self.prices_g = PriceFunction(L, U, self.p.zeta)
        self.prices_b = PriceFunction(L, U, self.p.zeta if self.p.zeta_nic is None else self.p.zeta_nic)

    def clear_rates(self) -> None:
        """Forget cached speeds (the speed model was refitted)."""
        self._rates.clear()
        self.exact_tables.clear()

    # ------------------------------------------------------------ speeds
    def views(self, cluster) -> tuple[TypeView, ...]:
        """The cluster's GPU types as the search sees them (``gpu_types.type_views``, cached)."""
        if self._views is None or self._views[0] is not cluster:
            self._views = (cluster, type_views(cluster))
        return self._views[1]

    def plan_rate(self, nodes, job: Job, w: int, k: int, d: int, view: TypeView | None = None) -> float:
        """Samples per second of a ``w``-worker ring over k servers (at most d workers on one) on
        ``view``'s GPU type (default: the cluster's first type)."""
        if self.rings_crossing and w > 1:
            k, d = min(w, nodes.cluster.num_servers), 1  # OASiS by default: every ring crosses servers
        shape = (w, k, d, 1)
        view = view or self.views(nodes.cluster)[0]
        args = (job.model, job.local_bsz, shape, self.p.nic_share * view.nic_Bps if k > 1 else None)
        if job.adaptive_batch and noise_scale(job.model) is not None:
            # the rate the world credits: its goodput at the batch it will pick there (a wide
            # ring's large total batch is worth fewer samples of the job's own batch)
            return goodput_of(nodes.speed, job, self.done_fraction.get(job.job_id, 0.0), shape, view.gpu, args[3])[1]
        if view.gpu is None:  # one type: the speed model's default (the optimum's DiscreteSpeed has no types)
            return nodes.speed.throughput_sps(*args)
        return nodes.speed.throughput_sps(*args, gpu=view.gpu)

    def max_rate(self, nodes, job: Job, w: int) -> float:
        """The fastest any ``w``-worker plan can run (an upper bound over the shapes and GPU types
        the search uses). In the ring model (docs/model.md) every parameter is non-negative and,
        for a given number k of servers, the step time grows with d, the most workers on a
        server: so the fastest shape on k servers has d = ceil(w / k). One server (k = 1, d = w)
        and every k from 2 to min(w, S) are tried on every type (cached per model, batch and w)."""
        adaptive = job.adaptive_batch and noise_scale(job.model) is not None
        key = (job.model, job.local_bsz, w)
        r = None if adaptive else self._rates.get(key)  # (an adaptive job's goodput moves with its progress)
        if r is None:
            c = nodes.cluster
            r = 0.0
            for v in self.views(c):
                r = max(r, max((self.plan_rate(nodes, job, w, k, -(-w // k), v)
                                for k in range(2, min(w, c.num_servers) + 1)), default=0.0))
                if w <= int(c.gpus.max()):
                    r = max(r, self.plan_rate(nodes, job, w, 1, w, v))
            if not adaptive:
                self._rates[key] = r
        return r

    # ------------------------------------------------------------ the window
    def steps(self, nodes, slot: int, horizon_end_s: float) -> tuple[int, int]:
        """(b, steps): the window from ``slot`` to ``horizon_end_s`` in at most max_steps steps of b slots."""
        n_slots = max(1, math.ceil((horizon_end_s - slot * nodes.slot_s) / nodes.slot_s))
        b = max(1, math.ceil(n_slots / self.p.max_steps))
        return b, math.ceil(n_slots / b)

    def window(self, nodes, slot: int, horizon_end_s: float) -> PriceWindow:
        """Free resources and prices from absolute ``slot`` to ``horizon_end_s``, in steps."""
        c = nodes.cluster
        slot_s = nodes.slot_s
        now = slot * slot_s
        b, steps = self.steps(nodes, slot, horizon_end_s)
        used_g, used_b = self.ledger.window(slot, slot + steps * b)
        S = c.num_servers
        gpus = c.gpus[:, None]
        top, total, btop, btotal, any_b = kernels.window_stats(used_g, used_b, b, self.ledger.front, slot)
        free = gpus - top  # free in every slot of the step
        free[:, 0] = np.minimum(free[:, 0], nodes.capacity - used_g[:, 0])
        if self.p.max_per_server is not None:
            np.minimum(free, self.p.max_per_server, out=free)
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

    # ------------------------------------------------------------ the search
    def search(self, job: Job, remaining: float, nodes, slot: int, *, horizon_end_s: float,
               current: tuple = (), ran_before: bool = False, win: PriceWindow | None = None,
               w_bounds: dict | None = None, earliest: bool = False, late: bool = True) -> Plan | None:
        """The best plan for ``remaining`` samples of ``job`` starting at absolute ``slot``.

        For every worker count of the job's menu, every plan that runs without gaps from some
        step until done (``plan.contiguous_payoffs``, then ``plan.choose``) on one GPU type, and
        on several types every plan that changes type once (``type_switch``); ``current`` is where
        the job runs now (kept while it fits: no restart), ``ran_before`` charges a restart.
        ``w_bounds`` (upper bounds on the payoff per worker count, ``PayoffBounds.bounds_by``) asks only
        for a plan that pays: counts whose bound is negative, or below the best plan found so
        far, are skipped, and None may come back where every plan has a payoff of at most 0.
        ``earliest``: the plan that finishes first whatever its payoff, started at once (an
        overdue job under fairness, ``objective_terms.overdue``). ``late``: the plan may start late
        (``late_share``); off for a job whose estimate the world has doubled (``Gadget.outlived``)."""
        c = nodes.cluster
        if win is None:
            win = self.window(nodes, slot, horizon_end_s)
        if self.p.subroutine == "exact":
            return exact_plan(self, job, remaining, nodes, slot, win)
        menu = self.p.menu(job, c.total_gpus)
        if not menu:
            return None
        best = None
        prune = w_bounds is not None
        near = 1e300 if earliest else 0.0  # earliest: every plan ties, the first to finish wins (finite: -inf marks no plan)
        views = self.views(c)
        now_gpu = placement_gpu(c, current) if len(views) > 1 and current else None
        typed = [(v, restrict(win, v)) for v in views]  # a ring runs on one type (``gpu_types``)
        keep = max(0.0, 1.0 - self.p.restart_for(nodes) / win.step_len_s)  # of a type change's first step
        for w in menu:
            if prune and (w_bounds[w] < 0 or (best is not None and w_bounds[w] < best[0].payoff)):
                continue  # no plan with w workers pays, or beats the best one found
            # an empty server's cost, shared by the (at most one server's worth of) workers put there
            gp = win.gp if win.srv is None else win.gp + win.srv / min(w, int(c.gpus.max()))
            greedy = []
            for view, vwin in typed:
                # on another type than where it runs now, the job restarts
                here = view.mask is None or view.gpu == now_gpu
                e, prog = self._embedding(w, job, nodes, vwin, gp, current if here else (),
                                          ran_before or not here and bool(current), view)
                greedy.append((e, prog, vwin))
                cands = [e]
                fixed = self._fixed_embedding(w, e, prog, remaining, vwin, gp, nodes, job, view)
                if fixed is not None:
                    cands.insert(0, fixed)  # one placement for the whole run: no migrations
                for cand in cands:
                    pays = contiguous_payoffs(cand.cost, prog if cand is e else cand.progress, remaining,
                                              win.starts_s, win.step_len_s, job.utility, job.arrival_s)
                    best = _better(best, choose(pays, near), near, OneType(cand, vwin), gp, pays)
            if self.p.type_switch and len(greedy) > 1:  # plans that change type once (``type_switch``)
                for (ea, pa, wa), (eb, pb, wb) in itertools.permutations(greedy, 2):
                    found = switch_payoffs((ea.cost, pa), (eb.cost, pb), remaining, win, keep,
                                           job.utility, job.arrival_s)
                    if found is not None:
                        best = _better(best, choose(found[0], near), near, SwitchCandidate(ea, eb, wa, wb, found[1]),
                                       gp, found[0])
        if best is None:
            return None
        return self._plan_of(best, job, slot, current, c.num_servers, late=late and not earliest)

    def _embedding(self, w: int, job: Job, nodes, win: PriceWindow, gp, current: tuple, ran_before: bool,
                   view: TypeView | None = None):
        """The greedy embedding of ``w`` workers in every step and its progress per step; a job
        that runs on ``w`` GPUs now stays there while they are free (no restart), else a job
        that ran before pays a restart in the first step."""
        steps, step_len, free, bfree, bp = win.steps, win.step_len_s, win.free, win.bfree, win.bp
        e = embed(w, free, gp, bfree, bp, self.p.nic_share, ring_aware=self.ring_aware)
        if e.order is None and e.single is not None:  # one server in every step: one shape
            prog = np.full(steps, self.plan_rate(nodes, job, w, 1, w, view) * step_len)
        else:
            prog = np.zeros(steps)
            kd = e.k * 1000 + e.d
            for code in np.unique(kd[e.ok]):
                rate = self.plan_rate(nodes, job, w, int(code // 1000), int(code % 1000), view)
                prog[kd == code] = rate * step_len
        if current and len(current) == w:
            # staying where it runs is free of a restart: use it while it fits
            cc = np.bincount(np.asarray(current), minlength=free.shape[0])
            fits = np.all(cc[:, None] <= free, axis=0)
            if self.ring_aware and (cc > 0).sum() > 1:
                fits &= np.all(bfree[cc > 0] >= self.p.nic_share - 1e-12, axis=0)
            first = np.flatnonzero(~fits)
            stay = steps if first.size == 0 else int(first[0])
            if stay:
                sh = nodes.speed.shape(current)
                rate = self.plan_rate(nodes, job, w, sh[1], sh[2], view)
                e.cost[:stay] = (cc[:, None] * gp[:, :stay]).sum(axis=0) + \
                    ((cc > 0)[:, None] * bp[:, :stay]).sum(axis=0) * (sh[1] > 1)
                e.ok[:stay] = True
                prog[:stay] = rate * step_len
                e.head = (stay, cc)
        elif ran_before:
            prog[0] = max(0.0, prog[0] - self.p.restart_for(nodes) * prog[0] / step_len)
        return e, prog

    def _plan_of(self, best, job: Job, slot: int, current: tuple, S: int, late: bool = True) -> Plan:
        """The chosen plan, started late (``late_share``; unless not ``late``) and packed
        (``pack_slack``), as segments."""
        ch, cand, gp, pays = best
        # the same worker count and embedding, started as late as it still pays as much (a plan
        # that changes type is another plan at every start: its switch step moves; it starts as chosen)
        if late and self.p.late_share > 0 and cand.one_type:
            floor = ch.payoff - self.p.late_share * float(job.utility.max_value)
            if ch.payoff > 0:  # (admission is still decided by a positive payoff)
                floor = max(floor, 1e-9 * float(job.utility.max_value))
            ch = choose(pays, floor=floor) or ch
        e, win = cand.at(ch.start)
        b, free, bfree = win.b, win.free, win.bfree
        # keeping servers whole is for rings (and packing a plan that changes type would undo it)
        if cand.one_type and self.ring_aware and self.p.pack_slack > 0 and not current:
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

    def _fixed_embedding(self, w, e, prog, remaining, win: PriceWindow, gp, nodes, job, view: TypeView | None = None):
        """One embedding that stays free from the first step that fits until the job would be
        done there (estimated at that step's speed): the plan then never migrates."""
        free, bfree, bp = win.free, win.bfree, win.bp
        s0, s1, fmin, bmin, gsum, bsum = kernels.fixed_window(e.ok, prog, float(remaining), free, bfree, gp, bp)
        if s0 < 0:
            return None
        fits, counts = kernels.embed_one(w, fmin, gsum, bmin, bsum, self.p.nic_share, self.ring_aware)
        if not fits:
            return None
        sh = nodes.speed.shape(counts_to_placement(counts))
        rate = self.plan_rate(nodes, job, w, sh[1], sh[2], view)
        n = free.shape[1]
        cost = kernels.fixed_cost(counts, gp, bp, s0, s1, sh[1] > 1)
        ok = np.isfinite(cost)
        fx = StepEmbeddings(w, cost, np.full(n, sh[1]), np.full(n, sh[2]), ok, fixed=counts)
        fx.progress = np.where(ok, rate * win.step_len_s, 0.0)
        return fx


def _better(best, ch, near: float, cand, gp, pays):
    """``best`` or the candidate plan ``ch``, whichever has the larger payoff (within ``near``:
    the earlier finish); a plan is kept with its candidate (``OneType`` or
    ``type_switch.SwitchCandidate``: its embedding and window for the start finally chosen),
    its GPU prices and its payoffs by start step."""
    if ch is not None and (best is None or ch.payoff > best[0].payoff + near or
                           (ch.payoff >= best[0].payoff - near and ch.finish_s < best[0].finish_s)):
        return (ch, cand, gp, pays)
    return best


class OneType:
    """A candidate on one GPU type: the same embedding and window whatever the start, so it may
    start late and be packed."""

    one_type = True

    def __init__(self, e, win):
        self.e, self.win = e, win

    def at(self, start: int):
        return self.e, self.win
