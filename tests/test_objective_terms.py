"""What each objective changes in GADGET (policies/gadget/objective_terms.py) and how the
suite judges it (``suite --objective``): the convergence stop is the scheduler's, GADGET plans
to the estimated convergence point, the rho guard, the energy exchange rate, one value per
deadline, and the objective tables recomputed from the suite's Parquet (docs/objectives.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.experiment.objectives import parse_objective
from ringsched.experiment.objectives.curves import converge_epochs, learning_curve, online_stop_epochs
from ringsched.experiment.run import run_one
from ringsched.job import Job
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies.base import JobState, Nodes
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.objective_terms import guard_swap, make_room, overdue, plan_overdue, planned_remaining
from ringsched.policies.gadget.offers import offer_unplanned
from ringsched.policies.gadget.policy import Gadget
from ringsched.utility import jct_utility

RULE = {"min_delta": 0.002, "patience": 5, "min_epochs": 10}


def vgg(cluster, epochs: int = 200, job_id: str = "v", workers: int = 8) -> Job:
    """A vgg16 job typed far past its curve's plateau (tau = 15 epochs)."""
    rate = SpeedModel(cluster).throughput_sps("vgg16", 64, consolidated_shape(workers, 8))
    work = epochs * 1_281_167
    return Job(job_id, 0.0, "vgg16", 64, work, 1, workers, jct_utility(work / rate, workers))


# ------------------------------------------------------------------------------ convergence
def test_convergence_estimate_comes_from_the_curve_alone():
    """Every job of a model gets the same estimate whatever it typed (nothing of its own work
    leaks into it), the first epoch at which the online rule fires on the model's curve.
    Mutant caught: estimating on the curve extended only to the typed epochs (None for the
    short job)."""
    c = parse_spec("2x8")
    short, long_ = vgg(c, 20, "s"), vgg(c, 400, "l")
    jobs = parse_objective("convergence").prepare_jobs([short, long_], c, SpeedModel(c))
    curve = learning_curve("vgg16")
    n = int(np.argmax(online_stop_epochs(curve.best, **RULE))) + 1
    assert converge_epochs(curve, **RULE) == n
    assert jobs[0].converge_samples == jobs[1].converge_samples == pytest.approx(n * curve.epoch_samples)


def test_the_stop_is_the_schedulers_unless_the_world_stops_everyone():
    """stop=policy (default): only a policy that takes the stop (GADGET) has its jobs stopped;
    the same GADGET deciding as under jct is not. stop=world: fifo too. Mutant caught: a stop
    rule that ignores the policy's options (fifo stopped under stop=policy)."""
    c = parse_spec("2x8")
    jobs = [vgg(c)]
    stopped = {}
    for obj, pol, decide in (("convergence", "fifo", None), ("convergence", "gadget", None),
                             ("convergence", "gadget", "jct"), ("convergence,stop=world", "fifo", None)):
        r = run_one(obj, jobs, c, pol, decide_as=decide)
        stopped[(obj, pol, decide)] = int(r.summary["jobs_stopped_early"])
        assert r.summary["target_reached"] == 1
        assert r.summary["gpu_hours_per_target"] == pytest.approx(r.summary["gpu_hours"])
    assert stopped == {("convergence", "fifo", None): 0, ("convergence", "gadget", None): 1,
                       ("convergence", "gadget", "jct"): 0, ("convergence,stop=world", "fifo", None): 1}


