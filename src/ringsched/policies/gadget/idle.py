"""What the ledger leaves idle for lending: per server, the GPUs free now and over each window
of the next slots, and the NIC shares. Lending (``lending.py``) reads it and takes from it; it
never writes the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class IdleCapacity:
    """Per server: GPUs idle in this slot (``now_free``), idle over the whole lookahead too
    (``free``, at most ``now_free``) and idle over each shorter window of k slots, 1 < k < the
    lookahead (``mid[k - 2]``: what a backfilled ring that ends within k slots may take); the
    same for the NIC share, now and over the lookahead. Lending takes from it. The fields are
    numpy arrays, or Python lists inside the per-job loop (``as_lists``): that loop reads and
    writes single servers, which lists do several times faster."""

    free: object
    now_free: object
    bfree: object
    now_bfree: object
    nic_share: float
    mid: object  # (lookahead - 2) x servers
    _rows: list = field(init=False, repr=False)  # the GPU windows, shortest first (the fields above, never rebound)

    def __post_init__(self):
        self._rows = [self.now_free, *self.mid, self.free]

    @classmethod
    def of(cls, ledger, capacity: np.ndarray, slot: int, lookahead: int, nic_share: float) -> "IdleCapacity":
        used_g, used_b = ledger.window(slot, slot + lookahead)
        by_window = np.maximum(capacity[:, None] - np.maximum.accumulate(used_g, axis=1), 0)  # servers x k
        return cls(free=by_window[:, -1].copy(), now_free=by_window[:, 0].copy(), bfree=1.0 - used_b.max(axis=1),
                   now_bfree=1.0 - used_b[:, 0], nic_share=nic_share, mid=by_window[:, 1:-1].T.copy())

    def as_lists(self) -> "IdleCapacity":
        return IdleCapacity(self.free.tolist(), self.now_free.tolist(), self.bfree.tolist(), self.now_bfree.tolist(),
                            self.nic_share, self.mid.tolist())

    def assign(self, other: "IdleCapacity") -> None:
        """Write ``other``'s values (lists) back into these arrays (``mid`` may have no rows: a
        lookahead under 3 slots has no window between now and its end)."""
        for name in ("free", "now_free", "bfree", "now_bfree", "mid"):
            mine = getattr(self, name)
            mine[:] = np.asarray(getattr(other, name), dtype=mine.dtype).reshape(mine.shape)

    def within(self, slots: int):
        """GPUs per server idle over the next ``slots`` slots (the lookahead's ``free`` at or
        past it)."""
        rows = self._rows
        return rows[min(max(slots, 1), len(rows)) - 1]

    def fits_now(self, pairs: tuple, multi: bool) -> bool:
        """Whether a placement's GPUs (and NIC share, if it crosses servers) are idle in this slot."""
        if not multi:
            s, c = pairs[0]
            return self.now_free[s] >= c
        nic = self.nic_share
        return all(self.now_free[s] >= c and self.now_bfree[s] >= nic for s, c in pairs)

    def fits(self, pairs: tuple, multi: bool, now_only: bool) -> bool:
        """Whether a placement is idle in this slot (``now_only``) or over the lookahead too, its
        NIC shares included when it crosses servers."""
        free = self.now_free if now_only else np.minimum(self.free, self.now_free)
        if any(free[s] < c for s, c in pairs):
            return False
        if multi:
            bfree = self.now_bfree if now_only else np.minimum(self.bfree, self.now_bfree)
            return all(bfree[s] >= self.nic_share - 1e-12 for s, _ in pairs)
        return True

    def take_now(self, pairs: tuple, multi: bool) -> int:
        """Lend a placement's GPUs in this slot (every window stays at most ``now_free``);
        returns the change of ``free``'s total."""
        return self.take_within(pairs, multi, 1)

    def take_for_lookahead(self, pairs: tuple, multi: bool) -> None:
        """Lend a placement taken from what stays idle over the lookahead: its GPUs and, when it
        crosses servers, its NIC shares, in this slot and over the lookahead."""
        self.take_within(pairs, multi, len(self.mid) + 2)

    def take_within(self, pairs: tuple, multi: bool, slots: int) -> int:
        """Lend a placement taken from what stays idle over the next ``slots`` slots (a ring that
        ends within them): its GPUs leave every window up to ``slots``; a longer window keeps
        at most what is left of that one. Its NIC shares, when it crosses servers, likewise
        (known now and over the whole lookahead only). Returns the change of ``free``'s total."""
        rows = self._rows
        k = min(max(slots, 1), len(rows))
        change = 0
        for s, c in pairs:
            before = rows[-1][s]
            _take(rows, s, c, k)
            change += int(rows[-1][s] - before)
            if multi:
                _take([self.now_bfree, self.bfree], s, self.nic_share, 1 if k == 1 else 2)
        return change

    def give_back_now(self, pairs: tuple, multi: bool) -> None:
        """Return a placement lent in this slot to this slot's idle GPUs (and NIC shares), when
        its job moves elsewhere. Only this slot's row: the longer windows keep what the take
        left, at most the truth (a take need not be undone exactly: a window capped by a
        shorter one lost no more than the take)."""
        for s, c in pairs:
            self.now_free[s] += c
            if multi:
                self.now_bfree[s] += self.nic_share

    def take_extra(self, extra: np.ndarray, new_srv) -> None:
        """Lend ``extra`` GPUs per server on top of a placement (arrays); ``new_srv``: the servers
        that newly need the ring's NIC share (None: the ring stays on one server)."""
        self.now_free -= extra
        np.minimum(self.free, self.now_free, out=self.free)
        np.minimum(self.mid, self.now_free[None, :], out=self.mid)
        if new_srv is not None:
            self.now_bfree[new_srv] -= self.nic_share
            np.minimum(self.bfree, self.now_bfree, out=self.bfree)


def _take(rows: list, s: int, amount, k: int) -> None:
    """``amount`` leaves server ``s`` in the first ``k`` windows (``rows``, shortest first); each
    longer window keeps at most what the k-th has left."""
    for row in rows[:k]:
        row[s] -= amount
    for row in rows[k:]:
        row[s] = min(row[s], rows[k - 1][s])
