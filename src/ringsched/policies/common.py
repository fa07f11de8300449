"""The shared "scheduling then placement" step of priority-ordered policies.

Most baselines differ only in the order in which they serve jobs and how many workers each
gets; this module turns such an order into placements, keeping running jobs where they are
whenever possible (a move costs a checkpoint-restart).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Mapping, Sequence

import numpy as np

from ringsched.embedding import consolidated
from ringsched.perfmodel.speed import Placement
from ringsched.policies.base import Allocations, JobState, Nodes


def _keepable(prev: Placement, workers: int, free: np.ndarray) -> bool:
    if len(prev) != workers or not prev:
        return False
    counts = np.bincount(np.asarray(prev), minlength=free.size)
    return bool(np.all(counts <= free))


def allocate_in_order(order: Sequence[tuple[JobState, int]], nodes: Nodes,
                      previous: Mapping[str, Placement], *, preemptive: bool = True,
                      backfill: bool = True) -> Allocations:
    """Serve ``(job, workers)`` pairs in priority order.

    Preemptive: the highest-priority pairs that fit in the total free GPUs are chosen first;
    chosen jobs that were running at the same size keep their servers; the rest are placed
    consolidated in order; then, with ``backfill``, lower-priority jobs fill what is left.
    Non-preemptive: running jobs keep their placements and waiting ones are placed in order;
    without ``backfill`` the first job that does not fit blocks all behind it (strict FIFO).
    """
    free = nodes.capacity.copy()
    rack = nodes.cluster.rack_index if nodes.cluster.racks else None
    out: Allocations = {}
    if not preemptive:
        fl = free.tolist()
        for jid, prev in previous.items():  # running jobs stay where they are
            if take_placement(fl, prev):
                out[jid] = prev
        free = np.asarray(fl, dtype=np.int64)
        left = int(free.sum())
        for js, w in order:
            if left == 0:
                break
            if w <= 0 or js.job_id in out:
                continue
            p = consolidated(w, free, rack) if w <= left else None
            if p is None:
                if not backfill:
                    break  # strict FIFO: the head of the queue blocks the rest
                continue
            out[js.job_id] = p
            take_placement(free, p)
            left -= w
        return out

    budget = int(free.sum())
    chosen: list[tuple[JobState, int]] = []
    rest: list[tuple[JobState, int]] = []
    for js, w in order:
        if 0 < w <= budget:
            chosen.append((js, w))
            budget -= w
        elif w > 0:
            rest.append((js, w))
            if not backfill:
                break
    for js, w in chosen:  # keep running jobs in place
        prev = previous.get(js.job_id, ())
        if _keepable(prev, w, free):
            out[js.job_id] = prev
            np.subtract.at(free, list(prev), 1)
    for js, w in chosen + (rest if backfill else []):
        if js.job_id in out:
            continue
        p = consolidated(w, free, rack)
        if p is not None:
            out[js.job_id] = p
            np.subtract.at(free, list(p), 1)
    return out


def queue_key(js: JobState) -> tuple[int, float, int]:
    """The order of waiting jobs every policy starts from: higher priority first, then by
    arrival, then by index (a total order). Priority is a strict class, as Slurm's: a policy
    never offers GPUs to a job before one of higher priority (docs/policies.md, "Priority")."""
    return (-js.job.priority, js.job.arrival_s, js.index)


def in_queue_order(jobs: Sequence[JobState]) -> Sequence[JobState]:
    """``jobs``, which the simulator and the controller list by arrival, in ``queue_key`` order:
    as they are when no job has a priority (no sort, so a long queue is read only as far as
    the GPUs last)."""
    if any(js.job.priority for js in jobs):
        return sorted(jobs, key=queue_key)
    return jobs


def priority_first(js: JobState, key: tuple) -> tuple:
    """A policy's own order ``key`` of ``js`` (remaining time, attained service ...) within
    its priority class: the sort key of policies that do not serve jobs by arrival."""
    return (-js.job.priority,) + key


def tenant_of(js: JobState) -> str:
    """The job's tenant for fair-share policies; a job without one is a tenant on its own."""
    return js.job.tenant or f"\0{js.job_id}"


def running_rate_sps(js: JobState, nodes: Nodes, placement: Placement) -> float:
    """Planned samples/s of ``js`` on ``placement`` (its actual shape, not a consolidated one)."""
    j = js.job
    return nodes.speed.throughput_sps(j.model, j.local_bsz, nodes.speed.shape(placement))