def test_gadget_plans_the_work_up_to_the_convergence_point():
    """With stop_converged a plan is made for the samples left to the estimate, not to the
    typed epochs (past the estimate, for what is left). Mutants caught: ignoring the flag
    (the jct decisions would change: the first assertion) or the estimate (the plan's finish)."""
    c = parse_spec("2x8")
    sp = SpeedModel(c)
    j = dataclasses.replace(vgg(c), converge_samples=50 * 1_281_167)
    js = JobState(j, 0, 1.0)
    assert planned_remaining(js, 0.0, False) == js.remaining_at(0.0) == j.work_samples
    assert planned_remaining(js, 0.0, True) == pytest.approx(j.converge_samples)
    js.done_samples = j.converge_samples + 1.0
    assert planned_remaining(js, 0.0, True) == js.remaining_at(0.0)  # past it: the rest
    nodes = Nodes(c, np.ones(c.num_servers, dtype=bool), 0.0, 300.0, sp)
    finish = {}
    for flag in (False, True):
        g = Gadget(stop_converged=flag)
        g._ensure(nodes, [j])
        finish[flag] = g.offer(JobState(j, 0, 1.0), nodes, 0, must=True).finish_s
    rate = sp.throughput_sps("vgg16", 64, consolidated_shape(8, 8))
    assert finish[True] < 0.5 * finish[False]
    assert finish[True] >= j.converge_samples / (2 * rate)  # at most 16 GPUs: not before that


# ------------------------------------------------------------------------------ fairness
def test_overdue_jobs_are_those_about_to_pass_the_rho_guard():
    """A job without a plan that has waited (guard - 1) x its isolated time. Mutants caught:
    the guard's (guard - 1) factor dropped (overdue at 1000 s, not 900 s), planned jobs not
    excluded, the guard 0 not off."""
    c = parse_spec("1x8")
    j = Job("a", 0.0, "resnet50", 64, 1e6, 1, 1, jct_utility(100.0, 1))
    js = JobState(j, 0, 100.0)
    assert overdue([js], 899.0, 10.0, {}) == set()
    assert overdue([js], 900.0, 10.0, {}) == {"a"}
    assert overdue([js], 1e6, 10.0, {"a": object()}) == set()
    assert overdue([js], 1e6, 0.0, {}) == set()
    assert c.total_gpus == 8


def test_an_overdue_job_gets_its_earliest_plan_at_once():
    """``earliest``: the plan that finishes first whatever its payoff, not started late.
    Mutant caught: late starts kept for it (late=True), which starts it later."""
    c = parse_spec("2x8")
    sp = SpeedModel(c)
    j = Job("b", 0.0, "resnet50", 64, 3e6, 1, 8, jct_utility(36000.0, 8))
    nodes = Nodes(c, np.ones(c.num_servers, dtype=bool), 0.0, 300.0, sp)
    g = Gadget(late_share=0.9)
    g._ensure(nodes, [j])
    late = g.search(j, j.work_samples, nodes, 0, horizon_end_s=10 * 86400.0)
    first = g.search(j, j.work_samples, nodes, 0, horizon_end_s=10 * 86400.0, earliest=True)
    assert first.segments[0][0] == 0 and late.segments[0][0] > 0
    assert first.finish_s < late.finish_s


def _room_case(guard_x: bool, x_priority: int = 0):
    """At slot 0: an 8-GPU job ``w`` of 1,000 s alone, overdue, and three 1-GPU plans on server
    0 that have not started: ``g`` (planned by the guard) in slots 1-5, ``x`` in slots 2-39 and
    ``y`` in slots 50-59 (``x`` guarded too when ``guard_x``, of ``x_priority``). Returns the
    policy, ``w``'s state, the nodes, every job's state and ``w``'s plan from the ledger alone."""
    c = parse_spec("1x8")
    sp = SpeedModel(c)
    rate = sp.throughput_sps("resnet50", 64, consolidated_shape(8, 8))
    w = Job("w", 0.0, "resnet50", 64, 1000.0 * rate, 8, 8, jct_utility(1000.0, 8))
    nodes = Nodes(c, np.ones(1, dtype=bool), 0.0, 300.0, sp)
    g = Gadget()
    g._ensure(nodes, [w])
    active = {"w": JobState(w, 0, 1000.0)}
    for n, (jid, a, z) in enumerate((("g", 1, 6), ("x", 2, 40), ("y", 50, 60))):
        j = Job(jid, 0.0, "resnet50", 64, rate, 1, 1, jct_utility(1000.0, 1), priority=x_priority if jid == "x" else 0)
        active[jid] = JobState(j, n + 1, 1000.0)
        g.book.commit(jid, Plan([(a, z, (0,))], z * 300.0, 1.0, 0.0))
        g.last_try[jid] = 0
    g.guarded = {"g", "x"} if guard_x else {"g"}
    g.overdue = {"w"}
    js = active["w"]
    return g, js, nodes, active, g.offer(js, nodes, 0, must=True)


