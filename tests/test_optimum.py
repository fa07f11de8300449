"""The exact offline optimum (MILP), GADGET on discrete instances and the competitive ratio
(docs/theory.md)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringsched.optimum import (DiscreteJob, Instance, brute_force, random_instance, run_production, small_demand_instance,
                               solve, theorem_parameters, verify)
from ringsched.optimum.adapter import DiscreteSpeed, job_of, outcome, theorem_params
from ringsched.optimum.check import make_instance
from ringsched.optimum.controls import CONTROLS, run_control
from ringsched.optimum.instance import cluster_of, enumerate_configs
from ringsched.optimum.milp import job_plans
from ringsched.optimum.theorem import guaranteed_ratio, min_cost_by_completion
from ringsched.policies.gadget import Gadget
from ringsched.simulator import SimConfig, Simulator

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
        g = run_production(inst, theorem_parameters(inst, rule))
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
def tiny_instances(draw, brute: bool = False, crossing: bool = False):
    """Tiny random instances; ``crossing``: every ring crosses servers and a NIC holds one or
    two rings (NIC capacity and prices bind)."""
    S = draw(st.integers(1, 1 if brute else 2)) if not crossing else draw(st.integers(2, 3))
    gpus = tuple(draw(st.integers(2, 4)) for _ in range(S))
    cap = draw(st.integers(1, min(gpus) - 1))  # delta_max < 1 (A3)
    slots = draw(st.integers(1, 3 if brute else 5))
    nic = draw(st.sampled_from([0.4, 0.75] if crossing else [0.25, 0.5]))
    n = draw(st.integers(1, 3 if not crossing else 4))
    jobs = []
    for jid in range(n):
        wmax = draw(st.integers(1, cap * S))
        wmin = draw(st.integers(1, wmax))
        ys = enumerate_configs(gpus, wmin, wmax, cap)
        ys = ys[:4] if brute else ys
        if crossing:
            ys = [y for y in ys if sum(v > 0 for v in y) > 1] or [(1,) * S]
            wmin, wmax = min(wmin, min(map(sum, ys))), max(wmax, max(map(sum, ys)))
        if not ys:
            ys = enumerate_configs(gpus, 1, 1, cap)
            wmin = wmax = 1
        by_shape: dict = {}  # progress depends on the ring's shape (w, k, d) only, as in the performance model
        prog = [by_shape.setdefault((sum(y), sum(v > 0 for v in y), max(y)), draw(st.integers(1, 4))) for y in ys]
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


def reference_payoffs(inst, run):
    """Replay a run: at each arrival, the prices of the plans committed before it, and the best
    payoff over every fitting first-completion plan by an independent dynamic program
    (``min_cost_by_completion`` on the costs of every configuration: the exact subroutine)."""
    price_g, price_n = run.params.prices()
    used_gpu = np.zeros((inst.num_servers, inst.slots), dtype=np.int64)
    used_nic = np.zeros((inst.num_servers, inst.slots))
    out = {}
    by_id = {o.id: o for o in run.outcomes}
    for j in sorted(inst.jobs, key=lambda j: (j.arrival, j.id)):
        a = j.arrival
        pg, pn = price_g(used_gpu / inst.O[:, None]), price_n(used_nic)
        occ = (j.Y > 0) & j.multi[:, None]
        cost = (j.Y / inst.O) @ pg[:, a:] + inst.nic_share * (occ @ pn[:, a:])
        fit = np.all(j.Y[:, :, None] <= (inst.O[:, None] - used_gpu[:, a:])[None], axis=1)
        fit &= np.all(~occ[:, :, None] | (used_nic[:, a:] + inst.nic_share <= 1 + 1e-9)[None], axis=1)
        cost = np.where(fit, cost, np.inf).T
        mc = min_cost_by_completion(cost, np.broadcast_to(j.g, cost.shape), j.work)
        out[j.id] = float(np.max(j.u[a:] - mc)) if np.isfinite(mc).any() else -np.inf
        for t, c in by_id[j.id].schedule:
            used_gpu[:, t] += j.Y[c]
            if j.multi[c]:
                used_nic[j.Y[c] > 0, t] += inst.nic_share
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(tiny_instances(), tiny_instances(crossing=True)))
def test_production_gadget_is_the_theorem_algorithm_and_meets_its_bound(inst):
    """The production policy in its theorem configuration (``adapter``): its schedule is
    feasible, every admission takes the best payoff over every fitting plan at the prices of
    the moment (an independent dynamic program) and is positive, every rejection had none
    positive, the ratio is at least the bound and the final dual bounds OPT."""
    opt = solve(inst)
    verify(inst, opt.completion, opt.schedule)
    for rule in ("textbook", "quantised"):
        p = theorem_parameters(inst, rule)
        g = run_production(inst, p)
        verify(inst, {o.id: o.completion for o in g.outcomes if o.admitted},
               {o.id: o.schedule for o in g.outcomes if o.admitted})
        assert g.utility <= opt.utility * (1 + REL) + 1e-12
        best = reference_payoffs(inst, g)
        for o in g.outcomes:
            if o.admitted:
                assert o.payoff > 0 and o.payoff == pytest.approx(best[o.id], rel=1e-9, abs=1e-12)
            else:
                assert best[o.id] <= 1e-9 * max(1.0, abs(best[o.id]))
        ratio = g.utility / opt.utility if opt.utility > 0 else 1.0
        assert ratio >= p.bound * (1 - REL)
        assert opt.utility <= g.dual * (1 + REL) + 1e-12  # the dual certificate of the proof
    contiguous = run_production(inst, theorem_parameters(inst, "quantised"), "contiguous")  # trace-mode search
    verify(inst, {o.id: o.completion for o in contiguous.outcomes if o.admitted},
           {o.id: o.schedule for o in contiguous.outcomes if o.admitted})



class WorldSpeed(DiscreteSpeed):
    """``DiscreteSpeed`` as a simulated world uses it: the progress it credits a placement."""

    def progress_sps(self, job, done_samples, placement, inter_Bps=None):
        return self.throughput_sps(job.model, job.local_bsz, self.shape(placement))


class World(Simulator):
    """The simulator on a discrete instance. Its isolated-time metric asks for one-server rings
    wider than the instance's worker cap, which have no progress there; it is a metric, never
    shown to the policy."""

    def _isolated_s(self, job):
        return 1.0


class Recording(Gadget):
    """The production policy, keeping the plan it committed at each admission."""

    def __init__(self, params):
        super().__init__(params)
        self.at_admission = {}

    def admit(self, job, nodes):
        reason = super().admit(job, nodes)
        if reason is None:
            plan = self.plans[job.job_id]
            self.at_admission[job.job_id] = replace(plan, segments=list(plan.segments))  # (segments may move later)
        return reason


@pytest.mark.parametrize("regime,index", [("default", 0), ("default", 9), ("default", 25), ("small-demand", 1),
                                          ("small-demand", 4)])
def test_the_policy_in_the_simulated_world_decides_as_the_check(regime, index):
    """The check's adapter offers each job to ``Gadget.admit``; the same policy with the same
    options, run by the simulator on the same jobs (its own admission order, decisions at slot
    boundaries, its optimize between them), admits the same jobs with the same plans, and they
    complete in the same slots. Instances where the two once differed: same-slot arrivals
    admitted "j10" before "j9" (small-demand 1), and a plan segment moved onto the servers its
    job ran on (``stay_put``; default 0, 9, 25, small-demand 4)."""
    inst = make_instance(index, 7, regime)
    params = theorem_parameters(inst, "quantised")
    check = run_production(inst, params)
    jobs = [job_of(inst, j) for j in inst.jobs]
    pol = Recording(theorem_params(inst, params))
    world = World(jobs, cluster_of(inst.gpus), pol, SimConfig(slot_s=inst.slot_s, restart_s=0.0, decide_at_events=False),
                  speed=WorldSpeed(inst)).run().jobs.set_index("job_id")
    by_name = {job.job_id: j for job, j in zip(jobs, inst.jobs)}
    admitted = {job.job_id: o for job, o in zip(jobs, sorted(check.outcomes, key=lambda o: o.id)) if o.admitted}
    assert set(pol.at_admission) == set(admitted) == set(world.index[world.status != "rejected"])
    for name, o in admitted.items():
        mine = outcome(inst, by_name[name], pol.at_admission[name])
        assert (mine.schedule, mine.payoff) == (o.schedule, o.payoff), name
        row = world.loc[name]
        assert row.status == "completed"
        slot = int(round(row.arrival_s / inst.slot_s)) + math.ceil(row.jct_s / inst.slot_s - 1e-9) - 1
        assert slot == o.completion, name
    assert float(world.utility.sum()) == pytest.approx(check.utility, rel=1e-12)

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
        for subroutine in ("exact", "contiguous"):
            assert run_production(inst, theorem_parameters(inst, rule), subroutine).utility <= opt.utility * (1 + REL)


def test_small_demand_instances_are_in_the_regime():
    """At most 1/16 of any resource per configuration, utilities of at most 2, truncated
    below half their maximum, deterministic."""
    for i in range(3):
        inst = small_demand_instance(np.random.default_rng([4, i]))
        assert inst.delta_max <= 1 / 16 + 1e-12 and inst.max_per_server == 1
        assert inst.to_json() == small_demand_instance(np.random.default_rng([4, i])).to_json()
        for j in inst.jobs:
            u = j.u[j.arrival:]
            assert 0 < u.max() <= 2 and np.all((u == 0) | (u >= 0.5 * u.max()))


def test_controls_on_a_small_demand_instance():
    inst = small_demand_instance(np.random.default_rng([4, 0]))
    opt = solve(inst)
    got = {c: run_control(inst, c, seed=0) for c in CONTROLS}
    assert got["one-job"] <= 2.0 < opt.utility / 10  # one job of value at most 2
    assert all(v <= opt.utility * (1 + REL) for v in got.values())
    assert got["random"] < got["first-come"]
    p = theorem_parameters(inst, "quantised")
    assert got["one-job"] / opt.utility < p.bound  # the control that the bound catches



def test_the_check_reports_a_gadget_run_below_its_bound(monkeypatch):
    """The check can fail for GADGET too: a run worth nothing (and a dual of 0) on an instance
    with OPT > 0 is a violation of the bound and of the dual certificate, under both rules."""
    from ringsched.optimum import check

    real = check.run_production
    monkeypatch.setattr(check, "run_production", lambda *a: replace(real(*a), utility=0.0, dual=0.0))
    rec = check.check_instance(0, 5, max_jobs=4, max_slots=8)
    assert rec["opt"] > 0
    for rule in check.RULES:
        assert rec[rule]["violation"] and rec[rule]["dual_violation"], rule
    s = check.summarize([rec])
    assert (s["violations"], s["dual_violations"], s["min_ratio"]) == (1, 1, 0.0)

# ------------------------------------------------------------------ the CLI
KEYS = {"instances", "mean_ratio", "p10_ratio", "min_ratio", "min_bound", "violations", "controls",
        "share_within_0_9", "dual_violations", "contiguous_mean_ratio", "mean_wall_s", "max_gap", "by_rule"}


def _stable(d: dict) -> dict:
    return {k: v for k, v in d.items() if "wall" not in k}


def test_cli_json_keys_and_determinism(cli):
    args = ("optimum-check", "--instances", "2", "--seed", "5", "--max-jobs", "4", "--max-slots", "8", "--json")
    code, out, err = cli(*args)
    assert code == 0, err
    first = json.loads(out)
    assert KEYS <= set(first)
    assert first["instances"] == 2 and first["violations"] == 0 and first["dual_violations"] == 0
    assert 0 < first["min_ratio"] <= first["p10_ratio"] <= first["mean_ratio"] <= 1 + 1e-9
    assert set(first["controls"]) == set(CONTROLS)
    code, out2, _ = cli(*args)
    assert code == 0 and _stable(json.loads(out2)) == _stable(first)


def test_cli_small_demand_regime_has_a_meaningful_bound_that_a_control_violates(cli):
    code, out, err = cli("optimum-check", "--regime", "small-demand", "--instances", "2", "--json")
    assert code == 0, err
    s = json.loads(out)
    assert s["regime"] == "small-demand" and s["min_bound"] >= 0.05 and s["violations"] == 0
    assert s["controls"]["one-job"]["violations"] == 2 and s["mean_ratio"] >= 0.9


@pytest.mark.parametrize("args", [("--instances", "0"), ("--zeta", "nope"), ("--max-jobs", "1"), ("--regime", "tiny"),
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
