"""Lending a planned job idle GPUs of a faster type (``type_upgrade``; docs/theory.md, section 11).

A job whose plan runs it on a slow GPU type in this slot is moved, for the slot, onto GPUs of a
faster type that the ledger leaves idle over the lending lookahead, with the same worker count,
when that pays for the restarts (one to move, one to move back, as a top-up counts them). Its
commitment is untouched (its own GPUs stay reserved, idle); it keeps the faster GPUs while they
stay idle, and when its plan later moves it to that type (a plan that changes type, or the
next segment), ``CommitmentBook.stay_put`` keeps it where it runs. Lending outside the plans is
outside the guarantee anyway (section 9)."""

from __future__ import annotations

import numpy as np

from ringsched.embedding import consolidated
from ringsched.policies.gadget.gpu_types import type_views


def upgrade(lender, jobs: dict, nodes, slot: int, out: dict, previous, cap) -> None:
    """Move the planned jobs of ``out`` (in commit order) that run their plan on a slower type
    than idle GPUs of another type, each onto the type of largest gain; ``cap`` (arrays) is
    updated."""
    views = type_views(nodes.cluster)
    if views[0].mask is None:
        return
    book, speed = lender.book, nodes.speed
    gpu_of = [s.gpu for s in nodes.cluster.servers]
    restart = lender.p.restart_for(nodes)
    window = lender.p.lend_lookahead * nodes.slot_s
    for jid, pl in list(out.items()):
        plan = book.plans.get(jid)
        if plan is None or not pl or plan.at(slot) != pl:
            continue  # lent or topped up already, or no commitment in this slot
        job = jobs[jid].job
        w = len(pl)
        r0 = w * job.local_bsz / speed.step_time_on(job.model, job.local_bsz, pl)
        prev = previous.get(jid, ())
        if prev and len(prev) == w and gpu_of[prev[0]] != gpu_of[pl[0]] and _fits(cap, prev, now_only=True):
            _take(cap, prev)  # upgraded before: it stays while the faster GPUs are idle
            out[jid] = prev
            continue
        rem = jobs[jid].remaining_at(nodes.now_s)
        if rem <= 0 or rem / r0 <= restart + nodes.slot_s:
            continue  # nearly done: a restart cannot pay
        best = None
        for v in views:
            if v.gpu == gpu_of[pl[0]]:
                continue
            free = np.where(v.mask, np.minimum(cap.free, cap.now_free), 0)
            cand = consolidated(w, free)
            if cand is None or (len(set(cand)) > 1 and not _fits(cap, cand, now_only=False)):
                continue
            r1 = w * job.local_bsz / speed.step_time_on(job.model, job.local_bsz, cand)
            t_new = restart + rem / r1
            gain = (rem / r0 - t_new) / (rem / r0) if t_new <= window else \
                (r1 * (window - restart) - r0 * restart) / (r0 * window) - 1.0
            if gain >= lender.p.top_up_gain and (best is None or gain > best[0]):
                best = (gain, cand)
        if best is not None:
            _take(cap, best[1])
            out[jid] = best[1]


def _fits(cap, pl: tuple, now_only: bool) -> bool:
    srv, cnt = np.unique(np.asarray(pl), return_counts=True)
    free = cap.now_free if now_only else np.minimum(cap.free, cap.now_free)
    if np.any(free[srv] < cnt):
        return False
    if srv.size > 1:
        bfree = cap.now_bfree if now_only else np.minimum(cap.bfree, cap.now_bfree)
        return bool(np.all(bfree[srv] >= cap.nic_share - 1e-12))
    return True


def _take(cap, pl: tuple) -> None:
    srv, cnt = np.unique(np.asarray(pl), return_counts=True)
    extra = np.zeros(cap.now_free.size, dtype=cap.now_free.dtype)
    extra[srv] = cnt
    cap.take_extra(extra, srv if srv.size > 1 else None)
