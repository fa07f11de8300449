"""Compiled loops of GADGET's hot paths (numba), each the exact twin of a numpy expression.

Every function here replaces a chain of small numpy operations that ran tens of thousands of
times per trace: on arrays of a few dozen steps, numpy's per-call overhead, not arithmetic,
was most of GADGET's time. Each loop does the same floating-point operations in the same
order as the numpy code it replaced (cumulative sums run left to right in both), so decisions
are unchanged, byte for byte; tests/test_gadget_kernels.py checks each against its numpy
reference. Utilities and prices (exponentials) stay in numpy: libm and numpy may round them
differently. Compiled code is cached next to this file after the first run.
"""

from __future__ import annotations

import numba
import numpy as np

from ringsched.policies.gadget.fewest import cheapest_fewest
from ringsched.policies.gadget.pairwise import pairwise_sum as _pairwise_sum

_jit = numba.njit(cache=True, nogil=True)


@_jit
def prefix_sums(cost, progress):
    """Running sums over the steps that can run (finite cost, some progress): progress P, cost C,
    and the count B of steps that cannot, each with a leading 0 (a plan over steps s..e-1 has
    progress P[e] - P[s] and runs without a gap when B[e] == B[s])."""
    n = cost.size
    P = np.zeros(n + 1)
    C = np.zeros(n + 1)
    B = np.zeros(n + 1, dtype=np.int64)
    for t in range(n):
        ok = np.isfinite(cost[t]) and progress[t] > 0
        P[t + 1] = P[t] + (progress[t] if ok else 0.0)
        C[t + 1] = C[t] + (cost[t] if ok else 0.0)
        B[t + 1] = B[t] + (0 if ok else 1)
    return P, C, B


@_jit
def contiguous_plans(cost, progress, remaining, starts_s, step_len_s):
    """For every start step s: whether a plan running without gaps from s finishes ``remaining``
    samples in the window, the step e it completes in, its finish time and cost
    (``plan.best_contiguous``). ``cost`` is inf where the step cannot run."""
    n = cost.size
    P, C, B = prefix_sums(cost, progress)
    valid = np.zeros(n, dtype=np.bool_)
    end = np.empty(n, dtype=np.int64)
    finish = np.empty(n)
    total = np.empty(n)
    need = remaining * (1 - 1e-12)
    first = 0  # the first i with P[i] >= P[s] + need (numpy's searchsorted, side left): it only grows with s
    for s in range(n):
        target = P[s] + need
        while first <= n and P[first] < target:
            first += 1
        e = first - 1  # the step in which it completes
        v = s <= e < n
        if e > n - 1:
            e = n - 1
        if e < 0:  # (only when nothing remains; invalid then)
            e = 0
            v = False
        if v and B[e + 1] - B[s] != 0:
            v = False  # a step it cannot run lies in between
        pe = progress[e]
        frac = (remaining - (P[e] - P[s])) / (pe if pe > 0 else 1.0)
        frac = min(max(frac, 0.0), 1.0)
        valid[s] = v
        end[s] = e
        finish[s] = starts_s[e] + frac * step_len_s
        total[s] = C[e + 1] - C[s]
    return valid, end, finish, total


@_jit
def uniform_plans(cost, progress, remaining, now_s, step_len_s):
    """``plan.uniform_plans``: (finish time, cost) of the plan starting in every step of every
    row when row r advances ``progress[r]`` samples per step."""
    m, n = cost.shape
    finish = np.empty((m, n))
    out = np.empty((m, n))
    C = np.zeros(n + 1)
    B = np.zeros(n + 1, dtype=np.int64)
    for r in range(m):
        rem = remaining[r] * (1 - 1e-9)
        p = progress[r]
        k = np.ceil(rem / p) if p > 0 else np.inf  # steps to finish
        usable = k <= n
        kk = np.int64(max(k, 1.0)) if usable else n + 1
        frac = (rem - ((kk if usable else 1) - 1) * p) / (p if usable else 1.0)
        frac = min(max(frac, 0.0), 1.0)
        L = step_len_s[r]
        for t in range(n):
            ok = np.isfinite(cost[r, t])
            C[t + 1] = C[t] + (cost[r, t] if ok else 0.0)
            B[t + 1] = B[t] + (0 if ok else 1)
        for s in range(n):
            e = s + kk - 1
            valid = e < n
            if e > n - 1:
                e = n - 1
            if valid and B[e + 1] - B[s] != 0:
                valid = False
            finish[r, s] = now_s + L * e + frac * L
            out[r, s] = C[e + 1] - C[s] if valid else np.inf
    return finish, out


