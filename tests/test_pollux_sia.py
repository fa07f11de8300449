"""The pollux and sia baselines: their searches against brute force, their rules, and runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO, SHARED, needs_shared
from ringsched.cluster import load_cluster, parse_spec
from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.utility.defaults import jct_utility
from ringsched.perfmodel.goodput import goodput_of, goodput_table
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import make_policy
from ringsched.policies.base import JobState, Nodes
from ringsched.policies.pollux import Pollux, allowed_counts, best_counts, power_value, server_counts
from ringsched.policies.sia import CLIP, Sia
from ringsched.simulator.engine import SimConfig, Simulator


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 9), st.integers(0, 10_000))
def test_knapsack_search_finds_the_brute_force_optimum(n_jobs, budget, seed):
    rng = np.random.default_rng(seed)
    counts = [sorted({0} | set(rng.choice(np.arange(1, 7), size=rng.integers(1, 4), replace=False).tolist()))
              for _ in range(n_jobs)]
    values = [rng.normal(size=len(c)) for c in counts]
    got = best_counts(values, counts, budget)
    assert sum(got) <= budget
    value = sum(v[c.index(w)] for v, c, w in zip(values, counts, got))
    best = max(sum(v[i] for v, i in zip(values, pick))
               for pick in itertools.product(*[range(len(c)) for c in counts])
               if sum(c[i] for c, i in zip(counts, pick)) <= budget)
    assert value == pytest.approx(best)


def test_allowed_counts_are_one_server_then_whole_servers():
    assert allowed_counts(1, 64, 4, 64) == [0, 1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64]
    assert allowed_counts(3, 10, 4, 64) == [0, 4, 8]
    assert server_counts(8, 3) == [1, 2, 4, 8, 16, 24] and server_counts(6, 2) == [1, 2, 6, 12]


def _job(i, model="resnet18_cifar10", gpus=2, bsz=128, work=5e6, lo=1, hi=8, arrival=0.0, adaptive=True):
    return Job(f"j{i}", arrival, model, bsz, work, lo, hi, jct_utility(1000.0, gpus), requested_gpus=gpus,
               adaptive_batch=adaptive)


def _states(jobs, now=0.0):
    out = []
    for i, j in enumerate(jobs):
        js = JobState(j, i, 100.0)
        js.status = "active"
        out.append(js)
    return out


def _fitness(policy, states, nodes, counts):
    """Pollux's objective of a count vector, from the same goodputs, by enumeration."""
    total = 0.0
    for js, w in zip(states, counts):
        cnt = allowed_counts(js.job.min_workers, js.job.max_workers, nodes.gpus_per_server, nodes.cluster.total_gpus)
        total += policy._values([js], [tuple(cnt)], nodes)[0][cnt.index(w)]
    return total


@pytest.mark.parametrize("p", [-1.0, 0.0, 1.0])
def test_pollux_decides_the_count_vector_of_best_fitness(p):
    c = parse_spec("2x4")
    jobs = [_job(0), _job(1, "yolov3", 4, 8), _job(2, "resnet50", 2, 64, adaptive=False)]
    states = _states(jobs)
    nodes = Nodes(c, np.ones(2, dtype=bool), 500.0, 60.0, SpeedModel(c), 30.0)
    pol = Pollux(p=p)
    got = pol.optimize(states, nodes, {})
    counts = [len(got.get(js.job_id, ())) for js in states]
    options = [allowed_counts(1, 8, 4, 8) for _ in states]
    best = max(_fitness(pol, states, nodes, v) for v in itertools.product(*options) if sum(v) <= 8)
    assert _fitness(pol, states, nodes, counts) == pytest.approx(best)


def test_power_value_ranks_like_the_power_mean():
    x = np.array([0.2, 1.0, 3.0])
    for p in (-2.0, -0.5, 0.0, 0.5, 2.0):
        assert (np.diff(power_value(x, p)) > 0).all()


