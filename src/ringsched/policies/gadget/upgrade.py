"""Lending a job idle GPUs of a faster type (``type_upgrade``; docs/theory.md, section 11).

A job whose plan runs it on a slow GPU type in this slot is moved, for the slot, onto GPUs of a
faster type that the ledger leaves idle over the lending lookahead, with the same worker count,
when that pays for the restarts (one to move, one to move back, as a top-up counts them). Its
commitment is untouched (its own GPUs stay reserved, idle); it keeps the faster GPUs while they
stay idle, and when its plan later moves it to that type (a plan that changes type, or the
next segment), ``CommitmentBook.stay_put`` keeps it where it runs. A job with no plan that runs
on lent GPUs of a slow type moves by the same rule (``upgrade_lent``): lending keeps a lent
ring where it runs, so one lent on T4 while the H200s were busy stayed there for life. Lending
outside the plans is outside the guarantee anyway (section 9)."""

from __future__ import annotations

import numpy as np

from ringsched.embedding import consolidated
from ringsched.policies.gadget.gain import lend_gain, ring_rate


def upgrade(lender, views, gpu_of, jobs, nodes, slot: int, out: dict, previous, cap) -> None:
    """Move the jobs of ``out`` (in order) that run their plan, or a lent ring
    (``upgrade_lent``), on a slower type than idle GPUs of another type, each onto the type of
    largest gain; ``views`` are the
    cluster's types (``gpu_types.type_views``), ``gpu_of`` each server's, ``cap`` (arrays) is
    updated."""
    book, speed = lender.book, nodes.speed
    by_id = None
    idle, room = _idle(cap, views)
    restart = lender.p.restart_for(nodes)
    window = lender.p.lend_lookahead * nodes.slot_s
    for jid, pl in list(out.items()):
        plan = book.plans.get(jid)
        if not pl or (plan.at(slot) != pl if plan is not None else not lender.p.upgrade_lent):
            continue  # lent on top of its plan already, or no commitment in this slot
        w, here = len(pl), gpu_of[pl[0]]
        prev = previous.get(jid, ())
        moved = prev and len(prev) == w and gpu_of[prev[0]] != here and _fits(book, cap, prev, True)
        others = [v for v, r in zip(views, room) if v.gpu != here and r >= w]
        if not (moved or others):
            continue  # no other type has room for the ring
        if by_id is None:
            by_id = {js.job_id: js for js in jobs}
        js = by_id[jid]
        r0 = ring_rate(speed, js, pl, nodes.now_s)
        if moved and ring_rate(speed, js, prev, nodes.now_s) > r0:
            _take(book, cap, prev)  # upgraded before: it stays while the faster GPUs are idle
            out[jid] = prev
            idle, room = _idle(cap, views)
            continue
        rem = js.remaining_at(nodes.now_s)
        if rem <= 0 or rem / r0 <= restart + nodes.slot_s:
            continue  # nearly done: a restart cannot pay
        best = None
        for v in others:
            cand = consolidated(w, np.where(v.mask, idle, 0))
            if cand is None or (len(set(cand)) > 1 and not _fits(book, cap, cand, False)):
                continue
            gain = lend_gain(r0, ring_rate(speed, js, cand, nodes.now_s), rem, restart, window)
            if gain >= lender.p.top_up_gain and (best is None or gain > best[0]):
                best = (gain, cand)
        if best is not None:
            _take(book, cap, best[1])
            out[jid] = best[1]
            idle, room = _idle(cap, views)


def _idle(cap, views):
    """GPUs idle over the lookahead per server, and their number on each type."""
    idle = np.minimum(cap.free, cap.now_free)
    return idle, [int(idle[v.mask].sum()) for v in views]


def _fits(book, cap, pl: tuple, now_only: bool) -> bool:
    """Whether placement ``pl`` is idle in this slot (``now_only``) or over the lookahead too."""
    _, _, multi, pairs = book.sparse(pl)
    return cap.fits(pairs, multi, now_only)


def _take(book, cap, pl: tuple) -> None:
    """Lend ``pl``'s GPUs (and NIC shares, if it crosses servers) in this slot."""
    _, _, multi, pairs = book.sparse(pl)
    cap.take_now(pairs, multi)
