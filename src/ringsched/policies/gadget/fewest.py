"""The cheapest ring over the fewest servers, exactly (design brief 4.3; docs/theory.md).

When no server can host a ring of ``w`` workers alone, it spans k servers, k the fewest whose
free GPUs add up to w (the fullest k). Among all sets of k eligible servers (free GPUs, and the
ring's NIC share free) and all ways to put the w workers on them, this finds one of least cost

    sum over used servers s of  x_s g_s + n_s        (x_s workers at g_s a GPU, n_s its NIC share).

Given the set, the best assignment fills the servers in increasing g_s and leaves at most one
of them partly filled (any other assignment moves a worker to a cheaper GPU of the set at no
loss), so a 0/1 knapsack over servers with the state (servers chosen, workers placed, whether
the partly filled server was chosen) is exact. Only a few servers can matter (``candidates``):
for each capacity c the k + 1 cheapest full servers of c free GPUs, and for each count x the
k + 1 cheapest hosts of x workers (x g_s + n_s, f_s > x); any other server of an optimum can be
swapped for an unused one of these at no extra cost, since an optimum uses only k servers. So
the knapsack runs over at most 2 f_max (k + 1) servers whatever the cluster's size.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def fewest_servers(w, f):
    """The fewest servers whose free GPUs ``f`` add up to ``w`` (0: they cannot)."""
    srt = np.sort(f)[::-1]
    total = 0
    for i in range(srt.size):
        total += srt[i]
        if total >= w:
            return i + 1
    return 0


@_jit
def candidates(w, f, g, n, k):
    """The servers an optimum needs (see the module docstring), in index order."""
    mark = np.zeros(f.size, dtype=np.bool_)
    fmax = f.max()
    keep = k + 1
    for role in range(2):  # 0: full servers of c GPUs; 1: hosts of x < f_s workers
        for c in range(1, fmax + 1 if role == 0 else min(fmax - 1, w) + 1):
            idx = np.flatnonzero(f == c) if role == 0 else np.flatnonzero(f > c)
            if idx.size <= keep:
                mark[idx] = True
                continue
            cost = c * g[idx] + n[idx]
            order = np.argsort(cost, kind="mergesort")  # (stable: ties by index)
            mark[idx[order[:keep]]] = True
    return np.flatnonzero(mark)


@_jit
def cheapest_fewest(w, f, g, n, counts):
    """Workers per server (written into ``counts``) of a least-cost ring of ``w`` workers on the
    fewest eligible servers; ``f`` free GPUs (0 where not eligible), ``g`` price of one GPU,
    ``n`` price of the ring's NIC share. Returns the cost (inf when the GPUs do not suffice).
    Ties go to the servers of lowest index."""
    counts[:] = 0
    k = fewest_servers(w, f)
    if k == 0:
        return np.inf
    cand = candidates(w, f, g, n, k)
    C = cand.size
    best = np.full((2, k + 1, w + 1), np.inf)  # [partly filled chosen, servers, workers]
    best[0, 0, 0] = 0.0
    took = np.zeros((C, 2, k + 1, w + 1), dtype=np.int64)  # workers candidate i put into the state (0: none)
    came = np.zeros((C, 2, k + 1, w + 1), dtype=np.int64)  # ... from this "partly filled" flag
    for i in range(C):
        s = cand[i]
        fs = f[s]
        if fs <= 0:
            continue
        for j in range(k - 1, -1, -1):
            for q in range(w - 1, -1, -1):
                for fl in range(2):
                    base = best[fl, j, q]
                    if base == np.inf:
                        continue
                    if q + fs <= w:  # the server full
                        c = base + fs * g[s] + n[s]
                        if c < best[fl, j + 1, q + fs]:
                            best[fl, j + 1, q + fs] = c
                            took[i, fl, j + 1, q + fs] = fs
                            came[i, fl, j + 1, q + fs] = fl
                    if fl == 0:  # the one server left partly filled
                        for x in range(1, min(fs - 1, w - q) + 1):
                            c = base + x * g[s] + n[s]
                            if c < best[1, j + 1, q + x]:
                                best[1, j + 1, q + x] = c
                                took[i, 1, j + 1, q + x] = x
                                came[i, 1, j + 1, q + x] = 0
    fl = 0 if best[0, k, w] <= best[1, k, w] else 1
    cost = best[fl, k, w]
    if cost == np.inf:
        return np.inf
    j, q = k, w
    for i in range(C - 1, -1, -1):
        x = took[i, fl, j, q]
        if x > 0:
            counts[cand[i]] = x
            fl, j, q = came[i, fl, j, q], j - 1, q - x
    return cost


@_jit
def cheapest_fewest_steps(w, f, g, n, skip):
    """``cheapest_fewest`` for every step not in ``skip``: (steps,) cost, (steps, servers)
    workers per server; ``f``/``g``/``n`` are (steps, servers)."""
    steps, S = f.shape
    cost = np.full(steps, np.inf)
    counts = np.zeros((steps, S), dtype=np.int64)
    row = np.zeros(S, dtype=np.int64)
    for t in range(steps):
        if skip[t]:
            continue
        cost[t] = cheapest_fewest(w, f[t], g[t], n[t], row)
        counts[t] = row
    return cost, counts