def test_an_overdue_job_is_planned_ahead_of_plans_not_started():
    """The ledger alone places ``w`` after ``x`` (slot 40). With room made, ``w`` runs right
    after the guarded ``g`` (slot 6), ``x`` (in the way) is left without a plan and due for an
    offer, ``y`` keeps its plan, ``g`` is not moved. Mutants caught: no room made (``w`` at 40),
    guarded plans moved too (``w`` at 0, ``g`` gone), plans that still fit not restored
    (``y`` gone), the displaced job not made due (``last_try`` kept)."""
    g, js, nodes, active, plan = _room_case(guard_x=False)
    assert plan.first_slot == 40
    assert make_room(g, js, plan, nodes, 0, active, {}) is not None
    new = g.book.plans["w"]
    assert new.first_slot == 6 and new.finish_s < plan.finish_s
    assert "x" not in g.book.plans and "x" not in g.last_try
    assert g.book.plans["y"].segments == [(50, 60, (0,))] and g.book.plans["g"].segments == [(1, 6, (0,))]
    used, _ = g.book.ledger.window(0, 60)
    assert used.max() <= 8 and used[0, 6] == 8 and used[0, 2] == 1


def test_the_policy_makes_room_for_an_overdue_offer():
    """The same case through ``offer_unplanned``: the overdue job's plan starts at slot 6 and
    counts as guarded. Mutant caught: the policy not calling ``make_room`` (slot 40)."""
    g, js, nodes, active, _ = _room_case(guard_x=False)
    offer_unplanned(g, [js], active, nodes, 0, {"w"}, {}, {"w"})
    assert g.book.plans["w"].first_slot == 6 and "w" in g.guarded


def test_no_room_made_when_nothing_finishes_sooner_leaves_the_book_as_it_was():
    """``x`` guarded too: nothing can move, ``w`` keeps what the ledger gave it, and the book's
    plans, ledger and release counts are as before. Mutant caught: the plans released and not
    restored (``y`` gone, the ledger emptied)."""
    g, js, nodes, active, plan = _room_case(guard_x=True)
    before = ({k: list(p.segments) for k, p in g.book.plans.items()}, g.book.ledger.window(0, 70)[0].copy(),
              g.book.epoch)
    assert make_room(g, js, plan, nodes, 0, active, {}) is None
    after = ({k: list(p.segments) for k, p in g.book.plans.items()}, g.book.ledger.window(0, 70)[0], g.book.epoch)
    assert after[0] == before[0] and np.array_equal(after[1], before[1]) and after[2] == before[2]


def test_no_room_is_made_from_a_plan_of_higher_priority():
    """``x`` of a higher priority than ``w``: its plan is not released (priority is a strict
    class, as in displacement), so nothing finishes sooner and the book stays. Mutant caught:
    priority ignored (``x`` unplanned, ``w`` at slot 6)."""
    g, js, nodes, active, plan = _room_case(guard_x=False, x_priority=1)
    assert make_room(g, js, plan, nodes, 0, active, {}) is None
    assert g.book.plans["x"].segments == [(2, 40, (0,))] and "w" not in g.book.plans


T = 3000  # (the swap cases' slot: jobs arrive at or after 0)


