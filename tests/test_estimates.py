"""Duration knowledge as a world setting: policies see estimates, never the true work; a job
that outlives its estimate is re-estimated (doubling) and its policy is told."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.utility.functions import SigmoidUtility
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import Policy, make_policy
from ringsched.policies.common import allocate_in_order
from ringsched.simulator import SimConfig, Simulator
from ringsched.simulator.estimates import Estimates, parse_estimates

U = SigmoidUtility(1.0, 3600.0, 0.001)


def job(i, arrival, gpus, seconds, cluster, *, elastic=False):
    rate = SpeedModel(cluster).throughput_sps("resnet50", 64, consolidated_shape(gpus, int(cluster.gpus.max())))
    return Job(f"j{i}", float(arrival), "resnet50", 64, seconds * rate, 1 if elastic else gpus, gpus, U)


def _numbers(obj, seen=None):
    """Every float reachable from ``obj`` through attributes, slots, dicts and sequences."""
    seen = seen if seen is not None else set()
    if id(obj) in seen or obj is None:
        return
    seen.add(id(obj))
    if isinstance(obj, (float, int, np.floating)) and not isinstance(obj, bool):
        yield float(obj)
        return
    if isinstance(obj, (str, bytes, np.ndarray)):
        return
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v, seen)
        return
    if isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _numbers(v, seen)
        return
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _numbers(getattr(obj, f.name), seen)
    for name in getattr(type(obj), "__slots__", ()):
        yield from _numbers(getattr(obj, name, None), seen)


class Snoop(Policy):
    """A policy that tries to find each job's true work in what it is shown: the job, its
    state (every slot, its progress, its isolated time x its best speed) and the scratch dict."""

    name = "snoop-test"
    rigid = False

    def __init__(self):
        self.seen: dict[str, set[float]] = {}

    def optimize(self, jobs, nodes, previous_allocations):
        for js in jobs:
            vals = self.seen.setdefault(js.job_id, set())
            vals.update(_numbers(js))
            vals.add(js.remaining_at(nodes.now_s) + js.done_at(nodes.now_s))
            best = max(nodes.throughput_sps(js, w) for w in range(js.job.min_workers, js.job.max_workers + 1))
            vals.add(js.isolated_s * best)
        return allocate_in_order([(js, js.job.max_workers) for js in jobs], nodes, previous_allocations)


def test_a_policy_cannot_read_the_true_work():
    c = parse_spec("2x8")
    rng = np.random.default_rng(3)
    jobs = [job(i, float(rng.uniform(0, 4000)), int(rng.choice([1, 2, 4, 8])), float(rng.uniform(300, 5000)), c,
                elastic=bool(i % 2)) for i in range(12)]
    spy = Snoop()
    r = Simulator(jobs, c, spy, SimConfig(estimates="lognormal:1", seed=5)).run()
    assert (r.jobs.status == "completed").all()
    true = dict(zip(r.jobs.job_id, r.jobs.work_samples))
    for jid, vals in spy.seen.items():
        assert not any(v == pytest.approx(true[jid], rel=1e-6) for v in vals), jid
    # and under exact estimates the same snoop does see it (the test can fail)
    exact = Snoop()
    Simulator(jobs, c, exact, SimConfig(seed=5)).run()
    assert all(any(v == pytest.approx(true[jid], rel=1e-6) for v in vals) for jid, vals in exact.seen.items())


def test_a_job_that_outlives_its_estimate_is_reestimated_by_doubling_and_the_policy_is_told():
    c = parse_spec("1x8")
    told: list[tuple[str, float]] = []

    class Fifo(type(make_policy("fifo"))):
        name = "told-fifo-test"

        def optimize(self, jobs, nodes, previous_allocations):
            self.states = {js.job_id: js for js in jobs}
            return super().optimize(jobs, nodes, previous_allocations)

        def on_reestimate(self, job_id):
            told.append((job_id, self.states[job_id].job.work_samples))

    j = job(0, 0, 8, 1000.0, c)
    r = Simulator([j], c, Fifo(), SimConfig(estimates="user:0.3")).run()
    row = r.jobs.iloc[0]
    # 0.3 -> 0.6 -> 1.2 of the true work: two re-estimates, then it finishes on its true work
    assert row.reestimates == 2 and row.estimated_work_samples == pytest.approx(0.3 * j.work_samples)
    assert [jid for jid, _ in told] == ["j0", "j0"]
    assert [w / j.work_samples for _, w in told] == pytest.approx([0.6, 1.2])
    assert row.status == "completed" and row.finish_s == pytest.approx(1000.0)
    assert row.done_samples == pytest.approx(j.work_samples)


def test_srtf_orders_by_the_estimate_not_the_truth():
    c = parse_spec("1x8")
    jobs = [job(0, 0, 8, 1000.0, c), job(1, 0, 8, 2000.0, c)]
    exact = Simulator(jobs, c, make_policy("srtf"), SimConfig()).run().jobs.set_index("job_id")
    assert exact.loc["j0", "first_start_s"] == 0.0
    # find a seed whose draws make j0 look longer than j1
    seed = next(s for s in range(100) if (lambda m: 1000 * m[0] > 2000 * m[1])(Estimates("lognormal", 1.0).multipliers(2, s)))
    noisy = Simulator(jobs, c, make_policy("srtf"), SimConfig(estimates="lognormal:1", seed=seed)).run().jobs
    noisy = noisy.set_index("job_id")
    assert noisy.loc["j1", "first_start_s"] == 0.0 and noisy.loc["j0", "first_start_s"] > 0.0


def test_estimates_are_deterministic_by_seed():
    c = parse_spec("2x8")
    jobs = [job(i, 100.0 * i, 2, 500.0 + 10 * i, c) for i in range(20)]

    def est(seed):
        return Simulator(jobs, c, make_policy("srtf"), SimConfig(estimates="lognormal:1", seed=seed)).run().jobs

    a, b, other = est(1), est(1), est(2)
    assert a.equals(b)
    assert not np.allclose(a.estimated_work_samples, other.estimated_work_samples)
    assert np.allclose(a.work_samples, other.work_samples)


@pytest.mark.parametrize("text", ["bogus", "lognormal", "lognormal:x", "lognormal:-1", "user:0", "exact:3", "user:inf"])
def test_bad_estimate_specs_are_one_line_errors(text):
    with pytest.raises(InputError, match="estimates"):
        parse_estimates(text)


@pytest.mark.parametrize("text,form", [("user:/data/est.csv", "user:FACTOR"), ("lognormal:x", "lognormal:SIGMA")])
def test_a_non_number_names_the_form_it_was_expected_in(text, form):
    """``user:`` takes a factor, not a file: the error says which form it expected."""
    with pytest.raises(InputError, match=form):
        parse_estimates(text)


def test_simulate_takes_estimates_and_reports_them(cli):
    code, out, err = cli("simulate", "--trace", "synthetic:30", "--cluster", "2x8", "--policy", "srtf",
                         "--estimates", "lognormal:1", "--json")
    assert code == 0, err
    assert '"estimates": "lognormal:1"' in out
    code, _, err = cli("simulate", "--trace", "synthetic:3", "--cluster", "2x8", "--estimates", "normal:1")
    assert code == 2 and "estimates" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["compare", "sweep"])
def test_compare_and_sweep_check_their_estimates(cli, tmp_path, command):
    code, _, err = cli(command, "--trace", "synthetic:5", "--cluster", "2x8", "--policies", "fifo",
                       "--estimates", "lognormal:zz", "--out", tmp_path / "o")
    assert code == 2 and "estimates" in err and len(err.strip().splitlines()) == 1
