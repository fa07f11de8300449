"""Exponential resource prices and the ledger of committed resources (design brief, section 4).

Every (server, slot) has two resources: its GPUs and its NIC bandwidth. Usage is kept as a
fraction z in [0, 1] of capacity, and the price of one whole resource at usage z is

    P(z) = L * ((1 + U/L) ** (z / zeta) - 1)

so it is 0 when idle, grows exponentially, and reaches U (the most utility any job can earn
per unit of one resource) at z = zeta. A plan pays sum over resources of (its share of the
resource) x P(current usage). docs/theory.md proves the competitive ratio for
zeta = 1 - delta_max (delta_max: the largest share of one resource a job takes in one slot);
zeta = 1 is the practical default.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ringsched.policies.gadget import kernels


@dataclass(frozen=True)
class PriceFunction:
    L: float
    U: float
    zeta: float = 1.0

    def __post_init__(self) -> None:
        if not (self.L > 0 and self.U > self.L and 0 < self.zeta <= 1):
            raise ValueError(f"need 0 < L < U and 0 < zeta <= 1, got L={self.L}, U={self.U}, zeta={self.zeta}")

    @functools.cached_property
    def log_base(self) -> float:  # (cached: prices are taken at every offer)
        return float(np.log1p(self.U / self.L))

    def __call__(self, z):
        z = np.minimum(np.asarray(z, dtype=float), 1.0)
        return self.L * np.expm1(self.log_base * z / self.zeta)

    def theta(self, delta_max: float) -> float:
        """The growth factor of the proof: ((1 + U/L) ** (delta_max / zeta) - 1) / delta_max."""
        return float(np.expm1(self.log_base * delta_max / self.zeta) / delta_max)


class Ledger:
    """Committed GPUs and NIC bandwidth (fractions) per (server, absolute slot), growing on demand."""

    def __init__(self, gpus: np.ndarray, nic_Bps: np.ndarray, initial_slots: int = 1024):
        self.gpus = np.asarray(gpus, dtype=np.int64)
        self.nic_Bps = np.asarray(nic_Bps, dtype=float)
        n = self.gpus.size
        self.gpu_used = np.zeros((n, initial_slots), dtype=np.int32)
        self.bw_used = np.zeros((n, initial_slots), dtype=float)  # fraction of the NIC
        # per server, the end of the latest GPU (row 0) and NIC (row 1) reservation ever made
        # there: every later slot is 0 (price windows do not read them)
        self.front = np.zeros((2, n), dtype=np.int64)
        self._zp: np.ndarray | None = None  # prefix sums of the used GPU share (``usage_prefix``)
        self._zbase = 0

    def _ensure(self, end_slot: int) -> None:
        have = self.gpu_used.shape[1]
        if end_slot <= have:
            return
        new = max(end_slot, 2 * have)
        for name in ("gpu_used", "bw_used"):
            old = getattr(self, name)
            grown = np.zeros((old.shape[0], new), dtype=old.dtype)
            grown[:, :have] = old
            setattr(self, name, grown)

    def window(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(GPUs used, bandwidth fraction used) for slots [start, end): views, do not modify."""
        self._ensure(end)
        return self.gpu_used[:, start:end], self.bw_used[:, start:end]

    def first_overflow(self, start: int, end: int, counts: np.ndarray, bw_frac: np.ndarray, capacity: np.ndarray,
                       less: tuple | None = None) -> int | None:
        """The first slot in [start, end) where adding ``counts`` GPUs and ``bw_frac`` of the NICs
        (after removing ``less`` = (from slot, counts, bw_frac) from that slot on) would exceed
        ``capacity`` or a NIC, or None. Only the servers the usage touches are read."""
        self._ensure(end)
        if less is None:
            at, less_g, less_b = end, counts, bw_frac  # (nothing removed)
        else:
            at, less_g, less_b = less
        c = kernels.first_overflow(self.gpu_used, self.bw_used, start, end, np.asarray(counts, dtype=np.int64),
                                   np.asarray(bw_frac, dtype=float), np.asarray(capacity, dtype=np.int64), at,
                                   np.asarray(less_g, dtype=np.int64), np.asarray(less_b, dtype=float))
        return None if c < 0 else int(c)

    def usage_prefix(self, start: int, end: int) -> np.ndarray:
        """(servers, end - start + 1): column i is the sum of each server's used GPU share over
        the slots before start + i, from some earlier base slot, so the mean usage of any block
        of slots in [start, end) is one difference. Kept current by every change instead of
        being recomputed for every plan offer; rebuilt when ``start`` moves far from the base."""
        zp, base = self._zp, self._zbase
        if zp is None or start < base or start - base > 4096:
            base, zp = start, np.zeros((self.gpus.size, 1))
        have = base + zp.shape[1] - 1  # sums cover slots [base, have)
        if end > have:
            to = max(end, have + 1024)
            used = self.window(have, to)[0]
            grown = np.empty((zp.shape[0], zp.shape[1] + to - have))
            grown[:, :zp.shape[1]] = zp
            np.cumsum(used / self.gpus[:, None], axis=1, out=grown[:, zp.shape[1]:])
            grown[:, zp.shape[1]:] += zp[:, -1:]
            zp = grown
        self._zp, self._zbase = zp, base
        return zp[:, start - base:end - base + 1]

    def _shift_prefix(self, start: int, end: int, rows: np.ndarray, delta: np.ndarray) -> None:
        zp, base = self._zp, self._zbase
        lo, hi = max(start, base), min(end, base + zp.shape[1] - 1)
        if hi <= lo:
            return
        kernels.shift_prefix(zp, lo - base, hi - base, rows, np.asarray(delta, dtype=float))

    def add_range(self, start: int, end: int, counts: np.ndarray, bw_frac: np.ndarray, sign: int = 1) -> None:
        """Add (sign=-1: remove) the same usage to every slot in [start, end)."""
        if end <= start:
            return
        self._ensure(end)
        if self._zp is not None:
            rows = np.flatnonzero(counts)
            self._shift_prefix(start, end, rows, sign * counts[rows] / self.gpus[rows])
        counts, bw_frac = np.asarray(counts, dtype=np.int64), np.asarray(bw_frac, dtype=float)
        kernels.add_usage(self.gpu_used, self.bw_used, start, end, counts, bw_frac, sign, self.front)

    def add(self, slot: int, counts: np.ndarray, bw_frac: np.ndarray, sign: int = 1) -> None:
        self.add_range(slot, slot + 1, counts, bw_frac, sign)
