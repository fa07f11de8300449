"""The exact offline optimum (MILP), GADGET on discrete instances and the competitive ratio
(docs/theory.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringsched.optimum import DiscreteJob, Instance, brute_force, random_instance, run_gadget, solve, theorem_parameters, verify
from ringsched.optimum.discrete_gadget import guaranteed_ratio, min_cost_by_completion
from ringsched.optimum.instance import enumerate_configs
from ringsched.optimum.milp import job_plans

REL = 1e-9


def job(jid, arrival, work, utility, configs, progress, wmin=1, wmax=8):
    return DiscreteJob(id=jid, arrival=arrival, work=work, wmin=wmin, wmax=wmax, utility=tuple(map(float, utility)),
                       configs=tuple(map(tuple, configs)), progress=tuple(progress))


# ------------------------------------------------------------------ hand-made instances
def two_deadlines(third: bool = False) -> Instance:
    """One server of 2 GPUs, 3 slots. A and B each need 3 GPU-slots by the end of slot 1 and
    only 4 exist: one of them. C (optional) arrives in slot 2 and needs one slot."""
    cfg, g = [(1,), (2,)], [2, 4]
    jobs = [job(0, 0, 6, [5, 5, 0], cfg, g), job(1, 0, 6, [3, 3, 0], cfg, g)]
    if third:
        jobs.append(job(2, 2, 2, [0, 0, 1], cfg, g))
    return Instance(gpus=(2,), slots=3, nic_share=0.5, jobs=tuple(jobs), max_per_server=2)


def test_milp_two_jobs_cannot_both_meet_their_deadlines():
    inst = two_deadlines()
    opt = solve(inst)
    assert opt.optimal and opt.utility == pytest.approx(5.0)
    assert opt.completion == {0: 1}
    assert verify(inst, opt.completion, opt.schedule) == pytest.approx(5.0)
    assert brute_force(inst) == pytest.approx(5.0)
    opt3 = solve(two_deadlines(third=True))
    assert opt3.utility == pytest.approx(6.0)
    assert brute_force(two_deadlines(third=True)) == pytest.approx(6.0)


def test_milp_nic_capacity_binds():
    """Two servers of 2 GPUs; each job needs 2 workers and both must run in slot 0. A ring over
    both servers takes nic_share = 0.75 of each NIC, so two rings cannot cross at once, but a
    ring on one server needs no NIC: OPT runs both, each on its own server."""
    cfg = [(1, 1), (2, 0), (0, 2)]
    jobs = (job(0, 0, 4, [1], cfg, [4, 4, 4], wmin=2, wmax=2), job(1, 0, 4, [1], cfg, [4, 4, 4], wmin=2, wmax=2))
    inst = Instance(gpus=(2, 2), slots=1, nic_share=0.75, jobs=jobs, max_per_server=2)
    assert solve(inst).utility == pytest.approx(2.0)
    # only crossing rings allowed: one job
    jobs = tuple(job(i, 0, 4, [1], [(1, 1)], [4], wmin=2, wmax=2) for i in range(2))
    inst = Instance(gpus=(2, 2), slots=1, nic_share=0.75, jobs=jobs, max_per_server=2)
    opt = solve(inst)
    assert opt.utility == pytest.approx(1.0) and brute_force(inst) == pytest.approx(1.0)


def test_verify_rejects_infeasible_solutions():
    inst = two_deadlines()
    with pytest.raises(AssertionError, match="GPU capacity"):
        verify(inst, {0: 1, 1: 1}, {0: [(0, 1), (1, 0)], 1: [(0, 1), (1, 0)]})
    with pytest.raises(AssertionError, match="work not done"):
        verify(inst, {0: 1}, {0: [(0, 0)]})
    with pytest.raises(AssertionError, match="after its completion"):
        verify(inst, {0: 0}, {0: [(0, 1), (1, 0)]})


def test_gadget_on_hand_made_instance():
    inst = two_deadlines(third=True)
    inst = Instance(gpus=(4,), slots=3, nic_share=0.5, jobs=inst.jobs, max_per_server=2)
    for rule in ("textbook", "quantised"):
        g = run_gadget(inst, rule=rule)
        opt = solve(inst)
        assert g.utility <= opt.utility * (1 + REL)
        assert opt.utility <= g.dual * (1 + REL)  # weak duality: the final dual bounds OPT
        assert g.utility / opt.utility >= g.params.bound


def test_min_cost_by_completion_is_the_dp():
    cost = np.array([[1.0, 3.0], [np.inf, 2.0], [0.5, 0.5]])
    units = np.array([[1, 3], [1, 3], [1, 3]])
    mc = min_cost_by_completion(cost, units, 3)
    assert list(mc) == pytest.approx([3.0, 2.0, 0.5])  # option 1 alone, after idling when cheaper
    # brute force over every choice per step (-1 = idle), first-completion plans only
    import itertools
    for T in range(3):
        best = np.inf
        for ch in itertools.product([-1, 0, 1], repeat=T + 1):
            prog = [0]
            c = 0.0
            for i, o in enumerate(ch):
                if o >= 0:
                    c += cost[i, o]
                    prog.append(prog[-1] + units[i, o])
                else:
                    prog.append(prog[-1])
            if prog[-1] >= 3 and prog[-2] < 3 and ch[-1] >= 0:
                best = min(best, c)
        assert mc[T] == pytest.approx(best)


# ------------------------------------------------------------------ hypothesis families
@st.composite
def tiny_instances(draw, brute: bool = False):
    S = draw(st.integers(1, 1 if brute else 2))
    gpus = tuple(draw(st.integers(2, 4)) for _ in range(S))
    cap = draw(st.integers(1, min(gpus) - 1))  # delta_max < 1 (A3)
    slots = draw(st.integers(1, 3 if brute else 5))
    nic = draw(st.sampled_from([0.25, 0.5]))
    n = draw(st.integers(1, 3))
    jobs = []
    for jid in range(n):
        wmax = draw(st.integers(1, cap * S))
        wmin = draw(st.integers(1, wmax))
        ys = enumerate_configs(gpus, wmin, wmax, cap)
        ys = ys[:4] if brute else ys
        if not ys:
            ys = enumerate_configs(gpus, 1, 1, cap)
            wmin = wmax = 1
        prog = [draw(st.integers(1, 4)) for _ in ys]
        a = draw(st.integers(0, slots - 1))
        u = sorted((draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0])) for _ in range(slots - a)), reverse=True)
        jobs.append(job(jid, a, draw(st.integers(1, 8)), [0.0] * a + u, ys, prog, wmin, wmax))
    return Instance(gpus=gpus, slots=slots, nic_share=nic, jobs=tuple(jobs), max_per_server=cap)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(brute=True))
def test_milp_equals_brute_force(inst):
    opt = solve(inst)
    assert opt.optimal
    assert opt.utility == pytest.approx(brute_force(inst), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_gadget_ratio_at_least_its_bound(inst):
    opt = solve(inst)
    verify(inst, opt.completion, opt.schedule)
    for rule in ("textbook", "quantised"):
        p = theorem_parameters(inst, rule)
        g = run_gadget(inst, "exact", p)
        assert g.utility <= opt.utility * (1 + REL) + 1e-12  # GADGET's schedule is feasible
        ratio = g.utility / opt.utility if opt.utility > 0 else 1.0
        assert ratio >= p.bound * (1 - REL)
        assert opt.utility <= g.dual * (1 + REL) + 1e-12  # the dual certificate of the proof
        # the plans GADGET committed are feasible by themselves
        verify(inst, {o.id: o.completion for o in g.outcomes if o.admitted},
               {o.id: o.schedule for o in g.outcomes if o.admitted})
        # strict admission never admits a non-positive payoff
        assert all(o.payoff > 0 for o in g.outcomes if o.admitted)
    for variant in ("fast", "contiguous"):
        f = run_gadget(inst, variant, theorem_parameters(inst, "quantised"))
        assert f.utility <= opt.utility * (1 + REL) + 1e-12
        assert all(o.beta_eff >= 1 for o in f.outcomes if o.beta_eff is not None)
    # packing one-server rings within the slack: feasible, above its own (weaker) bound, and the
    # dual certificate still bounds OPT (docs/theory.md, section 5, packing)
    p = theorem_parameters(inst, "quantised")
    for eps in (0.5, 4.0):
        k = run_gadget(inst, "exact", p, pack_slack=eps)
        verify(inst, {o.id: o.completion for o in k.outcomes if o.admitted},
               {o.id: o.schedule for o in k.outcomes if o.admitted})
        ratio = k.utility / opt.utility if opt.utility > 0 else 1.0
        assert ratio >= (guaranteed_ratio(p.theta, 1.0, eps) if p.bound > 0 else 0.0) * (1 - REL)
        assert opt.utility <= k.dual * (1 + REL) + 1e-12
        assert all(o.cost <= o.utility - o.payoff + eps * o.utility + 1e-9 for o in k.outcomes if o.admitted)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(brute=True))
def test_U_and_L_are_the_tight_bounds_of_the_plan_set(inst):
    """(A1) and (A2) hold for every first-completion plan of positive utility, and L is attained."""
    p = theorem_parameters(inst)
    if not p.has_plans:
        return
    ratios = []
    for j in inst.jobs:
        D = inst.demand(j)
        for T, sched in job_plans(inst, j):
            u = j.u[T]
            ratios.append(u / sum(D[c] for _, c in sched))
            for _, c in sched:
                assert u / inst.min_share(j)[c] <= p.U * (1 + REL)
    assert min(ratios) == pytest.approx(p.L, rel=1e-9)


def test_guaranteed_ratio_formula():
    assert guaranteed_ratio(2.0) == pytest.approx(0.25)
    assert guaranteed_ratio(0.5) == pytest.approx(1 / 1.5)  # theta < 1: 1 / (1 + theta)
    assert guaranteed_ratio(2.0, beta=2.0) == pytest.approx(0.125)
    assert guaranteed_ratio(2.0, pack_slack=1.0) == pytest.approx(1 / 6)  # (2 + eps) theta
    assert guaranteed_ratio(0.5, pack_slack=1.0) == pytest.approx(1 / 2)  # 1 + (1 + eps) theta


# ------------------------------------------------------------------ random instances
def test_random_instances_are_valid_and_deterministic():
    a = random_instance(np.random.default_rng([7, 1]))
    b = random_instance(np.random.default_rng([7, 1]))
    assert a.to_json() == b.to_json()
    assert Instance.from_dict(json.loads(a.to_json())).to_json() == a.to_json()
    for i in range(5):
        inst = random_instance(np.random.default_rng([7, i]))
        assert inst.delta_max < 1
        assert 2 <= inst.num_servers <= 3 and inst.slots <= 16 and len(inst.jobs) <= 8
        assert all(j.configs for j in inst.jobs)


def test_random_instance_gadget_never_beats_the_optimum():
    inst = random_instance(np.random.default_rng([3, 0]), max_jobs=5, max_slots=10)
    opt = solve(inst)
    for rule in ("textbook", "quantised", "one"):
        g = run_gadget(inst, rule=rule)
        assert g.utility <= opt.utility * (1 + REL)
    for variant in ("fast", "contiguous"):
        assert run_gadget(inst, variant).utility <= opt.utility * (1 + REL)


# ------------------------------------------------------------------ the CLI
KEYS = {"instances", "mean_ratio", "min_ratio", "bound", "violations", "mean_wall_s", "max_gap",
        "fast_mean_ratio", "beta_observed_max", "contig_mean_ratio", "contig_beta_observed_max", "by_rule",
        "pack_slack", "packed_mean_ratio", "packed_bound", "packed_violations", "packed_dual_violations"}


def _stable(d: dict) -> dict:
    return {k: v for k, v in d.items() if "wall" not in k}


def test_cli_json_keys_and_determinism(cli):
    args = ("optimum-check", "--instances", "2", "--seed", "5", "--max-jobs", "4", "--max-slots", "8", "--json")
    code, out, err = cli(*args)
    assert code == 0, err
    first = json.loads(out)
    assert KEYS <= set(first)
    assert first["instances"] == 2 and first["violations"] == 0 and first["packed_violations"] == 0
    assert 0 < first["min_ratio"] <= first["mean_ratio"] <= 1 + 1e-9
    code, out2, _ = cli(*args)
    assert code == 0 and _stable(json.loads(out2)) == _stable(first)


@pytest.mark.parametrize("args", [("--instances", "0"), ("--zeta", "nope"), ("--max-jobs", "1"),
                                  ("--time-limit", "0"), ("--workers", "0")])
def test_cli_bad_options(cli, args):
    code, out, err = cli("optimum-check", *args, "--json")
    assert code == 2
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ringsched: error:")


def test_price_thresholds_of_the_rules():
    inst = random_instance(np.random.default_rng([7, 2]))
    tb, q, one = (theorem_parameters(inst, r) for r in ("textbook", "quantised", "one"))
    assert tb.zeta_gpu == tb.zeta_nic == pytest.approx(0.5)  # 1 - delta_max
    assert q.zeta_gpu == pytest.approx(0.75) and q.zeta_nic == pytest.approx(1.0)  # 4-GPU servers, 2 per server, nu = 1/2
    assert q.bound >= tb.bound > 0 and one.bound == 0
    assert tb.U == q.U and tb.L == q.L
