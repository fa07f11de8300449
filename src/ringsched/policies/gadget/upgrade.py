"""Lending a job idle GPUs of a faster type (``type_upgrade``; docs/theory.md, section 11).

A job whose plan runs it on a slow GPU type in this slot is moved, for the slot, onto GPUs of a
faster type that the ledger leaves idle over the lending lookahead, with the same worker count,
when that pays for the restarts (one to move, one to move back, as a top-up counts them). Its
commitment is untouched (its own GPUs stay reserved, idle); it keeps the faster GPUs while they
stay idle, and when its plan later moves it to that type (a plan that changes type, or the
next segment), ``CommitmentBook.stay_put`` keeps it where it runs. A job on lent GPUs of a
slow type (no plan, or before its plan starts) moves by the same rule (``upgrade_lent``):
lending keeps a lent ring where it runs, so one lent on T4 while the H200s were busy stayed
there for life. A job that starts now pays a restart wherever it starts, so its move is not
charged one (``upgrade_starts``, ``gain.start_gain``), and a one-server ring that ends before a
commitment takes idle GPUs of the faster type may take them, as lending backfills
(``_backfilled``). Lending outside the plans is outside the guarantee anyway (section 9)."""

from __future__ import annotations

import numpy as np

from ringsched.embedding import consolidated
from ringsched.policies.gadget.gain import lend_gain, ring_rate, slots_to_end, start_gain


def upgrade(lender, views, gpu_of, jobs, nodes, slot: int, out: dict, previous, cap) -> None:
    """Move the jobs of ``out`` (in order) that run their plan, or a lent ring
    (``upgrade_lent``), on a slower type than idle GPUs of another type, each onto the type of
    largest gain (over the lookahead, else backfilled); ``views`` are the cluster's types
    (``gpu_types.type_views``), ``gpu_of`` each server's, ``cap`` (arrays) is updated. A lent
    ring that moves gives its GPUs back for this slot."""
    book = lender.book
    by_id = {js.job_id: js for js in jobs}
    rooms = _idle(cap, views)
    for jid, pl in list(out.items()):
        plan = book.plans.get(jid)
        committed = plan.at(slot) if plan is not None else ()
        if not pl or (committed != pl if committed else not lender.p.upgrade_lent):
            continue  # lent on top of its plan already, or lent (no plan, or before it starts)
        prev = previous.get(jid, ())
        if keeps_faster(lender, by_id[jid], prev, pl, nodes, cap, gpu_of):
            move, k = prev, 1  # upgraded before: it stays while the faster GPUs are idle
        else:
            best = _best_move(lender, by_id[jid], pl, prev, views, gpu_of[pl[0]], nodes, slot, cap, rooms)
            if best is None:
                continue
            move, k = best
        _, _, multi, pairs = book.sparse(move)
        if k is None:
            cap.take_for_lookahead(pairs, multi)
        else:
            cap.take_within(pairs, multi, k)
        if not committed:  # its lent GPUs are free again in this slot
            _, _, was_multi, was = book.sparse(pl)
            cap.give_back_now(was, was_multi)
        out[jid] = move
        rooms = _idle(cap, views)


def keeps_faster(lender, js, prev: tuple, pl: tuple, nodes, cap, gpu_of) -> bool:
    """Whether a job placed on ``pl`` keeps ``prev``, where it runs now: a ring of the same
    width on another, faster type, idle in this slot (an earlier upgrade, kept while idle)."""
    if not prev or len(prev) != len(pl) or gpu_of[prev[0]] == gpu_of[pl[0]] or not _fits(lender.book, cap, prev, True):
        return False
    return ring_rate(nodes.speed, js, prev, nodes.now_s) > ring_rate(nodes.speed, js, pl, nodes.now_s)


def _best_move(lender, js, pl: tuple, prev: tuple, views, here: str, nodes, slot: int, cap, rooms):
    """(placement, k) of the best ring of the same width on another type than ``here`` that
    gains ``top_up_gain``: on GPUs idle over the lookahead (k None), else backfilled for k slots
    (``_backfilled``); None when none does. A job that starts now pays a restart wherever it
    starts, so its move is charged none (``upgrade_starts``, ``start_gain``); a running job
    nearly done is not moved."""
    idle, room, room_now = rooms
    w = len(pl)
    elsewhere = [v for v, r in zip(views, room) if v.gpu != here and r >= w]
    backfill = lender.p.backfill and any(v.gpu != here and r >= w for v, r in zip(views, room_now))
    if not (elsewhere or backfill):
        return None  # no other type has room for the ring
    book, now = lender.book, nodes.now_s
    restart = lender.p.restart_for(nodes)
    r0 = ring_rate(nodes.speed, js, pl, now)
    rem = js.remaining_at(now)
    starts = lender.p.upgrade_starts and not prev
    if rem <= 0 or (not starts and rem / r0 <= restart + nodes.slot_s):
        return None  # nearly done: a restart cannot pay
    gain_of = start_gain if starts else lend_gain
    window = lender.p.lend_lookahead * nodes.slot_s
    best = None
    for v in elsewhere:
        cand = consolidated(w, np.where(v.mask, idle, 0))
        if cand is None or (len(set(cand)) > 1 and not _fits(book, cap, cand, False)):
            continue
        gain = gain_of(r0, ring_rate(nodes.speed, js, cand, now), rem, restart, window)
        if gain >= lender.p.top_up_gain and (best is None or gain > best[0]):
            best = (gain, cand, None)
    if best is None and backfill:
        best = _backfilled(lender, js, views, here, w, r0, rem, nodes, slot, cap, gain_of)
    return None if best is None else best[1:]


def _backfilled(lender, js, views, here: str, w: int, r0: float, rem: float, nodes, slot: int, cap, gain_of):
    """(gain, placement, k) of a one-server ring of another type on GPUs idle now that a
    commitment takes only after the job ends there (within k slots of the lookahead; its work
    at the estimates' pessimistic factor, a restart included), as lending backfills
    (``lending.py _backfill``); None when none gains ``top_up_gain``. On T4 + H200, jobs of
    seconds on H200 planned onto T4s (minutes there) found no H200 idle over the whole lookahead."""
    look = lender.p.lend_lookahead
    restart = lender.p.restart_for(nodes)
    work = rem * lender.errors.pessimistic()
    best = None
    for v in views:
        if v.gpu == here:
            continue
        cand = consolidated(w, np.where(v.mask, cap.within(1), 0))
        if cand is None or len(set(cand)) > 1:
            continue
        if (k := slots_to_end(js, cand, work, nodes, slot, restart, look)) >= look:
            continue  # (the lookahead's rule, above, decides a longer run)
        cand = consolidated(w, np.where(v.mask, cap.within(k), 0))
        if cand is None or len(set(cand)) > 1:
            continue
        gain = gain_of(r0, ring_rate(nodes.speed, js, cand, nodes.now_s), rem, restart, look * nodes.slot_s)
        if gain >= lender.p.top_up_gain and (best is None or gain > best[0]):
            best = (gain, cand, k)
    return best


def _idle(cap, views):
    """GPUs idle over the lookahead per server, their number on each type, and the number
    idle now on each type."""
    idle = np.minimum(cap.free, cap.now_free)
    now = np.asarray(cap.now_free)
    return idle, [int(idle[v.mask].sum()) for v in views], [int(now[v.mask].sum()) for v in views]


def _fits(book, cap, pl: tuple, now_only: bool) -> bool:
    """Whether placement ``pl`` is idle in this slot (``now_only``) or over the lookahead too."""
    _, _, multi, pairs = book.sparse(pl)
    return cap.fits(pairs, multi, now_only)
