"""The compiled loops of GADGET (``policies/gadget/kernels.py``) against the numpy code they
replaced, kept here as references: the results must be equal bit for bit, so that compiling a
loop never changes a decision."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ringsched.policies.gadget import kernels
from ringsched.policies.gadget.plan import best_contiguous, uniform_plans
from ringsched.policies.gadget.prices import Ledger


# ------------------------------------------------------------------ numpy references
def ref_contiguous(cost, progress, remaining, starts, step_len):
    n = cost.size
    ok = np.isfinite(cost) & (progress > 0)
    P = np.concatenate(([0.0], np.cumsum(np.where(ok, progress, 0.0))))
    C = np.concatenate(([0.0], np.cumsum(np.where(ok, cost, 0.0))))
    B = np.concatenate(([0], np.cumsum(~ok)))
    s0 = np.arange(n)
    e = np.searchsorted(P, P[s0] + remaining * (1 - 1e-12), side="left") - 1
    valid = (e < n) & (e >= s0)
    e = np.minimum(e, n - 1)
    valid &= (B[e + 1] - B[s0]) == 0
    done_before = P[e] - P[s0]
    pe = progress[e]
    with np.errstate(over="ignore"):  # a subnormal progress overflows to inf: clipped to 1
        frac = np.clip((remaining - done_before) / np.where(pe > 0, pe, 1.0), 0.0, 1.0)
    return valid, e, starts[e] + frac * step_len, C[e + 1] - C[s0]


def ref_uniform(cost, progress, remaining, now_s, step_len_s):
    m, n = cost.shape
    rem = remaining * (1 - 1e-9)
    with np.errstate(over="ignore"):  # a subnormal progress overflows to inf: never usable
        k = np.ceil(np.divide(rem, progress, out=np.full(m, np.inf), where=progress > 0))
    usable = k <= n
    kk = np.where(usable, np.maximum(k, 1), n + 1).astype(np.int64)
    frac = np.clip((rem - (np.where(usable, kk, 1) - 1) * progress) / np.where(usable, progress, 1.0), 0.0, 1.0)
    ok = np.isfinite(cost)
    C = np.zeros((m, n + 1))
    np.cumsum(np.where(ok, cost, 0.0), axis=1, out=C[:, 1:])
    B = np.zeros((m, n + 1), dtype=np.int64)
    np.cumsum(~ok, axis=1, out=B[:, 1:])
    s0 = np.arange(n)[None, :]
    e = s0 + kk[:, None] - 1
    valid = e < n
    e = np.minimum(e, n - 1)
    rows = np.arange(m)[:, None]
    valid &= (B[rows, e + 1] - B[rows, s0]) == 0
    finish = now_s + step_len_s[:, None] * e + frac[:, None] * step_len_s[:, None]
    return finish, np.where(valid, C[rows, e + 1] - C[rows, s0], np.inf)


def steps_strategy(max_n=60):
    """Per-step costs (some inf: the job does not fit) and progress (some 0)."""
    return st.integers(1, max_n).flatmap(lambda n: st.tuples(
        st.lists(st.one_of(st.floats(0, 1e4), st.just(np.inf)), min_size=n, max_size=n),
        st.lists(st.one_of(st.floats(0, 5e3), st.just(0.0)), min_size=n, max_size=n)))


@settings(max_examples=300, deadline=None)
@given(steps=steps_strategy(), remaining=st.one_of(st.floats(0, 1e5), st.just(0.0)), step_len=st.floats(1, 1e4))
def test_contiguous_plans_equal_the_numpy_reference(steps, remaining, step_len):
    cost, progress = (np.array(x, dtype=float) for x in steps)
    starts = 17.0 + step_len * np.arange(cost.size)
    valid, e, finish, total = kernels.contiguous_plans(cost, progress, remaining, starts, step_len)
    rv, re, rf, rt = ref_contiguous(cost, progress, remaining, starts, step_len)
    assert np.array_equal(valid, rv)
    # only valid plans are ever read
    assert np.array_equal(e[rv], re[rv]) and np.array_equal(finish[rv], rf[rv]) and np.array_equal(total[rv], rt[rv])


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(steps_strategy(40), st.floats(0, 1e5), st.floats(1, 1e4)), min_size=1, max_size=6),
       n=st.integers(1, 40))
def test_uniform_plans_equal_the_numpy_reference(rows, n):
    cost = np.array([(c + [np.inf] * n)[:n] for (c, _), _, _ in rows], dtype=float)
    progress = np.array([p[0] for (_, p), _, _ in rows], dtype=float)
    remaining = np.array([r for _, r, _ in rows])
    step_len = np.array([L for _, _, L in rows])
    finish, c = uniform_plans(cost, progress, remaining, 123.0, step_len)
    rf, rc = ref_uniform(cost, progress, remaining, 123.0, step_len)
    assert np.array_equal(c, rc)
    assert np.array_equal(finish[np.isfinite(rc)], rf[np.isfinite(rc)])


def test_best_contiguous_picks_the_best_paying_start():
    """A plan across a blocked step is not valid; the best start pays most."""
    cost = np.array([5.0, 1.0, np.inf, 1.0, 1.0, 1.0])
    progress = np.full(6, 10.0)
    u = lambda jct: 100.0 - np.asarray(jct) / 100.0  # noqa: E731
    ch = best_contiguous(cost, progress, 20.0, 100.0 * np.arange(6), 100.0, u, 0.0)
    assert (ch.start, ch.end) == (3, 4) and ch.cost == 2.0 and ch.finish_s == 500.0
    assert best_contiguous(cost, progress, 70.0, 100.0 * np.arange(6), 100.0, u, 0.0) is None


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(1, 300), steps=st.integers(1, 12), off=st.integers(0, 50))
def test_block_stats_equal_numpy_max_and_sum(seed, b, steps, off):
    rng = np.random.default_rng(seed)
    gpu = rng.integers(0, 9, size=(5, off + steps * b + 3)).astype(np.int32)
    bw = rng.random((5, off + steps * b + 3))
    g, w = gpu[:, off:off + steps * b], bw[:, off:off + steps * b]
    none = np.full(5, gpu.shape[1], dtype=np.int64)  # (no front inside the window)
    top, total = kernels.block_stats_int(g, b, none, 0)
    assert np.array_equal(top, g.reshape(5, steps, b).max(axis=2))
    assert np.array_equal(total, g.reshape(5, steps, b).sum(axis=2))
    btop, btotal = kernels.block_stats_float(w, b, none, 0)
    assert np.array_equal(btop, w.reshape(5, steps, b).max(axis=2))
    assert np.array_equal(btotal, w.reshape(5, steps, b).sum(axis=2))  # numpy's pairwise order
    # past a row's front everything is zero and is not read
    front = off + rng.integers(0, steps * b + 1, size=(2, 5))
    gz, wz = gpu.copy(), bw.copy()
    for s in range(5):
        gz[s, front[0, s]:] = 0
        wz[s, front[1, s]:] = 0.0
    g, w = gz[:, off:off + steps * b], wz[:, off:off + steps * b]
    t2, s2, b2, bs2, any_b = kernels.window_stats(g, w, b, front, off)
    assert np.array_equal(t2, g.reshape(5, steps, b).max(axis=2)) and np.array_equal(s2, g.reshape(5, steps, b).sum(axis=2))
    assert np.array_equal(b2, w.reshape(5, steps, b).max(axis=2)) and np.array_equal(bs2, w.reshape(5, steps, b).sum(axis=2))
    assert any_b == bool(w.any())


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), lo=st.integers(0, 30), width=st.integers(1, 30))
def test_shift_prefix_equals_the_numpy_update(seed, lo, width):
    rng = np.random.default_rng(seed)
    zp = rng.random((4, 80))
    rows = np.array([0, 2])
    delta = rng.random(2)
    want = zp.copy()
    i0, i1 = lo, lo + width
    want[rows, i0 + 1:i1 + 1] += delta[:, None] * np.arange(1, width + 1)
    want[rows, i1 + 1:] += delta[:, None] * width
    kernels.shift_prefix(zp, i0, i1, rows, delta)
    assert np.array_equal(zp, want)


def test_ledger_first_overflow_none_and_first_slot():
    led = Ledger(np.array([4, 4]), np.full(2, 1e10), initial_slots=4)
    led.add_range(3, 6, np.array([3, 0]), np.zeros(2))
    one = np.array([1, 0])
    assert led.first_overflow(0, 10, one, np.zeros(2), np.array([4, 4])) is None
    assert led.first_overflow(0, 10, np.array([2, 0]), np.zeros(2), np.array([4, 4])) == 3
    # less its own reservation from slot 4 on: only slot 3 overflows
    assert led.first_overflow(4, 10, np.array([2, 0]), np.zeros(2), np.array([4, 4]),
                              (4, np.array([3, 0]), np.zeros(2))) is None
    assert led.first_overflow(0, 10, np.array([0, 1]), np.array([0.0, 0.6]), np.array([4, 4])) is None
    led.add_range(7, 8, np.array([0, 1]), np.array([0.0, 0.5]))
    assert led.first_overflow(0, 10, np.array([0, 1]), np.array([0.0, 0.6]), np.array([4, 4])) == 7


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), start=st.integers(0, 20), width=st.integers(1, 20), sign=st.sampled_from([1, -1]))
def test_add_usage_equals_the_numpy_update(seed, start, width, sign):
    rng = np.random.default_rng(seed)
    gpu = rng.integers(0, 8, size=(5, 50)).astype(np.int32)
    bw = rng.choice([0.0, 0.3, 0.5, 0.8], size=(5, 50))
    counts = rng.integers(0, 3, size=5) * (rng.random(5) < 0.6)
    frac = (counts > 0) * 0.3
    frac[0] = 0.3  # (a NIC share on a server without GPUs of the ring moves only the NIC front)
    want_g, want_b = gpu.copy(), bw.copy()
    end = start + width
    want_g[:, start:end] += sign * counts.astype(np.int32)[:, None]
    want_b[:, start:end] += sign * frac[:, None]
    if sign < 0:
        np.maximum(want_b[:, start:end], 0.0, out=want_b[:, start:end])
    front = np.full((2, 5), 10, dtype=np.int64)
    kernels.add_usage(gpu, bw, start, end, counts.astype(np.int64), frac, sign, front)
    assert np.array_equal(gpu, want_g) and np.array_equal(bw, want_b)
    assert np.array_equal(front[0], np.where((counts > 0) & (sign > 0), np.maximum(10, end), 10))
    assert np.array_equal(front[1], np.where((frac > 0) & (sign > 0), np.maximum(10, end), 10))


def ref_fixed(ok, prog, remaining, free, bfree, gp, bp, w, nic, ring_aware):
    """The numpy code ``Gadget._fixed_embedding`` ran before ``fixed_window``, ``embed_one`` and
    ``fixed_cost``: (s0, s1, counts, cost) or None."""
    from ringsched.policies.gadget.embed import embed

    first = np.flatnonzero(ok & (prog > 0))
    if first.size == 0:
        return None
    s0 = int(first[0])
    n = free.shape[1]
    s1 = min(n, s0 + int(np.ceil(remaining / prog[s0])) + 1)
    one = embed(w, free[:, s0:s1].min(axis=1, keepdims=True), gp[:, s0:s1].sum(axis=1, keepdims=True),
                bfree[:, s0:s1].min(axis=1, keepdims=True), bp[:, s0:s1].sum(axis=1, keepdims=True), nic,
                ring_aware=ring_aware)
    if not one.ok[0]:
        return s0, s1, None, None
    counts = one.counts(0, free.shape[0])
    cost = np.full(n, np.inf)
    cost[s0:s1] = (counts[:, None] * gp[:, s0:s1]).sum(axis=0) + \
        ((counts > 0)[:, None] * bp[:, s0:s1]).sum(axis=0) * ((counts > 0).sum() > 1)
    return s0, s1, counts, cost


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 100_000), S=st.integers(1, 12), n=st.integers(1, 300), w=st.integers(1, 24),
       ring_aware=st.booleans(), ties=st.booleans())
@example(seed=8, S=8, n=1, w=8, ring_aware=False, ties=False)  # one column: numpy sums servers pairwise
def test_fixed_embedding_kernels_equal_the_numpy_code(seed, S, n, w, ring_aware, ties):
    rng = np.random.default_rng(seed)
    free = rng.integers(0, 9, size=(S, n)).astype(np.int64)
    bfree = rng.choice([0.0, 0.5, 1.0], size=(S, n))
    gp = rng.choice([0.5, 1.0], size=(S, n)) if ties else rng.random((S, n)) * 10
    bp = rng.choice([0.0, 0.25], size=(S, n)) if ties else rng.random((S, n))
    ok = rng.random(n) < 0.8
    prog = rng.random(n) * 100 * (rng.random(n) < 0.9)
    remaining = float(rng.random() * 5000)
    want = ref_fixed(ok, prog, remaining, free, bfree, gp, bp, w, 0.5, ring_aware)
    s0, s1, fmin, bmin, gsum, bsum = kernels.fixed_window(ok, prog, remaining, free, bfree, gp, bp)
    if want is None:
        assert s0 < 0
        return
    assert (s0, s1) == want[:2]
    fits, counts = kernels.embed_one(w, fmin, gsum, bmin, bsum, 0.5, ring_aware)
    assert fits == (want[2] is not None)
    if fits:
        assert np.array_equal(counts, want[2])
        cost = kernels.fixed_cost(counts, gp, bp, s0, s1, (counts > 0).sum() > 1)
        assert np.array_equal(cost, want[3])


def test_embed_one_breaks_ties_by_server_index_as_the_numpy_embedding():
    from ringsched.policies.gadget.embed import embed

    for ring_aware in (True, False):
        for w in (2, 6, 9):
            f = np.array([4, 4, 4])
            g, bf, bp = np.ones(3), np.ones(3), np.zeros(3)
            fits, counts = kernels.embed_one(w, f, g, bf, bp, 0.5, ring_aware)
            e = embed(w, f[:, None], g[:, None], bf[:, None], bp[:, None], 0.5, ring_aware=ring_aware)
            assert fits == bool(e.ok[0]) and np.array_equal(counts, e.counts(0, 3))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), S=st.integers(1, 6), J=st.integers(1, 5), m=st.integers(1, 10))
def test_lowest_block_usage_equals_the_numpy_expression(seed, S, J, m):
    rng = np.random.default_rng(seed)
    Z = np.concatenate([np.zeros((S, 1)), np.cumsum(rng.random((S, 200)), axis=1)], axis=1)
    B = rng.integers(1, 5, size=J)
    steps = rng.integers(0, m + 1, size=J)
    edges = np.minimum(np.arange(m + 1)[None, :], steps[:, None]) * B[:, None]
    want = np.maximum(np.diff(Z[:, edges], axis=2).min(axis=0) / B[:, None] - 1e-6, 0.0)
    assert np.array_equal(kernels.lowest_block_usage(Z, edges, B, 1e-6), want)
