"""Greedy ring embedding, vectorised over the planning steps of one job (design brief, 4.3).

For ``w`` workers in a step: one server if any can host the whole ring (the cheapest such
server: intra-server bandwidth, no NIC reservation); otherwise the fewest servers that have
free GPUs and the ring's NIC share free, fullest first and cheapest among equals, the workers
of each server contiguous on the ring. Computing all steps at once with numpy is what makes
the plan search cheap enough to run at every arrival.

``ring_aware=False`` is OASiS' view (parameter-server jobs): GPUs only, the cheapest GPUs
anywhere, no NIC reservation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class StepEmbeddings:
    """For one worker count w: per step the cost, servers k, most workers on a server d, and
    whether it fits; ``order``/``take`` rebuild the placement of any step."""

    w: int
    cost: np.ndarray
    k: np.ndarray
    d: np.ndarray
    ok: np.ndarray
    order: np.ndarray  # (steps, S) server order used
    take: np.ndarray  # (steps, S) workers taken from each server in that order

    def counts(self, step: int, num_servers: int) -> np.ndarray:
        c = np.zeros(num_servers, dtype=np.int64)
        c[self.order[step]] = self.take[step]
        return c


def server_first(servers: np.ndarray, num_servers: int) -> np.ndarray:
    """(len(servers), num_servers) server orders with ``servers[i]`` first in row i: the order of
    a one-server ring (its workers are all taken from the first server)."""
    n = len(servers)
    rows = np.arange(n)
    order = np.tile(np.arange(num_servers), (n, 1))
    order[rows, servers] = order[rows, 0]
    order[rows, 0] = servers
    return order


def embed(w: int, free: np.ndarray, gprice: np.ndarray, bfree: np.ndarray, bprice: np.ndarray,
          bw_frac: float, *, ring_aware: bool = True) -> StepEmbeddings:
    """``free``/``gprice``/``bfree``/``bprice`` are (servers, steps): free GPUs, price of one GPU
    for the step, free NIC fraction, price of this ring's NIC share for the step."""
    S, n = free.shape
    fT, gT = free.T.astype(np.int64), gprice.T
    if not ring_aware:
        order = np.argsort(gT, axis=1, kind="stable")
        fs = np.take_along_axis(fT, order, axis=1)
        cs = np.cumsum(fs, axis=1)
        take = np.minimum(fs, np.maximum(0, w - (cs - fs)))
        cost = (take * np.take_along_axis(gT, order, axis=1)).sum(axis=1)
        ok = cs[:, -1] >= w
        return StepEmbeddings(w, np.where(ok, cost, np.inf), (take > 0).sum(axis=1), take.max(axis=1), ok, order, take)
    # one server when one can host the whole ring: the cheapest such server
    single = fT >= w
    has1 = single.any(axis=1)
    c1 = np.where(single, w * gT, np.inf)
    s1 = np.argmin(c1, axis=1)
    if has1.all():  # one server hosts the ring in every step (always for w = 1): no multi-server pass
        take = np.zeros((n, S), dtype=np.int64)
        take[:, 0] = w
        return StepEmbeddings(w, c1[np.arange(n), s1], np.ones(n, dtype=np.int64), np.full(n, w, dtype=np.int64),
                              np.ones(n, dtype=bool), server_first(s1, S), take)
    # multi-server: servers with room for the ring's NIC share, fullest first, then cheapest
    elig = (bfree.T >= bw_frac - 1e-12) & (fT > 0)
    f = np.where(elig, fT, 0)
    unit = gT + bprice.T / np.maximum(f, 1)
    order = np.lexsort((unit, -f), axis=-1)
    fs = np.take_along_axis(f, order, axis=1)
    cs = np.cumsum(fs, axis=1)
    take = np.minimum(fs, np.maximum(0, w - (cs - fs)))
    used = take > 0
    cost = (take * np.take_along_axis(gT, order, axis=1) + used * np.take_along_axis(bprice.T, order, axis=1)).sum(axis=1)
    ok = cs[:, -1] >= w
    k = used.sum(axis=1)
    d = take.max(axis=1)
    if has1.any():  # those steps get the cheapest single server: all w workers there
        rows = np.flatnonzero(has1)
        order = order.copy()
        take = take.copy()
        take[rows] = 0
        order[rows] = server_first(s1[rows], S)
        take[rows, 0] = w
        cost = np.where(has1, c1[np.arange(n), s1], cost)
        k = np.where(has1, 1, k)
        d = np.where(has1, w, d)
        ok = ok | has1
    return StepEmbeddings(w, np.where(ok, cost, np.inf), k, d, ok, order, take)