def test_restart_penalty_keeps_a_young_job_where_it_is():
    c = parse_spec("1x4")
    sp = SpeedModel(c)
    js = _states([_job(0, hi=4)])[0]
    js.placement, js.first_start_s = (0,), 0.0
    nodes = Nodes(c, np.ones(1, dtype=bool), 10.0, 60.0, sp, 30.0)
    assert len(Pollux(restart_penalty=False).optimize([js], nodes, {"j0": (0,)})["j0"]) > 1
    assert Pollux().optimize([js], nodes, {"j0": (0,)})["j0"] == (0,)  # age 10 s: factor 0.25
    older = Nodes(c, np.ones(1, dtype=bool), 3600.0, 60.0, sp, 30.0)
    assert len(Pollux().optimize([js], older, {"j0": (0,)})["j0"]) > 1


def test_goodput_table_equals_goodput_of():
    sp = SpeedModel(parse_spec("4x4,gpu=t4"))
    for j in (_job(0), _job(1, "resnet50", 4, 100, adaptive=False), _job(2, "ncf", 1, 4096)):
        counts = [0, 1, 2, 4, 8, 12]
        table = goodput_table(sp, j, 0.3, counts, 4)
        ref = [goodput_of(sp, j, 0.3, consolidated_shape(w, 4))[1] for w in counts]
        assert table == pytest.approx(ref, rel=1e-12)


def _mixed(tmp_path):
    f = tmp_path / "mixed.yaml"
    f.write_text("servers:\n  - {count: 2, gpus: 4}\n  - {count: 2, gpus: 4, gpu: t4}\n")
    return load_cluster(str(f))


@pytest.mark.parametrize("spec", ["mixed", "2x4"])  # MILP (two types) and knapsack (one type)
def test_sia_solves_its_program_exactly_and_rings_stay_on_one_type(tmp_path, spec):
    c = _mixed(tmp_path) if spec == "mixed" else parse_spec(spec)
    sp = SpeedModel(c)
    jobs = [_job(i, m, 2, b, hi=8) for i, (m, b) in enumerate([("resnet50", 64), ("yolov3", 8), ("bert_base", 16)])]
    states = _states(jobs)
    nodes = Nodes(c, np.ones(c.num_servers, dtype=bool), 500.0, 60.0, sp, 30.0)
    pol = Sia()
    types, kinds = pol._types(nodes)
    configs = [pol._configs(js, types, kinds, nodes) for js in states]
    chosen = pol._solve(states, configs, types)

    def cost(pick):
        total = 0.0
        for cfg, k in zip(configs, pick):
            total += pol.params.lambda_n if k is None else cfg[k][2]
        return total

    def feasible(pick):
        used = {t: 0 for t in types}
        for cfg, k in zip(configs, pick):
            if k is not None:
                used[cfg[k][0]] += cfg[k][1]
        return all(used[t] <= types[t][2] for t in types)

    picks = [p for p in itertools.product(*[[None] + list(range(len(cfg))) for cfg in configs]) if feasible(p)]
    best = min(cost(p) for p in picks)
    mine = [None if ch is None else next(i for i, (t, w, _) in enumerate(cfg) if (t, w) == ch)
            for cfg, ch in zip(configs, chosen)]
    assert cost(mine) == pytest.approx(best, rel=1e-6)
    out = pol.optimize(states, nodes, {})
    for p in out.values():
        assert len({c.servers[s].gpu for s in p}) == 1


def test_sia_prefers_the_faster_type_for_a_lone_job(tmp_path):
    c = _mixed(tmp_path)
    js = _states([_job(0, "resnet50", 4, 64, lo=4, hi=4, adaptive=False)])[0]
    nodes = Nodes(c, np.ones(4, dtype=bool), 500.0, 60.0, SpeedModel(c), 30.0)
    p = Sia().optimize([js], nodes, {})["j0"]
    assert {c.servers[s].gpu for s in p} == {"h200"}


@pytest.mark.parametrize("p", [1000.0, -1000.0])
def test_sia_with_an_extreme_power_clips_instead_of_overflowing(p):
    """A goodput ratio to a large power passes the float range: the term is the clip (found by
    a sweep of every policy option at its bounds: ``sia:p=1000`` raised OverflowError). Mutant
    caught: the plain power."""
    sia = Sia(p=p)
    assert sia._term(8.0) == sia._term(1e6) == (CLIP if p > 0 else 0.0)
    assert sia._term(1e-12) == (0.0 if p > 0 else CLIP)


