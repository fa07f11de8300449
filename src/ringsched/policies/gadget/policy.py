"""GADGET: online primal-dual scheduling of ring-all-reduce jobs with greedy ring embedding.

The contract (design brief, section 4; theory in docs/theory.md):

1. every (server, slot) has a GPU price and a NIC price, exponential in the committed share;
2. when a job is offered, its cheapest plan (worker count and ring embedding for every slot up
   to a completion slot T) is found for every T at current prices, and the plan with the
   largest payoff u(T - a) - cost is taken (``search.py``; in trace mode started as late as it
   still pays nearly as much, ``late_share``: the near slots are left to later arrivals);
3. the embedding inside that search is the greedy ring embedding (``embed.py``);
4. a positive payoff admits the job: its plan is committed and prices rise (``book.py``; a
   one-server ring of a plan that starts soon first moves to the fullest server that hosts it,
   within a slack: ``pack_slack``, ``pack_within``, against fragmentation). Otherwise, in
   ``deferred`` admission (default) the job is offered again in later slots; in ``strict``
   admission (the textbook setting) it is rejected for good;
5. GPUs left idle in the current slot are lent to jobs without a commitment in it, then on
   top of planned jobs' placements when that pays for the restarts (``lending.py``).

A committed plan is never broken by GADGET but for one rule: a job whose offer failed may
displace a longer job's plan when that gains more utility than the longer job loses
(``displace.py``; the displaced job is planned again at once). Each slot GADGET returns the
committed placement of every planned job, or a superset of it when idle GPUs are lent on top. Plans end early when a
job finishes early (its later reservations are released), and a job that falls behind its
plan (a restart cost, a failed server) gets a new plan for what is left.

This module is the decision loop: admit, optimize (release, offer, hand out, lend) and wakeup;
the rooms it uses are ``params``, ``search``, ``payoff_bounds``, ``book``, ``lending`` and
``offers`` (which jobs are offered a plan in a decision, in what order, and the retry).
"""

from __future__ import annotations

import dataclasses
import math

from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.policies.base import JobState, Nodes, Policy
from ringsched.policies.gadget.book import CommitmentBook, Plan
from ringsched.policies.gadget.calibration import Calibrated
from ringsched.policies.gadget.estimate_error import EstimateError
from ringsched.policies.gadget.lending import Lender
from ringsched.policies.gadget.objective_terms import overdue, past_commitments_s, planned_remaining
from ringsched.policies.gadget.offers import offer_unplanned
from ringsched.policies.gadget.params import GadgetParams, OasisParams, derive_bounds, jct_at_value_s, utility_horizon_s
from ringsched.policies.gadget.payoff_bounds import PayoffBounds
from ringsched.policies.gadget.reserve import reservation
from ringsched.policies.gadget.search import PlanSearch
from ringsched.policies.gadget.usage import GpuTimeSplit
from ringsched.policies.registry import register

__all__ = ["Gadget", "GadgetParams", "Oasis", "Plan"]


