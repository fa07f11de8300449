"""GADGET's ledger of committed GPU and NIC use (policies/gadget/prices.Ledger): its running
usage sums follow every commit, release and growth, and its first-overflow check agrees with
the whole check."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 600), st.integers(0, 2), st.integers(1, 3),
                              st.sampled_from([1, -1]), st.integers(0, 5000)), max_size=25))
def test_ledger_usage_prefix_follows_every_change(ops):
    """The running usage sums behind the quick bound stay equal to sums recomputed from the
    ledger through commits, releases, growth and queries that move its base."""
    from ringsched.policies.gadget.prices import Ledger

    led = Ledger(np.array([8, 8, 4]), np.ones(3), initial_slots=16)
    for start, length, server, count, sign, query in ops:
        counts = np.zeros(3, dtype=np.int64)
        counts[server] = count
        if sign < 0:  # remove only what is there
            counts = np.minimum(counts, led.window(start, start + length)[0][:, :].min(axis=1))
        led.add_range(start, start + length, counts, np.zeros(3), sign)
        z = led.usage_prefix(query, query + 700)
        used = led.window(query, query + 700)[0] / led.gpus[:, None]
        np.testing.assert_allclose(np.diff(z, axis=1), used, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), start=st.integers(0, 20), n=st.integers(1, 30), moving=st.booleans())
def test_ledger_first_overflow_matches_the_whole_check(seed, start, n, moving):
    """``Ledger.first_overflow`` reads only the servers a placement touches; it must find the
    same first slot as checking every server and slot."""
    from ringsched.policies.gadget.prices import Ledger

    rng = np.random.default_rng(seed)
    S = 4
    cap = np.array([8, 8, 4, 8])
    led = Ledger(cap, np.full(S, 1e10), initial_slots=8)
    for _ in range(6):  # random commitments within capacity
        a = int(rng.integers(0, 40))
        z = a + int(rng.integers(1, 20))
        cnt = np.zeros(S, dtype=np.int64)
        cnt[int(rng.integers(0, S))] = int(rng.integers(1, 5))
        bw = (cnt > 0) * float(rng.choice([0.0, 0.5]))
        g, b = led.window(a, z)
        if np.all(g + cnt[:, None] <= cap[:, None]) and np.all(b + bw[:, None] <= 1.0):
            led.add_range(a, z, cnt, bw)
    counts = rng.integers(0, 3, size=S) * (rng.random(S) < 0.5)
    bw = (counts > 0) * 0.5 * (counts.sum() > counts.max())
    end = start + n
    less = None
    g, b = led.window(start, end)
    g, b = g.astype(np.int64), b.copy()
    if moving:
        at = start + int(rng.integers(0, n))
        old = np.zeros(S, dtype=np.int64)
        old[int(np.argmax(counts))] = 4  # where the new usage goes: without removing it, it overflows
        ob = np.zeros(S)
        led.add_range(at, end, old, ob)  # its own reservation, removed again by ``less``
        less = (at, old, ob)
        g, b = led.window(start, end)
        g, b = g.astype(np.int64), b.copy()
        g[:, at - start:] -= old[:, None]
    over = np.any(g + counts[:, None] > cap[:, None], axis=0) | np.any(b + bw[:, None] > 1.0 + 1e-9, axis=0)
    want = start + int(np.argmax(over)) if over.any() else None
    assert led.first_overflow(start, end, counts, bw, cap, less) == want
