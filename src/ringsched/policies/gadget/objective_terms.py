"""What the objectives (docs/objectives.md) change in GADGET's decisions, kept in one place.

* convergence (``GadgetParams.stop_converged``): a job's work is planned up to its estimated
  convergence point (``Job.converge_samples``), not the epochs its user typed; the world
  stops the job there (the objective's stop rule), so the plan's reservations match the work
  that will run;
* fairness (``rho_guard``): a job about to pass the guard's rho is planned whatever its payoff,
  ahead of plans that have not started yet (``make_room``)."""

from __future__ import annotations

from ringsched.policies.base import JobState
from ringsched.policies.gadget.displace import restore


def planned_remaining(js: JobState, now_s: float, stop_converged: bool) -> float:
    """The samples a plan for ``js`` must still provide: what is left to the job's estimated
    convergence point when GADGET takes the stop and the job has not passed it, else what is
    left of its work (the estimate the world shows)."""
    rem = js.remaining_at(now_s)
    c = js.job.converge_samples
    if not stop_converged or c is None:
        return rem
    left = min(c, js.job.work_samples) - js.done_at(now_s)
    return left if left > 0 else rem


def overdue(jobs, now_s: float, rho_guard: float, planned) -> set[str]:
    """Jobs without a plan whose finish-time fairness is about to pass ``rho_guard`` (fairness,
    ``GadgetParams.rho_guard``; 0: none): they have waited (rho_guard - 1) x their isolated
    time since arrival, so even run alone from now their rho would exceed the guard. GADGET
    plans them whatever the payoff, as jobs behind their plan: a price-driven admission alone
    keeps deferring the widest jobs under load (a 16-GPU job on 2x8 waited 61 h, rho 143)."""
    if rho_guard <= 0:
        return set()
    return {js.job_id for js in jobs
            if js.job_id not in planned and now_s - js.job.arrival_s >= (rho_guard - 1.0) * js.isolated_s}


def past_commitments_s(plans, slot_s: float) -> float:
    """The end of the last committed plan: an overdue job's window reaches past it, so that
    a plan exists even where every GPU it needs is committed until then."""
    return max((p.last_slot + 1 for p in plans.values()), default=0) * slot_s


def make_room(policy, js, plan, nodes, slot: int, active: dict, previous_allocations) -> bool:
    """Whether an overdue job (fairness) was planned ahead of plans that have not started yet.
    Those plans (of jobs the guard did not plan, of no higher priority: a strict class, as in
    displacement) are released and the job gets the plan that
    finishes first, if it finishes before ``plan`` (what the ledger gave it as committed, or
    None; else the book is left as it was). Each released plan is committed again where the
    ledger still has room; a job whose plan no longer fits is left without one and offered at
    the next decision as a new job. An unstarted plan has served its job nothing yet, and a job
    past the guard has waited nine times its time alone: under load, plans of 1-GPU jobs reach
    hours ahead and leave no slot with every GPU free (a 16-GPU job on 2x8, overdue at 27 ks,
    got a plan at 206 ks: rho 126). Re-planning the displaced jobs at once, at any payoff, cost
    Jain's index (``syn-2.1-rigid`` 0.949 -> 0.928; docs/objectives.md)."""
    book = policy.book
    movable = sorted((vid for vid, p in book.plans.items() if p.first_slot > slot and vid not in policy.guarded
                      and active[vid].job.priority <= js.job.priority), key=book.commit_seq)
    if not movable:
        return False
    mark = (book.epoch, list(book.freed))
    olds = {vid: book.plans[vid] for vid in movable}
    for vid in movable:
        book.release(vid, slot)
    better = policy.offer(js, nodes, slot, previous_allocations.get(js.job_id, ()), must=True)
    if better is None or (plan is not None and better.finish_s >= plan.finish_s):
        for vid in movable:
            restore(book, vid, olds[vid], slot, mark)
        return False
    book.commit(js.job_id, better)
    for vid in movable:
        if book.fits(olds[vid]):
            book.commit(vid, olds[vid])
        else:
            policy.last_try.pop(vid, None)  # (a new job to ``_offer_unplanned``: offered at the next decision)
            policy.misses.pop(vid, None)
    return True
