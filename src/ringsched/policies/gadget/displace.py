"""Displacement: a job whose offer failed may take the near GPUs of a longer job's plan when
that gains more utility than it costs the longer job (issue 15: short jobs behind plans).

A committed plan is GADGET's promise to its job, but under load it also keeps every later
job off the GPUs it holds, however short: a preemptive shortest-remaining-first order runs
the short job at once and delays the long one by little. One swap is tried per failed offer
(with ``displace_late``, also per offer whose plan starts after this decision: the fairness
objective), at most ``displace`` per decision:

1. the victim: of the plans that hold GPUs within the lending lookahead and whose jobs are
   longer (remaining time alone) than the offered job and of no higher priority, the one that loses the least utility
   when delayed by the offered job's time alone (its loss is taken on its own run alone from
   now, not on its plan's finish: lending and top-ups finish jobs ahead of their plans);
2. the offered job's best plan as things stand (taken at any payoff) is what it would get
   without the swap; the victim's plan is released from now and the job offered again;
3. the swap stays when that plan pays (positive payoff at the prices without the victim) and
   raises the job's utility by more than the victim loses when delayed by the plan's length
   and a restart; the victim is then offered again at once, from where it runs (a move pays
   the restart), taken at any payoff, as a job behind its plan. Otherwise the victim's plan
   is committed again from now, as it was;
4. the swap is undone as well when it pushes the victim's earliest finish (the search's
   first-finishing plan, before and after the job's plan is committed) later than the job's
   run, a restart and one step of the plans explain, and that later finish costs the victim
   more than the job gains. The test of step 3 takes the victim's run alone, which under
   overload it rarely gets: where the job's plan leaves it no room before the next plans,
   the victim finishes far later (Philly VC ``2869ce``, 400 jobs on 4x8, seed 0: the victims
   of 111 swaps ended with a median 0.01 of their value). Delays within a step are the plans'
   resolution, not the ledger's, and stay judged by step 3 alone;
5. a job of several workers for which the victim's GPUs do not make room (no paying plan
   without it) may take the plans of several victims instead, the least loss first, released
   one by one until its plan pays, at most as many as its fewest workers (each frees a GPU at
   least). The swap stays when the job's gain exceeds the victims' losses summed (each delayed
   by the plan's length and a restart); each victim is then offered again at once, and the
   swap is undone when one of them has no window. On a server full of 1-GPU plans no one of
   them makes room for a short 8-GPU job (``syn-2.1-rigid`` on 2x8 under ``deadline``: such
   jobs waited for whole servers, 11 of 33 deadlines met over six seeds against OASiS' 18).

Outside the guarantee (docs/theory.md, section 9): a displaced plan is a broken promise, and
the release lowers prices. Off (``displace=0``) in the theorem's configuration.
"""

from __future__ import annotations

import math

from ringsched.policies.gadget.book import Plan


def finish_loss(js, from_s: float, to_s: float) -> float:
    """The utility ``js`` loses when its completion moves from ``from_s`` to ``to_s`` (inf: it
    has no window to complete in)."""
    u, a = js.job.utility, js.job.arrival_s
    return float(u(from_s - a)) - (0.0 if math.isinf(to_s) else float(u(to_s - a)))


def candidates(policy, js, nodes, slot: int, active: dict) -> list[tuple]:
    """Step 1's possible victims of ``js``, the least loss first: (loss, state, plan, its
    finish alone from now)."""
    book = policy.book
    short = policy.alone_s(js, nodes)
    near = slot + policy.p.lend_lookahead
    found = []
    for vid, plan in book.plans.items():
        vs = active.get(vid)
        if vs is None or vid in policy.overdue or vid in policy.guarded or plan.first_slot > near \
                or vs.job.priority > js.job.priority:
            continue  # (priority is a strict class: a job never takes a higher one's GPUs; the guard's plans stay)
        long = policy.alone_s(vs, nodes)
        if long <= short:
            continue
        end = nodes.now_s + long
        found.append(((finish_loss(vs, end, end + short), book.commit_seq(vid)), vs, plan, end))
    return sorted(found, key=lambda c: c[0])


def victim(policy, js, nodes, slot: int, active: dict, found: list | None = None):
    """(victim's state, its plan, its finish alone from now, ``js``'s time alone) for ``js``, or
    None (step 1); ``found``: its ``candidates`` when known."""
    found = candidates(policy, js, nodes, slot, active) if found is None else found
    if not found:
        return None
    # no gain of the job's (its utility at its earliest finish) can pay for the least loss (a
    # delay of its time alone and a restart): most failed offers under load end here
    vs, plan, end = found[0][1:]
    short = policy.alone_s(js, nodes)
    earliest = float(js.job.utility(nodes.now_s + short - js.job.arrival_s))
    if earliest <= finish_loss(vs, end, end + short + policy.p.restart_for(nodes)):
        return None
    return vs, plan, end, short


