"""The payoff bounds before the search (``payoff_bounds.py``, docs/theory.md section 9): they
never rule out a plan the search would take (on random ledgers, and for the plans that finish
by a time), they change no decision, and their rate beats every shape a plan can take."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringsched.cluster.model import parse_spec
from ringsched.policies import JobState
from ringsched.policies.gadget.params import GadgetParams
from ringsched.policies.gadget.policy import Gadget, Oasis
from ringsched.simulator import SimConfig, Simulator
from test_gadget import job, nodes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), S=st.integers(1, 6), policy=st.sampled_from([Gadget, Oasis]),
       slot=st.integers(0, 5), stay=st.booleans())
def test_payoff_bound_is_never_below_the_search(seed, S, policy, slot, stay):
    """The cheap bound that rules re-offers out must never rule out a plan the search would
    take: on random ledgers its value is at least the payoff of the plan the search finds, and
    so is the bound of the plans that finish by the found plan's finish (``bounds_by``).
    Mutant caught: the on-time mask one second early (``finish <= by_s - 1``)."""
    rng = np.random.default_rng(seed)
    c = parse_spec(f"{S}x8")
    g = policy()
    n = nodes(c, now=slot * 300.0)
    jobs = [job(i, 0.0, int(rng.choice([1, 2, 4, 8, 16])), float(rng.uniform(600, 40000)), c) for i in range(3)]
    g._ensure(n, [JobState(j, i, j.work_samples) for i, j in enumerate(jobs)])
    g.ledger.gpu_used[:, :200] = rng.integers(0, 9, size=(S, 200))
    g.ledger.bw_used[:, :200] = rng.choice([0.0, 0.5, 1.0], size=(S, 200))
    g.ledger.front[:] = 200  # (written directly, not through add_range: where usage may be nonzero)
    for j in jobs:
        remaining = j.work_samples * float(rng.uniform(0.1, 1.0))
        current = ()
        if stay:
            current = tuple(sorted(rng.integers(0, S, size=min(j.max_workers, 8 * S)).tolist()))
        win = g.planner.window(n, slot, 40 * 3600.0)
        bound = g.bounds.bounds_by(j, remaining, n, win, np.inf)[0].max(initial=-np.inf)
        quick = g.bounds.quick_bound(j, remaining, n, slot, 40 * 3600.0)
        plan = g.search(j, remaining, n, slot, horizon_end_s=40 * 3600.0, current=current, ran_before=stay)
        if plan is not None:
            tol = 1e-9 * max(1.0, abs(plan.payoff))
            assert bound >= plan.payoff - tol
            assert quick >= plan.payoff - tol
            # (the bound of the plans that finish by a time: the plan found finishes by its own finish)
            on_time = g.bounds.bounds_by(j, remaining, n, win, plan.finish_s)[1].max(initial=-np.inf)
            assert on_time >= plan.payoff - tol


def test_payoff_bound_leaves_decisions_unchanged():
    """Skipping the searches the bound rules out changes no decision: same results, fewer searches.
    At load 3 most re-offers are skipped because no paying plan is on time (``bounds_by``).
    Mutant caught: that skip with a limit one slot earlier than ``on_time_by``."""
    from ringsched.cli.workload import load_workload

    wl = load_workload("synthetic:200,load=3", "2x8", vc=None, window=None, limit=None, seed=1, rigid=False)
    runs = {}
    for on in (True, False):
        pol = Gadget(bound_first=on)
        r = Simulator(wl.jobs, wl.cluster, pol, SimConfig(seed=1)).run()
        runs[on] = (r.jobs.to_csv(index=False), pol.bound_skips)
    assert runs[True][0] == runs[False][0]
    assert runs[True][1] > 0 and runs[False][1] == 0


def test_max_rate_is_the_fastest_shape_also_with_a_per_server_overhead():
    """The bounds' rate must beat every shape a plan can take; with a fitted per-server overhead
    the widest spread is not the fastest multi-server shape, so every k has to be tried."""
    from dataclasses import replace

    c = parse_spec("8x8")
    n = nodes(c)
    g = Gadget()
    j = job(0, 0.0, 16, 3600.0, c)
    base = n.speed.params("resnet50")
    n.speed.set_params("resnet50", replace(base, server_overhead_s=0.05, colocation_slowdown=0.01))
    for w in (2, 5, 8, 16):
        shapes = [(w, k, d) for k in range(1, min(w, 8) + 1) for d in range(-(-w // k), min(w, 8) + 1)
                  if (k == 1) == (d == w) and d * k >= w]
        fastest = max(g.planner.plan_rate(n, j, *sh) for sh in shapes)
        assert g.planner.max_rate(n, j, w) >= fastest * (1 - 1e-12), w
        k2 = g.planner.plan_rate(n, j, w, 2, -(-w // 2)) if w > 1 else 0.0
        widest = g.planner.plan_rate(n, j, w, min(w, 8), -(-w // min(w, 8))) if w > 1 else 0.0
        if w >= 8:
            assert k2 > widest  # the case the old rule missed


def test_oasis_times_a_ring_as_crossing_servers_unless_told_the_placements_speed():
    """OASiS (blind to rings) times every ring of w > 1 as one worker per server at
    ``nic_share`` of a NIC, wherever its GPUs are; ``ring_speed=placement`` times it on the GPUs
    it took, as GADGET does; a one-GPU job is the same either way. Mutants caught: the option
    ignored (both crossing); every ring timed as crossing in GADGET too; the option's values
    not checked."""
    from ringsched.errors import InputError
    from ringsched.policies import make_policy
    from ringsched.policies.registry import parse_policy

    c = parse_spec("2x8")
    n = nodes(c)
    j = dataclasses.replace(job(0, 0.0, 4, 3600.0, c), model="vgg16")
    blind, timed, g = make_policy("oasis"), make_policy("oasis:ring_speed=placement"), Gadget()
    one_server = g.planner.plan_rate(n, j, 4, 1, 4)
    crossing = g.planner.plan_rate(n, j, 4, 2, 1)
    assert crossing < 0.9 * one_server  # (vgg16: the exchange is what a crossing ring pays for)
    assert blind.planner.plan_rate(n, j, 4, 1, 4) == pytest.approx(crossing)
    assert timed.planner.plan_rate(n, j, 4, 1, 4) == pytest.approx(one_server)
    assert timed.planner.max_rate(n, j, 4) == pytest.approx(g.planner.max_rate(n, j, 4))
    for p in (blind, timed):
        assert p.planner.plan_rate(n, j, 1, 1, 1) == pytest.approx(g.planner.plan_rate(n, j, 1, 1, 1))
    assert Oasis(GadgetParams(nic_share=0.25)).planner.rings_crossing  # (GADGET's options given: OASiS' default)
    with pytest.raises(InputError, match="ring_speed must be one of"):
        parse_policy("oasis:ring_speed=fast")
    with pytest.raises(InputError, match="unknown option 'ring_speed'"):
        parse_policy("gadget:ring_speed=placement")
