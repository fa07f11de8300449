"""Consolidated placement: the fewest servers, best fit first.

The rigid baselines' placement (design brief, section 5): one server when one can host the
whole ring (the fullest such server, to keep large holes for large jobs), else the fewest
servers, taking those with the most free GPUs first. Ties go to the lower server index, so
the result is deterministic.
"""

from __future__ import annotations

import numpy as np

from ringsched.perfmodel.speed import Placement


def counts_to_placement(counts: np.ndarray) -> Placement:
    """Per-server worker counts -> sorted tuple of server indices."""
    idx = np.flatnonzero(counts)
    return tuple(int(s) for s in np.repeat(idx, counts[idx]))


def placement_counts(placement: Placement, num_servers: int) -> np.ndarray:
    return np.bincount(np.asarray(placement, dtype=np.int64), minlength=num_servers)


def consolidated(workers: int, free: np.ndarray, rack_index: np.ndarray | None = None) -> Placement | None:
    """Place ``workers`` on the fewest servers given free GPUs per server; None if they do not fit.

    With racks, a multi-server ring stays inside one rack when some rack can hold it (the
    fullest such rack's servers are used), since crossing an oversubscribed uplink is slow.
    """
    if workers <= 0:
        return ()
    if free.max() >= workers:  # best fit: the fullest server that can host the whole ring
        s = int(np.argmin(np.where(free >= workers, free, np.iinfo(np.int64).max)))
        return (s,) * workers
    if workers > int(free.sum()):
        return None
    if rack_index is not None and rack_index.size and rack_index.max() >= 0:
        best = None
        for r in np.unique(rack_index):
            members = np.flatnonzero(rack_index == r)
            if free[members].sum() >= workers:
                p = _fewest(workers, free, members)
                if best is None or (len(set(p)), free[members].sum()) < (len(set(best)), best_free):
                    best, best_free = p, free[members].sum()
        if best is not None:
            return best
    return _fewest(workers, free, np.arange(free.size))


def _fewest(workers: int, free: np.ndarray, members: np.ndarray) -> Placement:
    order = members[np.argsort(-free[members], kind="stable")]
    take = np.zeros_like(free)
    left = workers
    for s in order:
        if left == 0:
            break
        n = min(int(free[s]), left)
        take[s] = n
        left -= n
    return counts_to_placement(take)
