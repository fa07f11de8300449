"""Greedy ring embedding, vectorised over the planning steps of one job (design brief, 4.3).

For ``w`` workers in a step: one server if any can host the whole ring (the cheapest such
server: intra-server bandwidth, no NIC reservation); otherwise, among the sets of fewest
servers that have free GPUs and the ring's NIC share free, the cheapest (exactly:
``fewest.cheapest_fewest``), the workers of each server contiguous on the ring. Computing all steps at once with numpy is what makes
the plan search cheap enough to run at every arrival.

``ring_aware=False`` is OASiS' view (parameter-server jobs): GPUs only, the cheapest GPUs
anywhere, no NIC reservation.
"""

from __future__ import annotations

import numpy as np

from ringsched.policies.gadget.fewest import cheapest_fewest_steps


class StepEmbeddings:
    """For one worker count w: per step the cost, servers k, most workers on a server d, and
    whether it fits; ``counts(step)`` rebuilds the placement of any step from the most compact
    of three forms (placements are rebuilt for the few steps of the chosen plan only):
    ``fixed`` (one placement in every step), ``single`` (a one-server ring's server per step,
    -1 where the ring spans servers) and ``order``/``take`` (per step the server order used
    and the workers taken from each server in that order)."""

    __slots__ = ("w", "cost", "k", "d", "ok", "order", "take", "single", "fixed", "head", "progress")

    def __init__(self, w: int, cost: np.ndarray, k: np.ndarray, d: np.ndarray, ok: np.ndarray,
                 order: np.ndarray | None = None, take: np.ndarray | None = None, *,
                 single: np.ndarray | None = None, fixed: np.ndarray | None = None):
        self.w, self.cost, self.k, self.d, self.ok = w, cost, k, d, ok
        self.order, self.take = order, take  # (steps, S) each
        self.single = single  # (steps,)
        self.fixed = fixed  # (S,) workers per server
        self.head: tuple[int, np.ndarray] | None = None  # (steps, counts): the first steps run on counts
        self.progress: np.ndarray | None = None

    @property
    def constant(self) -> bool:
        """The same placement in every step."""
        return self.fixed is not None and self.head is None

    def counts(self, step: int, num_servers: int) -> np.ndarray:
        if self.head is not None and step < self.head[0]:
            return self.head[1].copy()
        if self.fixed is not None:
            return self.fixed.copy()
        c = np.zeros(num_servers, dtype=np.int64)
        if self.single is not None and self.single[step] >= 0:
            c[self.single[step]] = self.w
        else:
            c[self.order[step]] = self.take[step]
        return c


def embed(w: int, free: np.ndarray, gprice: np.ndarray, bfree: np.ndarray, bprice: np.ndarray,
          bw_frac: float, *, ring_aware: bool = True) -> StepEmbeddings:
    """``free``/``gprice``/``bfree``/``bprice`` are (servers, steps): free GPUs, price of one GPU
    for the step, free NIC fraction, price of this ring's NIC share for the step."""
    n = free.shape[1]
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
        return StepEmbeddings(w, c1[np.arange(n), s1], np.ones(n, dtype=np.int64), np.full(n, w, dtype=np.int64),
                              np.ones(n, dtype=bool), single=s1)
    # multi-server: the cheapest ring over the fewest servers with room for the ring's NIC share
    elig = (bfree.T >= bw_frac - 1e-12) & (fT > 0)
    f = np.where(elig, fT, 0)
    cost, take = cheapest_fewest_steps(w, f, np.ascontiguousarray(gT, dtype=float),
                                       np.ascontiguousarray(bprice.T, dtype=float), has1)
    order = np.broadcast_to(np.arange(f.shape[1]), take.shape)
    ok = np.isfinite(cost)
    k = (take > 0).sum(axis=1)
    d = take.max(axis=1)
    single = None
    if has1.any():  # those steps get the cheapest single server: all w workers there
        single = np.where(has1, s1, -1)
        cost = np.where(has1, c1[np.arange(n), s1], cost)
        k = np.where(has1, 1, k)
        d = np.where(has1, w, d)
        ok = ok | has1
    return StepEmbeddings(w, np.where(ok, cost, np.inf), k, d, ok, order, take, single=single)
