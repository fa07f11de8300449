"""A job's utility must not tell a policy the true work that an estimate hides: its knee (or
deadline) is a multiple of the job's run alone, so the world shows it stretched by the
estimate's factor (the floor every job gets kept) and judges the run by the true utility."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import Policy
from ringsched.policies.common import allocate_in_order
from ringsched.simulator import SimConfig, Simulator
from ringsched.utility.defaults import MIN_TARGET_S, jct_utility, knee_utility
from ringsched.utility.functions import DeadlineUtility, LinearUtility, SigmoidUtility


def test_a_stretched_utility_is_the_utility_of_the_stretched_run():
    """Mutants caught: the floor stretched with the knee (100 s x 3: knee 5,400 s, not 1,800 s);
    the steepness left as it was (the fall no longer ends at twice the knee)."""
    for run_s, m in ((2000.0, 0.3), (2000.0, 4.0), (100.0, 3.0), (100.0, 10.0), (700.0, 0.5)):
        got, want = jct_utility(run_s, 2).stretched(m), jct_utility(m * run_s, 2)
        assert got.knee_s == pytest.approx(want.knee_s)
        assert got.steepness_per_s == pytest.approx(want.steepness_per_s)
        assert got.value == pytest.approx(want.value)  # (the default value is the run's GPU-hours)
    assert jct_utility(100.0, 1).stretched(3.0).knee_s == MIN_TARGET_S
    due = DeadlineUtility(5.0, 400.0, 0.01, floor_s=1800.0, from_run=True)
    assert (due.stretched(3.0).due_s, due.stretched(6.0).due_s) == (1800.0, 2400.0)
    d = DeadlineUtility(5.0, 400.0, 0.01, from_run=True)
    for t in (100.0, 400.0, 700.0, 3000.0):
        assert float(d.stretched(2.0)(2 * t)) == pytest.approx(float(d(t)))


def test_a_value_set_apart_from_the_run_is_not_stretched():
    """A value that is not the run's GPU-hours (a knee utility given its value, a value an
    objective's weighing scaled, a deadline's without the flag) is kept by an estimate; the
    run's is scaled. Mutant caught: ``scaled`` keeping ``value_from_run`` (under ``weigh=count``
    every job's shown worth would follow its estimate)."""
    own = jct_utility(2000.0, 4)
    assert own.value_from_run and own.stretched(3.0).value == pytest.approx(3.0 * own.value)
    for u in (knee_utility(5.0, 6000.0, MIN_TARGET_S), own.scaled(0.5),
              DeadlineUtility(5.0, 400.0, 0.01, from_run=True)):
        assert u.stretched(3.0).value == u.value
    due = DeadlineUtility(5.0, 400.0, 0.01, from_run=True, value_from_run=True)
    assert due.stretched(3.0).value == 15.0 and due.scaled(2.0).stretched(3.0).value == 10.0


def test_a_utility_given_as_numbers_is_shown_as_it_is():
    """An owner's own utility (a jobs file's, the Python API's) says nothing of the run: no
    estimate stretches it. Mutant caught: ``stretched`` ignoring ``from_run``."""
    for u in (SigmoidUtility(3.0, 5000.0, 0.001), DeadlineUtility(2.0, 900.0), LinearUtility(4.0, 0.001)):
        assert u.stretched(3.0) == u


class KneeSnoop(Policy):
    """A policy that reads each job's run alone off its utility's knee (a third of it, the
    default slack) and off its value (the run's GPU-hours over its GPU count), and turns each
    into work at the job's speed."""

    name = "knee-snoop-test"
    rigid = False

    def __init__(self):
        self.found: dict[str, set[float]] = {}
        self.by_value: dict[str, set[float]] = {}

    def optimize(self, jobs, nodes, previous_allocations):
        for js in jobs:
            rate = nodes.throughput_sps(js, js.job.max_workers)
            u = js.job.utility
            self.found.setdefault(js.job_id, set()).add(u.target_jct_s / 3.0 * rate)
            self.by_value.setdefault(js.job_id, set()).add(u.value * 3600.0 / js.job.max_workers * rate)
        return allocate_in_order([(js, js.job.max_workers) for js in jobs], nodes, previous_allocations)


