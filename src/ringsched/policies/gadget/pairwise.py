"""numpy's pairwise summation, compiled (numba): the order in which numpy's ``sum`` adds a
contiguous vector, so that compiled loops in ``kernels`` round exactly as the numpy code they
replaced (tests/test_gadget_kernels.py compares them)."""

from __future__ import annotations

import numba

_jit = numba.njit(cache=True, nogil=True)


@_jit
def leaf_sum(a, lo, n):
    """numpy's pairwise summation of a[lo:lo + n] for n <= 128 (eight running sums)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@_jit
def pairwise_sum(a, lo, n, work):
    """numpy's pairwise summation of a[lo:lo + n], the order numpy's ``sum`` adds in: halves
    (rounded to multiples of 8) until at most 128 remain. The recursion runs on an explicit
    stack (``work``: (3, depth) int64 and (depth,) float scratch) to keep compiling cheap."""
    if n <= 128:
        return leaf_sum(a, lo, n)
    nodes, vals = work
    sp, vp = 0, 0
    nodes[0, 0], nodes[1, 0], nodes[2, 0] = lo, n, 0  # (start, length, children done)
    while sp >= 0:
        l, m, st = nodes[0, sp], nodes[1, sp], nodes[2, sp]
        if m <= 128:
            vals[vp] = leaf_sum(a, l, m)
            vp += 1
            sp -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        if st < 2:  # push the left half, then the right one
            nodes[2, sp] = st + 1
            sp += 1
            nodes[0, sp] = l if st == 0 else l + n2
            nodes[1, sp] = n2 if st == 0 else m - n2
            nodes[2, sp] = 0
        else:  # both halves done: their sum replaces them
            vp -= 1
            vals[vp - 1] = vals[vp - 1] + vals[vp]
            sp -= 1
    return vals[0]