def restore(book, jid: str, old: Plan, slot: int, mark: tuple) -> None:
    """Commit ``old`` again from ``slot`` on (what ``release`` freed), and the book's release
    counts as they were at ``mark`` (an undone swap freed nothing)."""
    segs = [(max(a, slot), z, pl) for a, z, pl in old.segments if z > slot]
    book.commit(jid, Plan(segs, old.finish_s, old.payoff, old.cost))
    book.reset_release_counts(mark)


def displace(policy, js, nodes, slot: int, active: dict, previous_allocations) -> list[str] | None:
    """Try one swap for ``js``, whose offer failed: the displaced jobs when it stays (every job
    planned), else None (the book as it was)."""
    found = candidates(policy, js, nodes, slot, active)
    first = victim(policy, js, nodes, slot, active, found)
    if first is None:
        return None
    vs, old, end_v, short = first
    book, jid, vid = policy.book, js.job_id, vs.job_id
    u, a = js.job.utility, js.job.arrival_s
    here = previous_allocations.get(jid, ())
    mark = book.release_counts()
    book.release(vid, slot)
    plan = policy.offer(js, nodes, slot, here)
    if plan is None or plan.payoff <= 0:
        restore(book, vid, old, slot, mark)
        if js.job.min_workers > 1 and len(found) > 1:  # (step 5: a wide job, several victims)
            return displace_several(policy, js, nodes, slot, previous_allocations, found[:js.job.min_workers], short)
        return None
    # what the job gets without the swap: its best plan with the victim's plan in place
    restore(book, vid, old, slot, mark)
    stay = policy.offer(js, nodes, slot, here, must=True)
    without = 0.0 if stay is None else float(u(stay.finish_s - a))
    old = book.plans[vid]
    book.release(vid, slot)  # (the book is as it was when ``plan`` was found)
    # (a plan's progress starts at its first slot's start: mid-slot, the job cannot finish
    # before its time alone from now)
    done = max(plan.finish_s, nodes.now_s + short)
    delay = done - nodes.now_s + policy.p.restart_for(nodes)
    gain = float(u(done - a)) - without
    if gain <= finish_loss(vs, end_v, end_v + delay):
        restore(book, vid, old, slot, mark)
        return None
    there = previous_allocations.get(vid, ())
    before, step_s = policy.earliest_finish_s(vs, nodes, slot, there)
    book.commit(jid, plan)
    again = policy.offer(vs, nodes, slot, there, must=True)
    after = policy.earliest_finish_s(vs, nodes, slot, there)[0]
    # undone when the victim has no window, or when the swap pushes its earliest finish further
    # than the job's run and a step of the plans explain and that loses more than the job gains
    if again is None or (after - before > delay + step_s and gain <= finish_loss(vs, before, after)):
        book.release(jid, slot)
        restore(book, vid, old, slot, mark)
        return None
    book.commit(vid, again)
    return [vid]


def displace_several(policy, js, nodes, slot: int, previous_allocations, found: list, short: float):
    """Step 5: the victims, least loss first, that together make room for ``js``'s plan (at most
    its fewest workers of them: each frees a GPU at least), when its gain exceeds their losses
    summed; each is offered again at once. The displaced jobs, or None (the book as it was)."""
    book, jid = policy.book, js.job_id
    u, a = js.job.utility, js.job.arrival_s
    here = previous_allocations.get(jid, ())
    mark = book.release_counts()
    taken, plan = [], None
    for _, vs, old, end in found:
        book.release(vs.job_id, slot)
        taken.append((vs, old, end))
        if len(taken) > 1:
            plan = policy.offer(js, nodes, slot, here)
            if plan is not None and plan.payoff > 0:
                break

    def undo():
        for vs, old, _ in taken:
            restore(book, vs.job_id, old, slot, mark)

    undo()
    if plan is None or plan.payoff <= 0:
        return None
    stay = policy.offer(js, nodes, slot, here, must=True)  # (what the job gets without the swap)
    without = 0.0 if stay is None else float(u(stay.finish_s - a))
    taken = [(vs, book.plans[vs.job_id], end) for vs, _, end in taken]
    for vs, _, _ in taken:
        book.release(vs.job_id, slot)
    done = max(plan.finish_s, nodes.now_s + short)
    delay = done - nodes.now_s + policy.p.restart_for(nodes)
    if float(u(done - a)) - without <= sum(finish_loss(vs, end, end + delay) for vs, _, end in taken):
        undo()
        return None
    book.commit(jid, plan)
    again = []
    for vs, _, _ in taken:
        replan = policy.offer(vs, nodes, slot, previous_allocations.get(vs.job_id, ()), must=True)
        if replan is None:  # a victim with no window: the swap is undone
            for vid in again:
                book.release(vid, slot)
            book.release(jid, slot)
            undo()
            return None
        book.commit(vs.job_id, replan)
        again.append(vs.job_id)
    return again
