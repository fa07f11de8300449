"""GADGET's offer loop: which jobs without a plan are offered one in a decision, in what order,
and when a deferred job is due again.

Functions of the policy (``policy.Gadget``), as ``displace.py`` and ``reserve.py``: the retry
state (``last_try``, ``tried_epoch``, ``misses``) stays on the policy, where ``objective_terms``
and the re-estimates also reset it.
"""

from __future__ import annotations

import heapq

from ringsched.policies.base import JobState, Nodes
from ringsched.policies.common import priority_first
from ringsched.policies.gadget.displace import displace
from ringsched.policies.gadget.objective_terms import plan_overdue, planned_remaining


def offer_unplanned(policy, jobs, active: dict, nodes: Nodes, slot: int, behind: set, previous_allocations,
                    promised: set) -> None:
    """Offer jobs without a plan: those behind first, then new ones, then deferred ones, each by
    priority, then shortest first (``offer_key``). The ``promised`` (of those behind) are planned
    at any payoff; every other job is admitted by its payoff and on time (``Gadget.optimize``
    says which are promised: not a job behind a plan made on an estimate that has since
    failed). A deferred job is offered again every
    retry_every slots, doubling the wait after each offer that failed (up to 2^retry_backoff),
    and at most once a slot when reservations were released (``retry_due``): re-offers rarely
    succeed and were most of GADGET's time on long traces.
    The first ``displace`` offers that fail (with ``displace_late``, also those whose plan
    starts after this decision) may each take a longer job's near GPUs (``displace.py``)."""
    offers = decision_offers(policy, jobs, nodes, slot, behind, promised)
    quick = quick_bounds(policy, offers, nodes, slot)
    swaps = policy.p.displace  # (``displace.py``: a failed offer may take a longer job's near GPUs)
    for js, last, must in offers:
        jid = js.job_id
        policy.last_try[jid] = slot
        policy.tried_epoch[jid] = policy.book.epoch
        plan = policy.offer(js, nodes, slot, previous_allocations.get(jid, ()), must=must, quick=quick.get(jid),
                            on_time=True)
        if plan is not None and not must and policy.too_late(js, plan, nodes):
            plan = None  # (admission on time: a later plan would hold slots that later arrivals need)
        if jid in policy.overdue and (plan is None or plan.first_slot > slot) and \
                plan_overdue(policy, js, plan, nodes, slot, active, previous_allocations):
            policy.guarded.add(jid)
            quick = {}  # (a release lowered prices: the decision's bounds may no longer hold)
            continue
        paying = plan is not None and (plan.payoff > 0 or must)
        later = paying and not must and policy.p.displace_late and plan.first_slot > slot
        if (later or not paying) and swaps > 0:
            swaps -= 1
            vids = displace(policy, js, nodes, slot, active, previous_allocations)
            if vids is not None:
                policy.displaced.extend((vid, jid) for vid in vids)
                policy.misses.pop(jid, None)
                quick = {}  # (a release lowered prices: the decision's bounds may no longer hold)
                continue
        if paying:
            policy.book.commit(jid, plan)
            if jid in policy.overdue:
                policy.guarded.add(jid)
            else:
                policy.guarded.discard(jid)
            policy.misses.pop(jid, None)
        elif last is not None:
            policy.misses[jid] = policy.misses.get(jid, 0) + 1


def decision_offers(policy, jobs, nodes: Nodes, slot: int, behind: set, promised: set) -> list[tuple]:
    """This decision's offers, (job, its last try, taken at any payoff: the ``promised``), at
    most ``max_plans_per_slot``: the jobs behind their plans, then new ones, then deferred ones
    due for a retry, each group by ``offer_key``."""
    cap = policy.p.max_plans_per_slot
    groups: tuple[list, list, list, list] = ([], [], [], [])  # behind (new, tried), new, tried
    plans = policy.book.plans
    for js in jobs:
        jid = js.job_id
        if jid not in plans:
            groups[(0 if jid in behind else 2) + (jid in policy.last_try)].append(js)
    key = offer_key(policy, nodes)
    first = sorted(groups[0], key=key) + sorted(groups[1], key=key) + sorted(groups[2], key=key)
    ready = [js for js in groups[3] if retry_due(policy, js.job_id, slot)]
    offers = []
    for js in first[:cap] + heapq.nsmallest(max(0, cap - len(first)), ready, key=key):
        must = js.job_id in promised or (js.first_start_s is not None and policy.p.admission == "strict")
        offers.append((js, policy.last_try.get(js.job_id), must))
    return offers


def quick_bounds(policy, offers: list[tuple], nodes: Nodes, slot: int) -> dict[str, float]:
    """The cheap payoff bounds of the offers that may be skipped, at once (``bound_first``)."""
    if not policy.p.bound_first:
        return {}
    free_to_skip = [js for js, _, must in offers if not must]
    vals = policy.bounds.quick_bounds([(js.job, planned_remaining(js, nodes.now_s, policy.p.stop_converged),
                                        policy.horizon_end_s(js, nodes))
                                       for js in free_to_skip], nodes, slot)
    return {js.job_id: float(v) for js, v in zip(free_to_skip, vals)}


def offer_key(policy, nodes: Nodes):
    """The order of one decision's offers: priority (a strict class), then the remaining time
    alone (``alone_s``, from the work the job is shown), shortest first, then arrival
    (``common.priority_first``, as srtf orders its queue).
    Plans are committed in offer order, so the first offer gets the earliest, cheapest slots:
    by arrival, a job of two days that came a minute earlier was planned ahead of a job of
    an hour, where a preemptive shortest-remaining-first order runs the short one first and
    delays the long one by little (docs/suite-history.md, twenty-fifth round)."""
    def key(js: JobState):
        return priority_first(js, (policy.alone_s(js, nodes), js.job.arrival_s, js.index))
    return key


def retry_due(policy, jid: str, slot: int) -> bool:
    """Whether a deferred job is offered again now: every retry_every slots (doubled after each
    failed offer, up to 2^retry_backoff times), and at most once a slot after a release."""
    last = policy.last_try[jid]
    wait = policy.p.retry_every << min(policy.misses.get(jid, 0), policy.p.retry_backoff)
    return not (slot - last < wait and (policy.tried_epoch.get(jid) == policy.book.epoch or slot == last))