def take_placement(free: np.ndarray, placement: Placement) -> bool:
    """Take ``placement``'s GPUs out of ``free`` if they are all free there (True); else
    leave ``free`` unchanged (False). An empty placement is never taken."""
    if not placement:
        return False
    counts: dict[int, int] = {}
    for s in placement:
        counts[s] = counts.get(s, 0) + 1
    for s, c in counts.items():
        if free[s] < c:
            return False
    for s, c in counts.items():
        free[s] -= c
    return True


def take_all(free, placements: Sequence[Placement]) -> list[bool]:
    """``[take_placement(free, p) for p in placements]``, in one numpy step when they all fit
    together (the usual case: the previous allocations of a valid decision)."""
    from itertools import chain

    if placements:
        flat = np.fromiter(chain.from_iterable(placements), dtype=np.int64)
        if flat.size:
            need = np.bincount(flat, minlength=len(free))
            have = np.asarray(free)
            if need.size == have.size and bool(np.all(need <= have)):
                left = have - need
                free[:] = left if isinstance(free, np.ndarray) else left.tolist()
                return [bool(p) for p in placements]
    return [take_placement(free, p) for p in placements]


def allocate_in_order_fast(order: Sequence[tuple[JobState, int]], nodes: Nodes,
                           previous: Mapping[str, Placement], *, preemptive: bool = True,
                           backfill: bool = True) -> Allocations:
    """The same allocations as ``allocate_in_order`` (tests/test_baselines.py checks it), much
    faster on long queues. Preemptive: every pair that fits in the GPUs left is chosen, and
    every chosen pair can be placed (each fits in the free total, and ``consolidated`` only
    fails when it does not), so a pair passed over never fits later and backfilling places
    nothing more: ``order`` is read only until the GPUs are all spoken for. The running jobs
    to keep are checked and taken in one numpy step, and a job is only offered to
    ``consolidated`` when the free GPUs in total could hold it. ``order`` is read once, in
    order, so a generator saves building pairs for a long queue that is never reached."""
    free = nodes.capacity.copy()
    rack = nodes.cluster.rack_index if nodes.cluster.racks else None
    out: Allocations = {}
    get = previous.get
    if preemptive:
        budget = int(free.sum())
        todo = []
        for js, w in order:
            if budget == 0:
                break
            if 0 < w <= budget:
                todo.append((js.job.job_id, w))
                budget -= w
            elif w > 0 and not backfill:
                break
        keep = [(jid, p) for jid, w in todo if len(p := get(jid, ())) == w]
    else:
        todo = [(js.job.job_id, w) for js, w in order]
        keep = [(jid, p) for jid, _ in todo if (p := get(jid, ()))]
    for (jid, p), ok in zip(keep, take_all(free, [p for _, p in keep])):
        if ok:
            out[jid] = p
    total = int(free.sum())
    blocked = False
    fit = _BestFit(free)
    for jid, w in todo:
        if total == 0:
            break
        if jid in out or blocked or w <= 0:
            continue
        if w > total:
            p = None
        else:
            s = fit.single(w)
            if s is not None:
                p = (s,) * w
            elif rack is None:
                p = fit.fewest(w)
            else:
                p = consolidated(w, np.asarray(fit.free), rack)
        if p is None:
            blocked = not preemptive and not backfill
            continue
        out[jid] = p
        fit.take(p)
        total -= w
    return out


class _BestFit:
    """Free GPUs per server bucketed by count: ``consolidated`` without racks (one server: the
    fullest that can host the ring; else the fewest servers, most free first; lowest index on
    ties) without numpy, for long queues of small jobs."""

    def __init__(self, free: np.ndarray):
        self.free = [int(x) for x in free]
        top = max(self.free, default=0)
        self.buckets: list[list[int]] = [[] for _ in range(top + 1)]
        for s, c in enumerate(self.free):  # ascending: each bucket starts sorted
            self.buckets[c].append(s)

    def single(self, w: int) -> int | None:
        b = self.buckets
        for c in range(w, len(b)):
            if b[c]:
                return b[c][0]
        return None

    def fewest(self, w: int) -> Placement:
        """``w`` workers (at most the free total) on the servers with the most free GPUs."""
        take: list[tuple[int, int]] = []
        for c in range(len(self.buckets) - 1, 0, -1):
            for s in self.buckets[c]:
                n = min(c, w)
                take.append((s, n))
                w -= n
                if w == 0:
                    return tuple(s for s, n in sorted(take) for _ in range(n))
        raise ValueError("more workers than free GPUs")

    def take(self, placement: Placement) -> None:
        counts: dict[int, int] = {}
        for s in placement:
            counts[s] = counts.get(s, 0) + 1
        for s, n in counts.items():
            c = self.free[s]
            self.buckets[c].remove(s)
            insort(self.buckets[c - n], s)
            self.free[s] = c - n