def test_bad_options_are_input_errors():
    for spec in ("sia:p=0", "sia:lambda_n=-1", "pollux:p=nan", "sia:time_limit_s=0"):
        with pytest.raises(InputError):
            make_policy(spec)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(["pollux", "sia"]), seed=st.integers(0, 10_000),
       spec=st.sampled_from(["2x4,gpu=t4", "3x4,racks=3", "mixed"]), mtbf=st.sampled_from([None, 3.0]))
def test_runs_complete_every_job_within_capacity(tmp_path_factory, policy, seed, spec, mtbf):
    if spec == "mixed":
        c = _mixed(tmp_path_factory.mktemp("c"))
    else:
        c = parse_spec(spec)
    rng = np.random.default_rng(seed)
    models = ["resnet18_cifar10", "yolov3", "vgg16", "ncf", "bert_base"]
    jobs = []
    for i in range(8):
        g = int(rng.integers(1, 5))
        lo = int(rng.choice([1, g]))
        jobs.append(_job(i, models[int(rng.integers(len(models)))], g, 16, float(rng.uniform(1e4, 1e6)),
                         lo, int(rng.integers(g, 9)), float(rng.uniform(0, 2000)), bool(rng.integers(2))))
    r = Simulator(jobs, c, make_policy(policy), SimConfig(slot_s=60.0, mtbf_h=mtbf, seed=seed)).run()
    assert (r.jobs.status == "completed").all()
    again = Simulator(jobs, c, make_policy(policy), SimConfig(slot_s=60.0, mtbf_h=mtbf, seed=seed)).run()
    assert r.jobs.equals(again.jobs)


def test_solver_chatter_on_fd_1_is_dropped_and_stdout_restored(capfd):
    import os

    from ringsched.policies.sia import _quiet_stdout

    with _quiet_stdout():
        os.write(1, b"HighsMipSolverData::chatter\n")
    os.write(1, b"after\n")
    assert capfd.readouterr().out == "after\n"


WORKLOAD6 = SHARED / "traces" / "philly-pollux" / "workloads" / "workload-6.csv"


@needs_shared(WORKLOAD6)
def test_workload_6_reproduces_the_published_ordering_within_30_percent():
    """docs/reproduction.md: pollux < tiresias (artifact settings) < optimus on 16x4 T4, each
    within 30% of the artifact's published average JCT."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reproduction", REPO / "benchmarks" / "reproduction.py")
    rep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rep)
    jct = {p: rep.run(WORKLOAD6, p, "16x4,gpu=t4", 60.0, 30.0)["mean_jct_s"]
           for p in ("pollux", "tiresias-artifact", "optimus")}
    assert jct["pollux"] < jct["tiresias-artifact"] < jct["optimus"]
    for p, v in jct.items():
        assert abs(v / rep.PUBLISHED[6][p.removesuffix("-artifact")] - 1) < 0.3, (p, v)


def test_pollux_starts_a_job_that_arrives_at_the_decision_instant():
    """A job whose age is 0 when pollux decides (deciding at arrivals) is started on an empty
    cluster: the restart factor discounts re-allocations of running jobs, not first starts.
    Mutant caught: the factor applied to jobs holding no GPUs (its value is 0 at age 0, so the
    job got nothing and, with nothing else to happen, the run ended with it waiting)."""
    from ringsched.cluster.model import parse_spec
    from ringsched.job import Job
    from ringsched.policies.registry import make_policy
    from ringsched.simulator import SimConfig
    from ringsched.simulator.engine import Simulator
    from ringsched.utility.functions import SigmoidUtility

    c = parse_spec("1x4")
    job = Job("a", 100.0, "resnet50", 32, 1e5, 1, 4, SigmoidUtility(1.0, 1e-3, 3600.0))
    r = Simulator([job], c, make_policy("pollux"), SimConfig(decide_at_events=True)).run()
    assert list(r.jobs.status) == ["completed"]