def _swap_case(plans: dict):
    """1x2 at slot ``T`` (900 ks, 300 s slots): an overdue 1-GPU job ``s`` of 300 s alone that
    arrived 3,000 s ago, and 1-GPU jobs ``jid: (isolated s, arrival s from now, first slot, end
    slot from T, guarded)`` with those plans on server 0. Returns the policy, the nodes, every
    job's state and ``s``'s plan from the ledger alone."""
    c = parse_spec("1x2")
    sp = SpeedModel(c)
    rate = sp.throughput_sps("resnet50", 64, consolidated_shape(1, 8))
    nodes = Nodes(c, np.ones(1, dtype=bool), T * 300.0, 300.0, sp)

    def one(jid, iso, arrival, index):
        return JobState(Job(jid, T * 300.0 + arrival, "resnet50", 64, iso * rate, 1, 1, jct_utility(iso, 1)), index,
                        iso)

    active = {"s": one("s", 300.0, -3000.0, 0)}
    for n, (jid, (iso, arrival, a, z, _)) in enumerate(plans.items()):
        active[jid] = one(jid, iso, arrival, n + 1)
    g = Gadget()
    g._ensure(nodes, list(active.values()))
    for jid, (iso, arrival, a, z, guarded) in plans.items():
        g.book.commit(jid, Plan([(T + a, T + z, (0,))], (T + z) * 300.0, 1.0, 0.0))
        if guarded:
            g.guarded.add(jid)
    g.overdue = {"s"}
    return g, nodes, active, g.offer(active["s"], nodes, T, must=True)


def _book_state(g):
    return ({k: list(p.segments) for k, p in g.book.plans.items()}, g.book.ledger.window(T, T + 800)[0].copy(),
            g.book.epoch, list(g.book.freed), set(g.overdue))


def test_an_overdue_job_pushes_back_the_longest_guard_plan_when_the_worse_rho_falls():
    """Both GPUs held by the guard's started plans (``a``: 200 ks alone, rho 5.1; ``b``: 100 ks):
    the ledger starts ``s`` after slot 400 (rho over 400). The swap gives it ``a``'s GPU now and plans
    ``a`` again (its rho rises by under 0.05); ``b`` is not touched. Mutants caught: no swap; the
    victim not planned again."""
    g, nodes, active, plan = _swap_case({"a": (200_000.0, -900_000.0, 0, 700, True),
                                         "b": (100_000.0, -500_000.0, 0, 400, True)})
    assert plan.first_slot >= T + 400
    assert guard_swap(g, active["s"], plan, nodes, T, active, {})
    assert g.book.plans["s"].first_slot == T and g.book.plans["b"].segments == [(T, T + 400, (0,))]
    moved = g.book.plans["a"]
    assert moved.first_slot > T and "a" in g.guarded
    assert 0 < moved.finish_s - (T + 700) * 300.0 < 0.05 * 200_000  # (its rho rises by under 0.05)
    assert g.book.ledger.window(T, T + 800)[0].max() <= 2


def test_a_guard_swap_that_would_raise_the_worse_rho_leaves_the_book_as_it_was():
    """``a`` and ``b`` (1,000 s alone, rho already 20.6) hold both GPUs for two slots; ``s``
    waits to slot 2 (rho 13). Pushing ``a`` back would raise the worse rho: no swap, and the
    plans, ledger, release counts and overdue set are as before. Mutants caught: the rho test
    dropped (the swap kept); the victim's plan not restored; ``overdue`` losing a job."""
    g, nodes, active, plan = _swap_case({"a": (1000.0, -20_000.0, 0, 2, True), "b": (1000.0, -20_000.0, 0, 2, True)})
    assert plan.first_slot == T + 2
    g.overdue |= {"a", "b"}  # (as if they had become overdue and been planned earlier in this decision)
    before = _book_state(g)
    assert not guard_swap(g, active["s"], plan, nodes, T, active, {})
    after = _book_state(g)
    assert after[0] == before[0] and np.array_equal(after[1], before[1]) and after[2:] == before[2:]