@register
class Gadget(Policy):
    name = "gadget"
    Params = GadgetParams  # the options of a ``gadget:key=value,...`` spec
    periodic = True
    rigid = False
    ring_aware = True
    rings_crossing = False  # (GADGET times each ring at its placement's speed)

    def __init__(self, params: GadgetParams | None = None, **overrides):
        if params is not None and not isinstance(params, self.Params):  # (a parent's options: the rest at their defaults)
            params = self.Params(**dataclasses.asdict(params))
        self.p = params or self.Params(**overrides)
        self.planner = PlanSearch(self.p, self.ring_aware, self.rings_crossing)
        self.bounds = PayoffBounds(self.planner)
        self.book: CommitmentBook | None = None
        self.lender: Lender | None = None
        self.last_try: dict[str, int] = {}
        self.tried_epoch: dict[str, int] = {}
        self.misses: dict[str, int] = {}  # failed re-offers in a row (the retry back-off)
        self.horizon: dict[str, tuple[float, float]] = {}  # (utility horizon s, samples/s alone), until a re-estimate
        self._speed_version = 0
        self.bound_skips = 0
        self.reestimated: set[str] = set()  # told by the world: their estimates doubled, re-plan them
        # jobs whose estimate the world has doubled: their plans start at their best start, not late
        # (a doubled estimate is a guess that may be up to twice the work left, and the knee shown
        # with it as late: a late start by it can pass the true one; docs/theory.md section 10)
        self.outlived: set[str] = set()
        self.usage = GpuTimeSplit()
        self.overdue: set[str] = set()  # jobs past the rho guard at this decision (objective_terms.overdue)
        self.guarded: set[str] = set()  # jobs planned as overdue: their plans are not moved for another's
        self.displaced: list[tuple[str, str]] = []  # (displaced job, the job it made room for) at this decision
        self._on_time: tuple = (None, None)  # the last ``on_time_by``: (job, estimate, time, progress), its value
        self.reserved: tuple = (None, None)  # (job planned by ``reserve.reservation``, the slot it was tried in)
        self.errors = EstimateError(self.p.lend_triage_quantile, self.p.calibrate_spread)  # seen as jobs finish
        self.calibrated = Calibrated(self.errors)  # the jobs with estimates scaled by a consistent bias
        self._bias_version = 0

    @property
    def plans(self) -> dict[str, Plan]:
        return self.book.plans if self.book is not None else {}

    @property
    def ledger(self):
        return self.book.ledger if self.book is not None else None

    @property
    def plans_made(self) -> int:
        return self.book.plans_made if self.book is not None else 0

    @property
    def prices_g(self):
        return self.planner.prices_g

    # ------------------------------------------------------------ parameters
    def prepare(self, jobs, cluster, speed=None) -> None:
        """Price bounds from the workload's utilities and sizes (OASiS assumes such bounds known)."""
        if self.p.L is not None and self.p.U is not None:
            self.planner.set_prices(self.p.L, self.p.U)
            return
        L, U = derive_bounds(self.p, self.ring_aware, jobs, cluster, speed)
        L, U = self.p.L or L, self.p.U or U
        if not L < U:  # one given, the other derived: validation could not see the pair
            raise InputError(f"{self.name}: L={L:g} must be below U={U:g} (the one not given is derived from the "
                             "workload): give both, or neither", field="policy")
        self.planner.set_prices(L, U)

    def _ensure(self, nodes: Nodes, jobs) -> None:
        if self.book is None:
            self.book = CommitmentBook(nodes.cluster, self.ring_aware, self.p.nic_share)
            self.lender = Lender(self.p, self.book, self.errors)
            self.planner.ledger = self.book.ledger
        if self.planner.prices_g is None:
            self.prepare([js.job if isinstance(js, JobState) else js for js in jobs], nodes.cluster, nodes.speed)

    def _drop_job_caches(self, job_id: str | None = None) -> None:
        """Forget what was cached from the job's speed and utility (its estimate changed), or
        from every job's (``None``: a refitted speed model, a new estimates' bias)."""
        if job_id is None:
            self.horizon.clear()
        else:
            self.horizon.pop(job_id, None)
        if self.lender is not None:
            self.lender.forget(job_id)

    def _fixed(self, js: JobState, nodes: Nodes) -> tuple[float, float]:
        """(utility horizon s, samples/s alone on the widest ring): cached per job until its estimate changes."""
        hr = self.horizon.get(js.job_id)
        if hr is None:
            hr = self.horizon[js.job_id] = (
                utility_horizon_s(js.job, self.p.tail_utility),
                max(nodes.throughput_sps(js, self.p.most_workers(js.job, nodes.cluster.total_gpus)), 1e-12))
        return hr

    def alone_s(self, js: JobState, nodes: Nodes) -> float:
        """The job's remaining time alone on its widest ring (the planning estimate)."""
        return planned_remaining(js, nodes.now_s, self.p.stop_converged) / self._fixed(js, nodes)[1]

    def fastest_alone_s(self, js: JobState, nodes: Nodes) -> float:
        """The job's remaining time alone at its fastest: the most samples/s any plan of a
        worker count on its menu can reach, on any GPU type (``PlanSearch.max_rate``)."""
        menu = self.p.menu(js.job, nodes.cluster.total_gpus)
        rate = max((self.planner.max_rate(nodes, js.job, w) for w in menu), default=0.0)
        return planned_remaining(js, nodes.now_s, self.p.stop_converged) / max(rate, 1e-12)

    def horizon_end_s(self, js: JobState, nodes: Nodes) -> float:
        """The end (s) of the window a plan of ``js`` is searched in: its utility horizon, and
        never less than four times its time alone from now (offers and ``earliest_finish_s`` search it)."""
        end = js.job.arrival_s + self._fixed(js, nodes)[0]
        # a job past its horizon (or behind its plan) still gets a window to finish in
        alone = self.alone_s(js, nodes)
        if js.job_id in self.overdue:  # (fairness: planned whatever the payoff, past what is committed)
            end = max(end, past_commitments_s(self.book.plans, nodes.slot_s) + 2 * alone)
        return max(end, nodes.now_s + 4 * alone + 2 * nodes.slot_s)

    # ------------------------------------------------------------ interface
    def admit(self, job: Job, nodes: Nodes) -> str | None:
        reason = super().admit(job, nodes)
        if reason or self.p.admission != "strict":
            return reason
        self._ensure(nodes, [job])
        job = self.calibrated.arriving(job)  # (nothing done yet: its estimate scaled by the bias)
        slot = slot_of(nodes)
        h = utility_horizon_s(job, self.p.tail_utility)
        plan = self.search(job, job.work_samples, nodes, slot, horizon_end_s=job.arrival_s + h)
        if plan is None or plan.payoff <= 0:
            return "no plan with positive payoff at arrival (strict admission)"
        self.book.commit(job.job_id, plan)
        return None

    def optimize(self, jobs, nodes, previous_allocations):
        self._ensure(nodes, jobs)
        if getattr(nodes.speed, "version", 0) != self._speed_version:  # refitted: cached speeds are stale
            self._speed_version = getattr(nodes.speed, "version", 0)
            self.planner.clear_rates()
            self._drop_job_caches()
        slot = slot_of(nodes)
        self.errors.see(jobs)  # (the estimates as the world shows them)
        if self.errors.bias_version != self._bias_version:  # what was cached from the old scale is stale
            self._bias_version = self.errors.bias_version
            self._drop_job_caches()
        jobs = self.calibrated.view(jobs, nodes.now_s)
        for jid in self.calibrated.reestimated:  # (outlived their scaled estimate: as a re-estimate)
            self.on_reestimate(jid)
        active = {js.job_id: js for js in jobs}
        self.displaced = []
        self.planner.done_fraction = {js.job_id: js.done_at(nodes.now_s) / js.job.work_samples
                                      for js in jobs if js.job.adaptive_batch}
        self.book.release_gone(active.keys(), slot)  # finished early: free their later reservations
        released: set[str] = set()
        for jid in self.book.over(slot, nodes.up):
            self.book.release(jid, slot)  # plan over but work left, or a failed server
            released.add(jid)
        released |= self._release_reestimated(active, slot)
        self.overdue = overdue(jobs, nodes.now_s, self.p.rho_guard, self.book.plans)
        owed = self.overdue | reservation(self, jobs, nodes, slot, previous_allocations)
        # planned at any payoff: a plan made on an estimate that has failed promised nothing
        promised = owed | (released - self.outlived)
        offer_unplanned(self, jobs, active, nodes, slot, released | owed, previous_allocations, promised)
        out, running_plan = self._planned_placements(active, nodes, slot, previous_allocations)
        if self.p.work_conserving:
            self.lender.lend(jobs, nodes, slot, out, previous_allocations, running_plan)
            if self.p.commit_early_runs:
                self.book.commit_early_runs(out, slot, nodes, self.p.lend_lookahead)
        self.usage.record(nodes.now_s, jobs, out, self.book.plans, slot, nodes.slot_s)
        return out

    def on_finish(self, job_id: str) -> None:
        """A job left: a completed one tells the estimates' error (``estimate_error.py``)."""
        self.errors.finished(job_id)
        self.calibrated.forget(job_id)
        self.guarded.discard(job_id)
        self.outlived.discard(job_id)

    def on_reestimate(self, job_id: str) -> None:
        """The job's estimate doubled: its plan (made for the old work) is released at the next
        decision and the job is offered again first, for what is left, and admitted by its payoff
        like any job (not among ``offers.offer_unplanned``'s ``promised``): a plan made on an estimate that
        failed was no promise to keep at any price. What was cached from its old utility (the
        horizon, the lending tiers' ends) is dropped: the knee moved with the estimate, and the
        old horizon gave the job up early (docs/theory.md section 10)."""
        self.reestimated.add(job_id)
        self.outlived.add(job_id)
        self._drop_job_caches(job_id)

    def _release_reestimated(self, active: dict, slot: int) -> set[str]:
        """Release the plans of re-estimated jobs (in commit order, as ``release_gone``); those
        that had one are offered again first, the others are due for an offer at once."""
        told, self.reestimated = self.reestimated, set()
        planned = [jid for jid in told if jid in self.book.plans and jid in active]
        for jid in sorted(planned, key=self.book.commit_seq):
            self.book.release(jid, slot)
        for jid in told - set(planned):  # deferred: its payoff changed, so no back-off
            self.last_try.pop(jid, None)
            self.misses.pop(jid, None)
        return set(planned)

    def stats(self) -> dict[str, float]:
        """GPU-time under committed plans and on lent GPUs (issue 15: how much GADGET's plans do)."""
        return self.usage.stats()

    def too_late(self, js: JobState, plan: Plan, nodes: Nodes) -> bool:
        """Whether a plan finishes after the job's on-time limit (``on_time_by``). The search
        still looks for the job's best plan in its whole window: restricting it to plans that
        finish in time took worse on-time plans (fast subset: utility 0.994 -> 0.989 of the best
        baseline, mean JCT 1.425 -> 1.474), where refusing a late best plan leaves the job to
        lent GPUs and a later offer."""
        by = self.on_time_by(js, nodes)
        return by is None or plan.finish_s > by

    def on_time_by(self, js: JobState, nodes: Nodes) -> float | None:
        """The latest finish (s) at which a plan may admit the job (deferred admission): one that
        keeps at least ``on_time_share`` of what the job could still earn running alone from now;
        None when even that is below ``tail_utility`` of its maximum (nothing left to earn: the
        lending order's "past its horizon"); inf when the rule is off. A later plan still pays
        where the ledger is idle far ahead (nothing committed there yet: prices 0), and it then
        takes those slots from the jobs that arrive meanwhile and could finish there on time;
        under overload every job ended late (Philly VC 2869ce on 4x8: 0.34 of sjf-bco's utility;
        synthetic many-short jobs: 8-GPU jobs planned at arrival 5 h ahead for 2% of their
        value). The job still runs on lent GPUs."""
        share = self.p.on_time_share
        if share == 0 or self.p.admission != "deferred":
            return math.inf
        # (an offer asks, then its plan is checked; a new estimate is a new question)
        key = (js.job_id, js.job.work_samples, nodes.now_s, js.done_samples)
        if self._on_time[0] == key:
            return self._on_time[1]
        u, a = js.job.utility, js.job.arrival_s
        alone = float(u(nodes.now_s + self.fastest_alone_s(js, nodes) - a))
        by = None if alone < self.p.tail_utility * float(u.max_value) else a + jct_at_value_s(js.job, share * alone)
        self._on_time = (key, by)
        return by

    def _planned_placements(self, active: dict, nodes: Nodes, slot: int, previous_allocations) -> tuple[dict, list]:
        """Every started plan's placement for this slot (with ``stay_put``, moved to where its job
        runs when that saves a restart: ``CommitmentBook.stay_put``), and the jobs running their
        plan below their most workers (a top-up may grow them)."""
        out: dict[str, tuple] = {}
        running_plan = []
        for jid, plan in self.book.plans.items():
            if plan.segments[0][0] > slot:
                continue  # not started
            pl = plan.at(slot)
            if pl:
                prev = previous_allocations.get(jid, ())
                if self.p.stay_put and prev and prev != pl and len(prev) == len(pl):
                    pl = self.book.stay_put(plan, slot, prev, nodes)
                out[jid] = pl
                js = active[jid]
                if len(pl) < js.job.max_workers:
                    running_plan.append(js)
        return out, running_plan

    def offer(self, js: JobState, nodes: Nodes, slot: int, current: tuple = (), *, must: bool = False,
              quick: float | None = None, on_time: bool = False) -> Plan | None:
        """One offer: the job's best plan at current prices, or None when none exists or, unless
        the plan is taken whatever its payoff (``must``), when an upper bound on the payoff shows
        that none can pay (``bound_first``: the search is skipped, with the same outcome).
        ``quick`` is the job's ``quick_bound`` when the decision computed it already. With
        ``on_time`` (the caller refuses a plan that is ``too_late``), the search is skipped too
        when the bound shows that no paying plan finishes by ``on_time_by``: under overload most
        re-offers end in that refusal, and their plans still pay, so the first bound cannot skip
        them (Alibaba trace, seed 0: the cell's time 106 s -> 40 s, the same decisions)."""
        remaining = planned_remaining(js, nodes.now_s, self.p.stop_converged)
        by = math.inf if must else self.on_time_by(js, nodes)
        if by is None:
            return None  # (nothing left to earn: no plan may admit it, ``too_late``)
        end_s = self.horizon_end_s(js, nodes)
        win = bounds = None
        if not must and self.p.bound_first:
            found = self.bounds.window_if_it_can_pay(js.job, remaining, nodes, slot, end_s, quick,
                                                     by if on_time else math.inf)  # (a plan found after it is refused)
            if found is None:
                self.bound_skips += 1
                return None
            win, bounds = found
        return self.search(js.job, remaining, nodes, slot, horizon_end_s=end_s, win=win, current=current,
                           ran_before=js.first_start_s is not None, w_bounds=bounds, earliest=js.job_id in self.overdue,
                           late=js.job_id not in self.outlived)

    def earliest_finish_s(self, js: JobState, nodes: Nodes, slot: int, current: tuple = ()) -> tuple[float, float]:
        """(When ``js`` could finish at the earliest as the ledger stands, without its own plan:
        the search's first-finishing plan whatever its payoff, inf when it has no window; the
        search's step, s: plans start on steps, so that finish is known to within one)."""
        end_s = self.horizon_end_s(js, nodes)
        win = self.planner.window(nodes, slot, end_s)
        plan = self.search(js.job, planned_remaining(js, nodes.now_s, self.p.stop_converged), nodes, slot,
                           horizon_end_s=end_s, win=win, current=current, ran_before=js.first_start_s is not None,
                           earliest=True)
        return (math.inf if plan is None else plan.finish_s), win.step_len_s

    def search(self, job: Job, remaining: float, nodes: Nodes, slot: int, **kw) -> Plan | None:
        """The plan search (``PlanSearch.search``): the one entry point of every offer."""
        return self.planner.search(job, remaining, nodes, slot, **kw)

    def wakeup_s(self, now_s: float, slot_s: float) -> float | None:
        """The next slot in which a committed plan runs (the simulator must not stop before)."""
        nxt = [max(plan.first_slot, int(now_s // slot_s) + 1) for plan in self.plans.values()
               if plan.last_slot * slot_s > now_s]
        return min(nxt) * slot_s if nxt else None


def slot_of(nodes: Nodes) -> int:
    """The slot a decision at ``now_s`` plans from: the one it lies in. Deciding at events
    (mid-slot) must not round up to the next slot: the current slot's commitments still run."""
    return math.floor(nodes.now_s / nodes.slot_s + 1e-9)


@register
class Oasis(Gadget):
    """OASiS (INFOCOM'18) as a baseline: the same primal-dual machinery, blind to ring placement.

    It prices GPUs only, takes the cheapest GPUs wherever they are, and plans every ring as if
    it crossed servers (``ring_speed=placement``: at the speed of the GPUs it took); the
    simulated world still runs the rings where they were placed."""

    name = "oasis"
    Params = OasisParams
    ring_aware = False

    @property
    def rings_crossing(self) -> bool:
        return self.p.ring_speed == "crossing"
