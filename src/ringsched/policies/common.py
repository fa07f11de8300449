"""The shared "scheduling then placement" step of priority-ordered policies.

Most baselines differ only in the order in which they serve jobs and how many workers each
gets; this module turns such an order into placements, keeping running jobs where they are
whenever possible (a move costs a checkpoint-restart).
"""

from __future__ import annotations

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
        for js, w in order:
            prev = previous.get(js.job_id, ())
            if prev and _keepable(prev, len(prev), free):
                out[js.job_id] = prev
                np.subtract.at(free, list(prev), 1)
        blocked = False
        for js, w in order:
            if js.job_id in out or blocked or w <= 0:
                continue
            p = consolidated(w, free, rack)
            if p is None:
                blocked = not backfill
                continue
            out[js.job_id] = p
            np.subtract.at(free, list(p), 1)
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