def test_plans_dropped_for_room_come_back_after_a_swap():
    """``a`` (guarded, started, to slot 700), ``b`` (guarded, to slot 3) and ``x`` (not started:
    slots 3-400). Room first: ``x`` is released and ``s`` planned at slot 3, where ``x`` no
    longer fits; the swap then plans ``s`` at once on ``a``'s GPU, so ``x``'s plan fits again
    and is committed as it was. Mutant caught: the plans ``make_room`` dropped left unplanned."""
    g, nodes, active, plan = _swap_case({"a": (200_000.0, -900_000.0, 0, 700, True),
                                         "b": (900.0, -4000.0, 0, 3, True),
                                         "x": (120_000.0, 0.0, 3, 400, False)})
    assert plan.first_slot >= T + 400
    assert plan_overdue(g, active["s"], plan, nodes, T, active, {})
    assert g.book.plans["s"].first_slot == T and g.book.plans["x"].segments == [(T + 3, T + 400, (0,))]
    assert g.book.ledger.window(T, T + 800)[0].max() <= 2


def test_a_server_down_now_does_not_unplan_the_plans_ahead_on_it():
    """3x8, server 2 down now. 8-GPU plans: ``g`` (slot 0, started) and ``x`` (slots 1-39) on
    server 0, ``h`` (slots 0-39, started) on server 1, ``y`` (slots 2-59) on server 2. ``w``
    makes room on server 0 after ``g``; ``x`` is in its way, ``y`` is not and keeps its plan
    (plans lie ahead, where the server may be back; the planner prices those slots at full
    capacity too). Mutant caught: room checked against the capacity up now (``y`` dropped)."""
    c = parse_spec("3x8")
    sp = SpeedModel(c)
    rate = sp.throughput_sps("resnet50", 64, consolidated_shape(8, 8))
    w = Job("w", 0.0, "resnet50", 64, 1000.0 * rate, 8, 8, jct_utility(1000.0, 8))
    nodes = Nodes(c, np.array([True, True, False]), 0.0, 300.0, sp)
    g = Gadget()
    g._ensure(nodes, [w])
    active = {"w": JobState(w, 0, 1000.0)}
    for n, (jid, a, z, srv) in enumerate((("g", 0, 1, 0), ("h", 0, 40, 1), ("x", 1, 40, 0), ("y", 2, 60, 2))):
        active[jid] = JobState(Job(jid, 0.0, "resnet50", 64, rate, 8, 8, jct_utility(1000.0, 8)), n + 1, 1000.0)
        g.book.commit(jid, Plan([(a, z, (srv,) * 8)], z * 300.0, 1.0, 0.0))
    g.overdue = {"w"}
    plan = g.offer(active["w"], nodes, 0, must=True)
    assert plan.first_slot == 40
    assert make_room(g, active["w"], plan, nodes, 0, active, {}) is not None
    assert g.book.plans["w"].first_slot == 1 and "x" not in g.book.plans
    assert g.book.plans["y"].segments == [(2, 60, (2,) * 8)]


# ------------------------------------------------------------------------------ energy, deadline
def test_energy_is_priced_at_the_workloads_utility_per_joule():
    """price=ratio: sum of the jobs' maximum utilities over their energy alone at the requested
    size (busy GPUs and their share of a server's base power), by hand. Mutant caught: the
    server's base power left out."""
    c = parse_spec("2x8")
    sp = SpeedModel(c)
    jobs = [Job("a", 0.0, "resnet50", 64, 1e6, 2, 2, jct_utility(3600.0, 2)),
            Job("b", 0.0, "vgg16", 64, 2e6, 4, 4, jct_utility(7200.0, 4))]
    obj = parse_objective("energy")
    obj.prepare_jobs(jobs, c, sp)
    joules = sum(j.work_samples / sp.throughput_sps(j.model, 64, consolidated_shape(w, 8)) * w * (700 + 1000 / 8)
                 for j, w in zip(jobs, (2, 4)))
    u = sum(j.utility.max_value for j in jobs)
    assert obj.utility_per_joule() == pytest.approx(u / joules)
    usd = parse_objective("energy,price=usd,usd_per_kwh=0.2,utility_per_usd=3")
    assert usd.utility_per_joule() == pytest.approx(0.6 / 3.6e6)