@_jit
def shift_prefix(zp, i0, i1, rows, delta):
    """Running sums after adding ``delta[j]`` to row ``rows[j]`` in every slot of a block: a
    ramp over the block's columns (i0, i1], then a constant on every column after it."""
    ncols = zp.shape[1]
    width = i1 - i0
    for j in range(rows.size):
        r = rows[j]
        d = delta[j]
        for c in range(1, width + 1):
            zp[r, i0 + c] += d * c
        t = d * width
        for c in range(i1 + 1, ncols):
            zp[r, c] += t


@_jit
def first_overflow(gpu_used, bw_used, start, end, counts, bw_frac, capacity, less_at, less_g, less_b):
    """The first slot in [start, end) where ``counts`` GPUs and ``bw_frac`` of the NICs more
    (less ``less_g``/``less_b`` from slot ``less_at`` on) exceed a server, or -1."""
    S = counts.size
    for c in range(start, end):
        for s in range(S):
            if counts[s] > 0:
                g = np.int64(gpu_used[s, c])
                if c >= less_at:
                    g -= less_g[s]
                if g + counts[s] > capacity[s]:
                    return c
            if bw_frac[s] > 0:
                b = bw_used[s, c]
                if c >= less_at:
                    b -= less_b[s]
                if b + bw_frac[s] > 1.0 + 1e-9:
                    return c
    return -1