def _jobs(c, n=12):
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        gpus = int(rng.choice([1, 2, 4, 8]))
        seconds = float(rng.uniform(700, 5000)) if i % 3 else float(rng.uniform(60, 500))  # (every third floored)
        rate = SpeedModel(c).throughput_sps("resnet50", 64, consolidated_shape(gpus, int(c.gpus.max())))
        out.append(Job(f"j{i}", float(rng.uniform(0, 4000)), "resnet50", 64, seconds * rate, gpus, gpus,
                       jct_utility(seconds, gpus)))
    return out


def test_a_policy_cannot_read_the_true_work_off_a_utility_and_the_run_is_judged_by_the_truth():
    """Mutants caught: the estimate applied to the work alone (the knee then gives the true work
    of every job not floored); the knee stretched but the value, the run's GPU-hours, shown as it
    is (``value_from_run`` ignored: the value over the GPU count is the true run alone); the run
    judged by the utility the policy was shown."""
    c = parse_spec("2x8")
    jobs = _jobs(c)
    true = {j.job_id: j for j in jobs}
    exact = KneeSnoop()
    Simulator(jobs, c, exact, SimConfig(seed=5)).run()  # (the control: the snoop works, both ways)
    for found in (exact.found, exact.by_value):
        assert sum(any(v == pytest.approx(true[jid].work_samples, rel=1e-6) for v in vals)
                   for jid, vals in found.items()) == len(jobs)
    spy = KneeSnoop()
    r = Simulator(jobs, c, spy, SimConfig(estimates="lognormal:1", seed=5)).run()
    for found in (spy.found, spy.by_value):
        for jid, vals in found.items():
            assert not any(v == pytest.approx(true[jid].work_samples, rel=1e-6) for v in vals), jid
    done = r.jobs[r.jobs.status == "completed"]
    assert len(done) == len(jobs)
    for row in done.itertuples():
        u = true[row.job_id].utility
        assert row.utility == pytest.approx(float(u(row.jct_s)), rel=1e-12)
        assert row.max_utility == pytest.approx(float(u.max_value), rel=1e-12)


@pytest.mark.parametrize("name", ["jct", "deadline", "fairness"])
def test_an_objective_shows_a_run_s_value_scaled_with_the_run(name):
    """An objective that shows each job its own value (``weigh=value``) shows a value that an
    estimate scales with the run, as the job's own; one that weighs every job alike
    (``weigh=count``, the default) shows the workload's mean, which no estimate moves.
    Mutants caught: ``shows_run_value`` of ``objectives/builtin.py`` always False (under
    ``weigh=value`` the shown value is the true run's GPU-hours); ``jct`` under ``count``
    leaving a job whose value is the mean as it is (where every job is worth the same, each
    shown value followed its estimate)."""
    from ringsched.experiment.objectives import parse_objective

    c = parse_spec("2x8")
    jobs = _jobs(c)
    run_s = 2.0 * 3600.0 / 4  # (a 4-GPU run worth 2 GPU-hours: the mean of such values is exact)
    alike = [dataclasses.replace(j, utility=jct_utility(run_s, 4)) for j in jobs]  # (every value the mean)
    for weigh, follows in (("value", True), ("count", False)):
        for workload in (jobs, alike):
            shown = parse_objective(f"{name},weigh={weigh}").prepare_jobs(list(workload), c, SpeedModel(c))
            for j in shown:
                want = 2.0 * j.utility.value if follows else j.utility.value
                assert j.with_work_scaled(2.0).utility.value == pytest.approx(want), (weigh, j.job_id)
