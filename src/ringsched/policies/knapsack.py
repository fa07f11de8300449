"""The count knapsack of pollux and sia, compiled (numba): pick one count per job maximising the
sum of per-job values under one GPU budget, as a dynamic program over (job, GPUs used).

Compiled because both policies run it every slot on runs spanning weeks of simulated time
(docs/suite-history.md, the suite's runtime); it is the exact twin of the numpy program it replaced
(``tests/test_pollux_sia.py`` checks the two agree, ties included): the same additions in the
same order, the first maximum among a job's counts (its smallest count among ties, as
``np.argmax``), and among the final budgets the first maximum (the fewest GPUs).
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _dp(vals, cnts, starts, budget):  # pragma: no cover - compiled
    n = len(starts) - 1
    best = np.full(budget + 1, -np.inf)
    best[0] = 0.0
    new = np.empty(budget + 1)
    pick = np.zeros((n, budget + 1), dtype=np.int64)
    for j in range(n):
        lo, hi = starts[j], starts[j + 1]
        for g in range(budget + 1):
            top = -np.inf
            at = lo
            for i in range(lo, hi):
                src = g - cnts[i]
                cand = best[src] + vals[i] if src >= 0 else -np.inf
                if i == lo or cand > top:
                    top = cand
                    at = i
            new[g] = top
            pick[j, g] = at
        best[:] = new
    g = 0
    for b in range(1, budget + 1):
        if best[b] > best[g]:
            g = b
    out = np.zeros(n, dtype=np.int64)
    for j in range(n - 1, -1, -1):
        out[j] = cnts[pick[j, g]]
        g -= out[j]
    return out


@_jit
def restarted(scaled, cnts, starts, now, factor):  # pragma: no cover - compiled
    """``scaled`` with job j's entries at counts other than ``now[j]`` times ``factor[j]``
    (``now[j] < 0``: not running, none changed): pollux's restart discount, the same products
    as numpy's."""
    out = scaled.copy()
    for j in range(len(starts) - 1):
        if now[j] >= 0:
            for i in range(starts[j], starts[j + 1]):
                if cnts[i] != now[j]:
                    out[i] = scaled[i] * factor[j]
    return out


def solve(vals: np.ndarray, cnts: np.ndarray, starts: np.ndarray, budget: int) -> list[int]:
    """Chosen count per job; job j's options are entries ``starts[j]`` to ``starts[j + 1]``
    of ``vals`` / ``cnts`` (its values and GPU counts)."""
    if len(starts) < 2:
        return []
    out = _dp(np.asarray(vals, dtype=np.float64), np.asarray(cnts, dtype=np.int64),
              np.asarray(starts, dtype=np.int64), int(budget))
    return out.tolist()


def starts_of(lens) -> np.ndarray:
    """Where each job's options start in the flat arrays, and the end."""
    out = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=out[1:])
    return out


def flat(values, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-job value and count lists as the flat arrays ``solve`` reads."""
    vals = np.concatenate([np.asarray(v, dtype=np.float64) for v in values]) if len(values) else np.zeros(0)
    cnts = np.fromiter((w for c in counts for w in c), dtype=np.int64, count=len(vals))
    return vals, cnts, starts_of([len(c) for c in counts])


def solve_numpy(values, counts, budget) -> list[int]:
    """The numpy program ``solve`` replaced, kept as its reference: tests check the two agree,
    ``benchmarks/pollux_sia_speed.py`` times one against the other."""
    best = np.full(budget + 1, -np.inf)
    best[0] = 0.0
    g_all = np.arange(budget + 1)
    choices = []
    for vals, cnt in zip(values, counts):
        c = np.asarray(cnt)
        src = g_all[None, :] - c[:, None]
        cand = np.where(src >= 0, best[np.maximum(src, 0)] + np.asarray(vals)[:, None], -np.inf)
        pick = np.argmax(cand, axis=0)
        best = cand[pick, g_all]
        choices.append(pick)
    g = int(np.argmax(best))
    out = [0] * len(values)
    for j in range(len(values) - 1, -1, -1):
        out[j] = counts[j][int(choices[j][g])]
        g -= out[j]
    return out