@_jit
def _live_blocks(front, s, start, b, steps):
    """How many leading blocks of row s may hold usage: those that start before ``front[s]``,
    the end of the latest reservation ever made on server s (later slots are all zero)."""
    return min(steps, max(0, (front[s] - start + b - 1) // b))


@_jit
def block_stats_int(used, b, front, start):
    """(max, sum) over each block of ``b`` consecutive slots of every server's row (GPU counts).
    Blocks past a row's ``front`` (``start``: the window's first slot) are not read: they are
    zero."""
    S, width = used.shape
    steps = width // b
    mx = np.zeros((S, steps), dtype=np.int64)
    sm = np.zeros((S, steps), dtype=np.int64)
    for s in range(S):
        for i in range(_live_blocks(front, s, start, b, steps)):
            m = np.int64(used[s, i * b])
            t = np.int64(0)
            for j in range(i * b, (i + 1) * b):
                v = np.int64(used[s, j])
                if v > m:
                    m = v
                t += v
            mx[s, i] = m
            sm[s, i] = t
    return mx, sm


@_jit
def block_stats_float(used, b, front, start):
    """(max, sum) over each block of ``b`` consecutive slots of every server's row (NIC shares),
    the sum in numpy's pairwise order; ``front`` as in ``block_stats_int``."""
    S, width = used.shape
    steps = width // b
    mx = np.zeros((S, steps))
    sm = np.zeros((S, steps))
    work = (np.empty((3, 130), dtype=np.int64), np.empty(130))
    for s in range(S):
        row = used[s]
        for i in range(_live_blocks(front, s, start, b, steps)):
            m = row[i * b]
            for j in range(i * b + 1, (i + 1) * b):
                if row[j] > m:
                    m = row[j]
            mx[s, i] = m
            sm[s, i] = _pairwise_sum(row, i * b, b, work)
    return mx, sm


@_jit
def add_usage(gpu_used, bw_used, start, end, counts, bw_frac, sign, front):
    """Add (sign -1: remove, NIC shares kept at least 0) ``counts`` GPUs and ``bw_frac`` of the
    NIC to every slot in [start, end), reading and writing only the servers that change; an
    addition moves the server's ``front`` (row 0: the end of its latest GPU reservation, row 1:
    of its latest NIC reservation) to at least end."""
    for s in range(counts.size):
        if sign > 0 and counts[s] != 0 and front[0, s] < end:
            front[0, s] = end
        if sign > 0 and bw_frac[s] != 0 and front[1, s] < end:
            front[1, s] = end
        c = counts[s]
        if c != 0:
            d = np.int32(sign * c)
            for t in range(start, end):
                gpu_used[s, t] += d
        f = bw_frac[s]
        if f != 0:
            for t in range(start, end):
                v = bw_used[s, t] + sign * f
                if sign < 0 and v < 0:
                    v = 0.0
                bw_used[s, t] = v


@_jit
def window_stats(used_g, used_b, b, front, start):
    """``block_stats_int`` of the GPUs, ``block_stats_float`` of the NIC shares, and whether any
    NIC share is in use at all: a price window's reductions in one pass over the ledger."""
    top, total = block_stats_int(used_g, b, front[0], start)
    btop, btotal = block_stats_float(used_b, b, front[1], start)
    any_b = False
    for s in range(btop.shape[0]):
        for i in range(btop.shape[1]):
            if btop[s, i] != 0:
                any_b = True
    return top, total, btop, btotal, any_b


@_jit
def fixed_window(ok, prog, remaining, free, bfree, gp, bp):
    """The window of a fixed embedding (``PlanSearch._fixed_embedding``): from the first step s0 the
    job can run until it would be done there at that step's speed (s1, exclusive), each server's
    fewest free GPUs and NIC share over it and its summed prices (numpy's pairwise order).
    s0 = -1 when no step can run."""
    n = ok.size
    s0 = -1
    for t in range(n):
        if ok[t] and prog[t] > 0:
            s0 = t
            break
    S = free.shape[0]
    fmin = np.empty(S, dtype=np.int64)
    bmin = np.empty(S)
    gsum = np.empty(S)
    bsum = np.empty(S)
    if s0 < 0:
        return s0, s0, fmin, bmin, gsum, bsum
    s1 = min(n, s0 + np.int64(np.ceil(remaining / prog[s0])) + 1)
    work = (np.empty((3, 130), dtype=np.int64), np.empty(130))
    for s in range(S):
        f, b = free[s, s0], bfree[s, s0]
        for t in range(s0 + 1, s1):
            if free[s, t] < f:
                f = free[s, t]
            if bfree[s, t] < b:
                b = bfree[s, t]
        fmin[s], bmin[s] = f, b
        gsum[s] = _pairwise_sum(gp[s], s0, s1 - s0, work)
        bsum[s] = _pairwise_sum(bp[s], s0, s1 - s0, work)
    return s0, s1, fmin, bmin, gsum, bsum


@_jit
def fixed_cost(counts, gp, bp, s0, s1, multi):
    """Per step, the cost of running on ``counts`` in [s0, s1) (inf elsewhere): its GPUs' prices
    plus, when the ring crosses servers, the NIC shares', summed over servers in numpy's order
    for ``(x[:, s0:s1]).sum(axis=0)``: row after row, or pairwise when the block is one column
    wide (numpy then sums a contiguous vector)."""
    S, n = gp.shape
    cost = np.full(n, np.inf)
    g = np.empty(S)
    c = np.empty(S)
    work = (np.empty((3, 130), dtype=np.int64), np.empty(130))
    for t in range(s0, s1):
        for s in range(S):
            g[s] = counts[s] * gp[s, t]
            c[s] = (1.0 if counts[s] > 0 else 0.0) * bp[s, t]
        if s1 - s0 == 1:
            gs, cs = _pairwise_sum(g, 0, S, work), _pairwise_sum(c, 0, S, work)
        else:
            gs, cs = g[0], c[0]
            for s in range(1, S):
                gs += g[s]
                cs += c[s]
        cost[t] = gs + cs * (1.0 if multi else 0.0)
    return cost


@_jit
def embed_one(w, f, g, bf, bp, bw_frac, ring_aware):
    """``embed.embed`` for one step: whether ``w`` workers fit, and the workers per server.
    Ring-aware: the cheapest server that hosts the whole ring; else the cheapest ring over the
    fewest servers with the ring's NIC share free (``fewest.cheapest_fewest``). Blind: the
    cheapest GPUs anywhere (ties by index)."""
    S = f.size
    counts = np.zeros(S, dtype=np.int64)
    if ring_aware:
        best, bc = -1, np.inf
        for s in range(S):
            if f[s] >= w and w * g[s] < bc:
                best, bc = s, w * g[s]
        if best >= 0:
            counts[best] = w
            return True, counts
        fs = np.zeros(S, dtype=np.int64)
        for s in range(S):
            if bf[s] >= bw_frac - 1e-12 and f[s] > 0:
                fs[s] = f[s]
        cost = cheapest_fewest(w, fs, g.astype(np.float64), bp.astype(np.float64), counts)
        return cost < np.inf, counts
    order = np.arange(S)
    for i in range(1, S):  # insertion sort (stable): cheapest first, then by index
        j = i
        while j > 0:
            a, b = order[j - 1], order[j]
            if not g[a] > g[b]:
                break
            order[j - 1], order[j] = b, a
            j -= 1
    left = w
    for i in range(S):
        s = order[i]
        t = min(f[s], left)
        if t > 0:
            counts[s] = t
            left -= t
    return left == 0, counts


@_jit
def lowest_block_usage(Z, edges, B, margin):
    """``quick_bounds``' usage per offer and step: the least mean used share over servers of the
    slots between consecutive ``edges`` (columns of the running sums ``Z``), lowered by
    ``margin`` and at least 0."""
    J, m1 = edges.shape
    S = Z.shape[0]
    z = np.empty((J, m1 - 1))
    for j in range(J):
        for i in range(m1 - 1):
            a, b = edges[j, i], edges[j, i + 1]
            mn = Z[0, b] - Z[0, a]
            for s in range(1, S):
                d = Z[s, b] - Z[s, a]
                if d < mn:
                    mn = d
            z[j, i] = max(mn / B[j] - margin, 0.0)
    return z
