"""What the objectives (docs/objectives.md) change in GADGET's decisions, kept in one place.

* convergence (``GadgetParams.stop_converged``): a job's work is planned up to its estimated
  convergence point (``Job.converge_samples``), not the epochs its user typed; the world
  stops the job there (the objective's stop rule), so the plan's reservations match the work
  that will run;
* fairness (``rho_guard``): a job about to pass the guard's rho is planned whatever its payoff,
  ahead of plans that have not started yet (``make_room``) and, while it still does not start
  at once, of one plan the guard made when that lowers the worse rho (``guard_swap``);
  ``plan_overdue`` tries both."""

from __future__ import annotations

import math

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


def make_room(policy, js, plan, nodes, slot: int, active: dict, previous_allocations) -> list | None:
    """Plan an overdue job (fairness) ahead of plans that have not started yet; None when it
    was not (the book as it was), else the plans dropped for it, ``(job, plan, last_try,
    misses)`` in commit order (``plan_overdue`` may put them back). Those plans (of jobs the
    guard did not plan, of no higher priority: a strict class, as in displacement) are
    released and the job gets the plan that finishes first, if it finishes before ``plan``
    (what the ledger gave it as committed, or None; else the book is left as it was). Each
    released plan is committed again where the ledger still has room; a job whose plan no
    longer fits is left without one and offered at the next decision as a new job. An
    unstarted plan has served its job nothing yet, and a job past the guard has waited nine
    times its time alone: under load, plans of 1-GPU jobs reach hours ahead and leave no slot
    with every GPU free (a 16-GPU job on 2x8, overdue at 27 ks, got a plan at 206 ks: rho 126).
    Re-planning the displaced jobs at once, at any payoff, cost Jain's index
    (``syn-2.1-rigid`` 0.949 -> 0.928; docs/objectives.md)."""
    book = policy.book
    movable = sorted((vid for vid, p in book.plans.items() if p.first_slot > slot and vid not in policy.guarded
                      and active[vid].job.priority <= js.job.priority), key=book.commit_seq)
    if not movable:
        return None
    mark = book.release_counts()
    olds = {vid: book.plans[vid] for vid in movable}
    for vid in movable:
        book.release(vid, slot)
    better = policy.offer(js, nodes, slot, previous_allocations.get(js.job_id, ()), must=True)
    if better is None or (plan is not None and better.finish_s >= plan.finish_s):
        for vid in movable:
            restore(book, vid, olds[vid], slot, mark)
        return None
    book.commit(js.job_id, better)
    dropped = []
    for vid in movable:
        if book.fits(olds[vid]):
            book.commit(vid, olds[vid])
        else:  # (a new job to ``offers.offer_unplanned``: offered at the next decision)
            dropped.append((vid, olds[vid], policy.last_try.pop(vid, None), policy.misses.pop(vid, None)))
    return dropped


def _rho(js: JobState, finish_s: float) -> float:
    return (finish_s - js.job.arrival_s) / js.isolated_s


def guard_swap(policy, js, plan, nodes, slot: int, active: dict, previous_allocations) -> bool:
    """Whether an overdue job (fairness) whose earliest plan as things stand (``plan``; None:
    none) does not start now took the GPUs of a plan the guard made, started or not: of those
    that hold GPUs within the lending lookahead, whose jobs need longer alone than it and are
    of no higher priority, the one of the longest isolated time (a delay raises its rho the
    least). It stays when the worse of the two jobs' slowdowns (rho, by their plans' finishes)
    falls; the guarded job is planned again at once, at its earliest; otherwise the book (and
    ``policy.overdue``) is left as it was. ``make_room`` and displacement never move the
    guard's plans, so under a low guard they held every GPU: ``rho_guard=5`` on
    ``philly-0e4a51-small``, a burst of 3-minute jobs waited up to 360 ks behind plans of
    2-day jobs (worst rho 2,132)."""
    book = policy.book
    near, short = slot + policy.p.lend_lookahead, policy.alone_s(js, nodes)
    longer = [(active[v].isolated_s, book.commit_seq(v), v) for v, p in book.plans.items()
              if v in policy.guarded and v in active and p.first_slot <= near
              and active[v].job.priority <= js.job.priority and policy.alone_s(active[v], nodes) > short]
    if not longer:
        return False
    vid = max(longer)[2]  # (a delay raises rho by itself over the isolated time: least for the longest)
    vs, old = active[vid], book.plans[vid]
    before = max(math.inf if plan is None else _rho(js, plan.finish_s), _rho(vs, old.finish_s))
    mark = book.release_counts()
    book.release(vid, slot)
    mine = policy.offer(js, nodes, slot, previous_allocations.get(js.job_id, ()), must=True)
    if mine is None or mine.first_slot > slot:
        restore(book, vid, old, slot, mark)
        return False
    book.commit(js.job_id, mine)
    was_overdue = vid in policy.overdue
    policy.overdue.add(vid)  # (planned at its earliest, as the guard plans)
    again = policy.offer(vs, nodes, slot, previous_allocations.get(vid, ()), must=True)
    if not was_overdue:
        policy.overdue.discard(vid)
    if again is None or max(_rho(js, mine.finish_s), _rho(vs, again.finish_s)) >= before:
        book.release(js.job_id, slot)
        restore(book, vid, old, slot, mark)
        return False
    book.commit(vid, again)
    return True


def plan_overdue(policy, js, plan, nodes, slot: int, active: dict, previous_allocations) -> bool:
    """Whether an overdue job whose earliest plan (``plan``) does not start now was planned
    sooner: by ``make_room`` (plans not started moved), then, while its plan still does not
    start now, by ``guard_swap`` (a guard's plan pushed back). After a swap the plans that
    ``make_room`` dropped for the plan it replaced are committed again where they fit."""
    book, jid = policy.book, js.job_id
    dropped = make_room(policy, js, plan, nodes, slot, active, previous_allocations)
    roomed = dropped is not None
    current = book.plans[jid] if roomed else plan
    if current is not None and current.first_slot <= slot:
        return roomed
    mark = book.release_counts()
    if roomed:
        book.release(jid, slot)  # (the swap starts from the book without it; put back if none)
    if guard_swap(policy, js, current, nodes, slot, active, previous_allocations):
        for vid, old, last_try, misses in dropped or ():
            if book.fits(old):
                book.commit(vid, old)
                for table, value in ((policy.last_try, last_try), (policy.misses, misses)):
                    if value is not None:
                        table[vid] = value
        return True
    if roomed:
        restore(book, jid, current, slot, mark)  # (it has not started: committed as it was)
    return roomed