def test_deadline_runs_are_judged_by_the_jobs_own_values():
    """Under weigh=count GADGET decides with one value per job, but the run's utility is the
    jobs' own deadline values (decision_utility keeps the other). Mutant caught: not
    revaluing (total utility = the decision utility)."""
    c = parse_spec("1x8")
    sp = SpeedModel(c)
    jobs = [Job(f"j{i}", 10.0 * i, "resnet50", 64, 4e6 * (1 + i), 1, 8,
                jct_utility(4e6 * (1 + i) / sp.throughput_sps("resnet50", 64, consolidated_shape(8, 8)), 8))
            for i in range(6)]
    r = run_one("deadline,slack=2,floor_s=0", jobs, c, "gadget")
    t = r.jobs
    met = (t.status == "completed") & (t.jct_s <= t.deadline_s + 1e-9)
    assert 0 < int(met.sum()) < len(jobs)
    own = {j.job_id: j.utility.value for j in jobs}
    assert r.summary["total_utility"] == pytest.approx(sum(own[i] for i in t.job_id[met]))
    mean = float(np.mean(list(own.values())))
    assert r.summary["decision_utility"] == pytest.approx(mean * int(met.sum()))


def test_decide_as_keeps_the_decisions_and_changes_the_judgement():
    """GADGET deciding as under jct inside the deadline objective makes the jct run's decisions
    (same job table times) and is judged by deadlines. Mutant caught: decide_as ignored."""
    from ringsched.cli.workload import load_workload

    wl = load_workload("synthetic:60,load=2", "2x8", vc=None, window=None, limit=None, seed=0, rigid=False)
    ref = run_one("jct", wl.jobs, wl.cluster, "gadget")
    as_jct = run_one("deadline", wl.jobs, wl.cluster, "gadget", decide_as="jct")
    own = run_one("deadline", wl.jobs, wl.cluster, "gadget")
    assert as_jct.summary["decided_as"] == "jct,weigh=count" and own.summary["decided_as"] == own.summary["objective"]
    assert np.array_equal(as_jct.jobs["jct_s"].to_numpy(), ref.jobs["jct_s"].to_numpy())
    assert not np.array_equal(own.jobs["jct_s"].to_numpy(), ref.jobs["jct_s"].to_numpy())
    assert "deadline_met" in as_jct.summary


# ------------------------------------------------------------------------------ the suite
def test_suite_objective_tables_are_recomputed_from_the_parquet(tmp_path):
    """Under --objective the target also runs deciding as jct; its rows stay out of the ratios
    to the best baseline, and the objective tables are plain means over seeds. Mutant caught:
    ratios over every row (the jct reference counted as the target)."""
    from ringsched.experiment.suite import cells_for, ratios, run_suite, write_suite
    from ringsched.experiment.workloads import WORKLOADS

    wl = [dataclasses.replace(w, limit=20) for w in WORKLOADS if w.name == "syn-3"]
    cells = run_suite(cells_for(wl, ["fifo", "srtf", "gadget"], seeds=(0, 1), estimates=("exact",),
                                objective="deadline", target="gadget"), workers=1, show=False).cells
    write_suite(tmp_path, cells, "gadget")
    c = pd.read_parquet(tmp_path / "cells.parquet")
    assert len(c) == 8 and (c.decided_as == "jct,weigh=count").sum() == 2
    own = c[c.decided_as == c.objective]
    assert (c.deadline_met_multi_gpu <= c.deadline_met).all()  # (the objective's details are kept in the cells)
    t = pd.read_parquet(tmp_path / "objective.parquet").iloc[0]
    m = own.groupby("policy")["deadline_met"].mean()
    assert t.metric == "deadline_met" and t.target == pytest.approx(m["gadget"])
    assert t.target_jct == pytest.approx(c[c.decided_as == "jct,weigh=count"]["deadline_met"].mean())
    assert t.baseline == pytest.approx(m.drop("gadget").max()) and t.best_baseline == m.drop("gadget").idxmax()
    r = ratios(c, "gadget").iloc[0]
    assert r.total_utility_target == pytest.approx(own[own.policy == "gadget"]["total_utility"].mean())
    o = pd.read_parquet(tmp_path / "objective_overall.parquet").iloc[0]
    assert o.ratio_to_baseline == pytest.approx(t.ratio_to_baseline)


