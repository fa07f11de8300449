"""The count knapsack of pollux and sia, compiled (numba): pick one count per job maximising the
sum of per-job values under one GPU budget, as a dynamic program over (job, GPUs used).

Compiled because both policies run it every slot on runs spanning weeks of simulated time
(docs/suite.md, the suite's runtime); it is the exact twin of the numpy program it replaced
(``tests/test_pollux_sia.py`` checks the two agree, ties included): the same additions in the
same order, the first maximum among a job's counts (its smallest count among ties, as
``np.argmax``), and among the final budgets the first maximum (the fewest GPUs).
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _dp(vals, cnts, lens, budget):  # pragma: no cover - compiled
    n = vals.shape[0]
    best = np.full(budget + 1, -np.inf)
    best[0] = 0.0
    new = np.empty(budget + 1)
    pick = np.zeros((n, budget + 1), dtype=np.int64)
    for j in range(n):
        for g in range(budget + 1):
            top = -np.inf
            at = 0
            for i in range(lens[j]):
                src = g - cnts[j, i]
                cand = best[src] + vals[j, i] if src >= 0 else -np.inf
                if i == 0 or cand > top:
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
        out[j] = cnts[j, pick[j, g]]
        g -= out[j]
    return out


def solve(vals: np.ndarray, cnts: np.ndarray, lens: np.ndarray, budget: int) -> list[int]:
    """Chosen count per job; row j of ``vals`` / ``cnts`` holds its first ``lens[j]`` options
    (the rest is padding, never read)."""
    if not len(lens):
        return []
    out = _dp(np.ascontiguousarray(vals, dtype=np.float64), np.ascontiguousarray(cnts, dtype=np.int64),
              np.ascontiguousarray(lens, dtype=np.int64), int(budget))
    return [int(w) for w in out]


def padded(values, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-job value and count lists as the (jobs, longest) arrays ``solve`` reads."""
    lens = np.array([len(c) for c in counts], dtype=np.int64)
    flat_vals = np.concatenate([np.asarray(v, dtype=np.float64) for v in values]) if len(lens) else np.zeros(0)
    flat_cnts = np.fromiter((w for c in counts for w in c), dtype=np.int64, count=int(lens.sum()))
    return *scatter(flat_vals, flat_cnts, lens), lens


def scatter(flat_vals: np.ndarray, flat_cnts: np.ndarray, lens: np.ndarray, lead: int = 0):
    """The (jobs, longest) arrays ``solve`` reads from options listed job after job (``lens[j]``
    of job j), each row starting after ``lead`` columns of (count 0, value 0)."""
    rows = np.repeat(np.arange(len(lens)), lens)
    cols = lead + np.arange(len(rows)) - np.repeat(np.cumsum(lens) - lens, lens)
    vals = np.zeros((len(lens), lead + int(lens.max(initial=0))))
    cnts = np.zeros(vals.shape, dtype=np.int64)
    vals[rows, cols] = flat_vals
    cnts[rows, cols] = flat_cnts
    return vals, cnts


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
