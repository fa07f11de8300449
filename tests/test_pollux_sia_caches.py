"""The speedups of pollux and sia change no decision: the compiled knapsack is the twin of the
numpy program it replaced, and the per-job caches are dropped or re-keyed whenever what they
were computed from changes (a refit of the speed model, progress that moves statistical
efficiency, a job's placement)."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ringsched.cluster import parse_spec
from ringsched.job import Job
from ringsched.perfmodel.speed import SpeedModel
from ringsched.policies import knapsack
from ringsched.policies.base import JobState, Nodes
from ringsched.policies.pollux import Pollux, counts_of
from ringsched.policies.sia import Sia
from ringsched.utility.defaults import jct_utility


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 8), st.integers(0, 12), st.integers(0, 10_000), st.booleans())
def test_compiled_knapsack_is_the_twin_of_the_numpy_program_ties_included(n_jobs, budget, seed, ties):
    rng = np.random.default_rng(seed)
    counts = [[0] + sorted(rng.choice(np.arange(1, 9), size=rng.integers(0, 4), replace=False).tolist())
              for _ in range(n_jobs)]
    # few distinct values (ties everywhere) or continuous ones; some counts beyond the budget
    values = [rng.integers(0, 3, size=len(c)).astype(float) if ties else rng.normal(size=len(c)) for c in counts]
    assert knapsack.solve(*knapsack.flat(values, counts), budget) == knapsack.solve_numpy(values, counts, budget)


def _job(i, model="resnet18_cifar10", arrival=0.0):
    return Job(f"j{i}", arrival, model, 128, 5e6, 1, 8, jct_utility(1000.0, 2), requested_gpus=2,
               adaptive_batch=True)


def _active(job, done=0.0):
    js = JobState(job, 0, 100.0)
    js.status = "active"
    js.done_samples = done
    return js


def _nodes(speed, now_s=500.0):
    return Nodes(speed.cluster, np.ones(speed.cluster.num_servers, dtype=bool), now_s, 60.0, speed, 30.0)


def _refit(speed, model):
    """Make the model's gradient transfers 50 times slower, as an online refit might (bumps
    ``speed.version``): its speedup on more GPUs falls."""
    p = speed.params(model)
    speed.set_params(model, dataclasses.replace(p, intra_transfer_s=50 * p.intra_transfer_s,
                                                inter_transfer_s=50 * p.inter_transfer_s))


def _pollux_values(pol, js, nodes):
    """The terms a round plans with (the round first: it is where stale tables are dropped)."""
    pol.optimize([js], nodes, {})
    cnt = counts_of(1, 8, nodes.gpus_per_server, int(nodes.capacity.sum()))
    return pol._values([js], [cnt], nodes)[0]


def test_pollux_tables_follow_a_refit_of_the_speed_model():
    speed = SpeedModel(parse_spec("2x4"))
    js, pol = _active(_job(0)), Pollux()
    before = _pollux_values(pol, js, _nodes(speed))
    _refit(speed, "resnet18_cifar10")
    after = _pollux_values(pol, js, _nodes(speed))
    assert not np.array_equal(before, after)  # the refit moves the scaled speedups
    assert np.array_equal(after, _pollux_values(Pollux(), js, _nodes(speed)))


def test_pollux_tables_follow_progress_that_moves_statistical_efficiency():
    speed, pol, job = SpeedModel(parse_spec("2x4")), Pollux(), _job(0)
    early = _pollux_values(pol, _active(job, 0.0), _nodes(speed))
    late = _pollux_values(pol, _active(job, 0.8 * job.work_samples), _nodes(speed))
    assert not np.array_equal(early, late)
    assert np.array_equal(late, _pollux_values(Pollux(), _active(job, 0.8 * job.work_samples), _nodes(speed)))


def _sia_configs(pol, js, nodes):
    pol.optimize([js], nodes, {})
    return pol._configs(js, *pol._types(nodes), nodes)


def test_sia_configurations_follow_a_refit_and_progress():
    speed, job = SpeedModel(parse_spec("2x4")), _job(0, "bert_base")
    pol = Sia()
    before = _sia_configs(pol, _active(job), _nodes(speed))
    _refit(speed, "bert_base")
    after = _sia_configs(pol, _active(job), _nodes(speed))
    assert after != before and after == _sia_configs(Sia(), _active(job), _nodes(speed))
    late = _sia_configs(pol, _active(job, 0.8 * job.work_samples), _nodes(speed))
    assert late != after and late == _sia_configs(Sia(), _active(job, 0.8 * job.work_samples), _nodes(speed))


def test_sia_caches_terms_of_waiting_jobs_only():
    speed, job, pol = SpeedModel(parse_spec("2x4")), _job(0), Sia()
    nodes = _nodes(speed, now_s=3600.0)
    waiting = _sia_configs(pol, _active(job), nodes)
    running = _active(job)
    running.placement, running.first_start_s, running.restarts = (0, 0), 100.0, 3
    placed = _sia_configs(pol, running, nodes)
    assert placed == _sia_configs(Sia(), running, nodes)
    # the current configuration keeps its term; every other one carries the restart factor
    for (t, w, term), (_, _, fresh) in zip(placed, waiting):
        assert (term == fresh) == ((t, w) == ("h200", 2)), (t, w)


def test_sia_types_follow_the_servers_up():
    speed, pol = SpeedModel(parse_spec("3x4")), Sia()
    assert pol._types(_nodes(speed))[1] == (("h200", 4, 3, 12),)
    down = Nodes(speed.cluster, np.array([True, False, True]), 500.0, 60.0, speed, 30.0)
    types, kinds = pol._types(down)
    assert kinds == (("h200", 4, 3, 8),) and types["h200"][2] == 8