def test_the_objective_target_is_read_paired_per_seed_with_its_interval():
    """The target is 1%, 2% and 4% ahead of the workload's best baseline (srtf, on the means) on
    its three seeds while the seeds differ 10x: the pairs are those ratios, with their Student-t
    interval, even on the seed where fifo beats srtf; a missing cell drops its pair, and one pair
    alone has no interval. Mutants caught: pairs across seeds (the seeds' spread enters); the
    best baseline taken per seed (fifo on one); the interval of no width or at another level;
    the jct reference counted as the target."""
    from scipy import stats

    from ringsched.experiment.suite_objectives import objective_overall, objective_table

    spec, rows = "deadline,slack=2", []
    ahead = (1.01, 1.02, 1.04)
    for w, scale in (("a", 1.0), ("b", 3.0)):
        for seed, level in enumerate((10.0, 100.0, 1000.0)):
            fifo = 1.03 if (w, seed) == ("a", 0) else 0.9  # (fifo ahead of srtf on one seed only)
            for pol, f, decided in (("gadget", ahead[seed], spec), ("gadget", 0.5, "jct"), ("srtf", 1.0, spec),
                                    ("fifo", fifo, spec)):
                rows.append({"workload": w, "estimates": "exact", "seed": seed, "policy": pol, "objective": spec,
                             "decided_as": decided, "deadline_met": scale * level * f})
    cells = pd.DataFrame(rows)
    t = objective_table(cells, "gadget")
    o = objective_overall(t, cells, "gadget").iloc[0]
    d = np.array([a - 1 for a in ahead] * 2)
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    assert set(t.best_baseline) == {"srtf"} and o.pairs == 6 and o.level == 0.95
    assert o.paired_rel_diff == pytest.approx(d.mean())
    assert (o.ci_low, o.ci_high) == (pytest.approx(d.mean() - half), pytest.approx(d.mean() + half))
    assert o.p_signed_rank == pytest.approx(stats.wilcoxon(d).pvalue)  # 0.031: all six pairs ahead
    gone = cells.drop(index=cells.index[(cells.workload == "b") & (cells.seed == 2) & (cells.policy == "gadget")
                                        & (cells.decided_as == spec)])
    assert objective_overall(objective_table(gone, "gadget"), gone, "gadget").iloc[0].pairs == 5
    one = cells[(cells.workload == "a") & (cells.seed == 1)]
    o1 = objective_overall(objective_table(one, "gadget"), one, "gadget").iloc[0]
    assert o1.pairs == 1 and o1.paired_rel_diff == pytest.approx(0.02) and np.isnan(o1.ci_low)


def test_cli_suite_objective_prints_its_metric(cli, tmp_path):
    code, out, err = cli("suite", "--quick", "--workloads", "syn-0.5", "--policies", "fifo,gadget", "--estimates",
                         "exact", "--seeds", "1", "--workers", "1", "--objective", "energy", "--out", tmp_path / "o")
    assert code == 0, err
    assert "objective energy" in out and "deciding as jct" in err
    assert set(pd.read_parquet(tmp_path / "o" / "objective.parquet")["metric"]) == {"kwh_per_utility"}
    code, _, err = cli("suite", "--quick", "--workloads", "syn-0.5", "--objective", "speed", "--out", tmp_path / "p")
    assert code == 2 and "objective" in err and len(err.strip().splitlines()) == 1
