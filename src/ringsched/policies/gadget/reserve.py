"""The reservation against starvation (``GadgetParams.reserve_wide``): one job with nothing
left to earn that needs more than one GPU is planned at any payoff at a time, so the GPUs it
needs are reserved in the ledger (which lending leaves alone) instead of being lent to each
newcomer first. Part of GADGET's decision loop (``policy.py``), kept apart as ``displace.py``
is: a rule with its own reasons."""

from __future__ import annotations

from ringsched.policies.common import queue_key


def reservation(policy, jobs, nodes, slot: int, previous_allocations) -> set[str]:
    """The job to plan at any payoff now (``reserve_wide``), as a job behind its plan: the
    first by priority and arrival of the jobs with nothing left to earn (``on_time_by`` None)
    that need more than one GPU, have no plan, do not run and have waited at least their
    time alone (a job that merely looks dead because its estimate is too large is not
    reserved for at once: under ``lognormal:1`` that cost Philly VC 7f04ca 2% of its
    utility); none while an earlier one's plan stands, and once a slot while its search
    finds no plan. Such a job is lent GPUs only after every job that can still earn, and
    while 1-GPU jobs keep running on lent GPUs, the GPUs it needs are never idle at once: on
    synthetic 16x8 at load 2.1 (rigid), two 16-GPU jobs of half an hour waited from 85 ks to
    237 ks. A plan reserves its GPUs in the ledger, which lending does not touch: EASY
    backfilling's reservation for the queue's head, here for the jobs whose utility no
    longer orders them."""
    held, tried = policy.reserved
    plans = policy.book.plans
    if not policy.p.reserve_wide or held in plans:
        return set()
    if held is not None and slot == tried and held not in previous_allocations and \
            any(js.job_id == held for js in jobs):
        return set()  # (its last search found no plan)
    waited = [js for js in jobs if js.job.min_workers > 1 and js.job_id not in plans
              and js.job_id not in previous_allocations and nodes.now_s - js.job.arrival_s >= policy.alone_s(js, nodes)]
    for js in sorted(waited, key=queue_key):  # (the costlier test last, in queue order)
        if policy.on_time_by(js, nodes) is None:
            policy.reserved = (js.job_id, slot)
            return {js.job_id}
    return set()
