"""GADGET's estimates scaled by the estimator's consistent bias (policies/gadget/calibration.py,
``EstimateError.bias``): taken only when the finished jobs' ratios agree, so noisy estimates
are left as they are; the jobs GADGET decides with then carry their true work."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.policies import JobState
from ringsched.policies.gadget.estimate_error import MIN_FINISHED, EstimateError
from ringsched.policies.gadget.policy import Gadget
from ringsched.simulator import SimConfig, Simulator
from ringsched.utility.functions import SigmoidUtility
from test_gadget import job
from test_gadget_estimate_error import finished


def errors_after(ratios, spread=1.25) -> EstimateError:
    c = parse_spec("1x8")
    err = EstimateError(0.1, spread)
    states = [JobState(job(i, 0.0, 1, 100, c), i, 100.0) for i in range(len(ratios))]
    err.see(states)
    for js, r in zip(states, ratios):
        finished(err, js, r * js.job.work_samples)
    return err


def test_a_consistent_factor_is_taken_as_the_bias_and_noise_is_not():
    """Mutants caught: the spread test dropped (a lognormal sample's median leans one way and is
    taken); the bias taken before ``MIN_FINISHED`` jobs finished; the quantiles not taken to the
    scaled estimates (triage and backfilling would scale a second time)."""
    assert errors_after([0.5] * (MIN_FINISHED - 1)).bias == 1.0  # too few yet
    padded = errors_after([0.5] * MIN_FINISHED)
    assert padded.bias == 0.5 and padded.bias_version == 1
    assert padded.optimistic() == pytest.approx(1.0) and padded.pessimistic() == pytest.approx(1.0)
    assert errors_after([2.0] * 30).bias == 2.0  # users who under-ask alike
    assert errors_after([0.5] * 30, spread=0).bias == 1.0  # off
    assert errors_after([1.0] * 30).bias == 1.0 and errors_after([1.005] * 30).bias == 1.0  # no bias
    noisy = np.exp(np.random.default_rng(0).standard_normal(200))
    err = errors_after(list(noisy))
    assert err.bias == 1.0 and abs(np.median(noisy) - 1) > 0.01  # the control: its median is off 1


class WorkWatched(Gadget):
    """GADGET that records the work of each job its decisions time (``alone_s``: offers, swaps,
    reservations), with the count of jobs finished by then."""

    name = "gadget-work-watched-test"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.works: list[tuple[int, str, float]] = []

    def alone_s(self, js, nodes):
        self.works.append((len(self.errors.ratios), js.job_id, js.job.work_samples))
        return super().alone_s(js, nodes)


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_under_padded_estimates_gadget_decides_with_the_true_work_once_the_factor_shows(factor):
    """Every request padded 2x: after ``MIN_FINISHED`` jobs finished, the jobs GADGET decides
    with carry their true work (the control: before, they carry the padded estimate), while the
    world's own states keep the estimate it showed. Mutants caught: ``view`` returning the jobs
    as shown; ``optimize`` not deciding with the view."""
    c = parse_spec("1x8")
    u = SigmoidUtility(1, 3 * 600.0, 0.002, floor_s=300.0, from_run=True)
    jobs = [dataclasses.replace(job(i, 60.0 * i, 1, 200 + 10 * i, c), utility=u) for i in range(24)]
    true = {j.job_id: j.work_samples for j in jobs}
    pol = WorkWatched()
    r = Simulator(jobs, c, pol, SimConfig(estimates=f"user:{factor:g}")).run()
    assert (r.jobs.status == "completed").all() and pol.errors.bias == pytest.approx(1 / factor)
    before = [(jid, w) for n, jid, w in pol.works if n < MIN_FINISHED]
    after = [(jid, w) for n, jid, w in pol.works if n >= MIN_FINISHED]
    assert before and after
    if factor > 1:  # (cut estimates are doubled by the world as jobs outlive them)
        assert all(w == pytest.approx(factor * true[jid]) for jid, w in before)
    assert all(w == pytest.approx(true[jid]) for jid, w in after)
    assert (r.jobs.estimated_work_samples == factor * r.jobs.work_samples).all()  # the world's estimates as shown


def test_exact_estimates_are_never_scaled():
    """Mutant caught: a bias taken from ratios of exactly 1 (the jobs timed with other work)."""
    c = parse_spec("1x8")
    jobs = [job(i, 60.0 * i, 1, 200 + 10 * i, c) for i in range(24)]
    work = {j.job_id: j.work_samples for j in jobs}
    pol = WorkWatched()
    Simulator(jobs, c, pol, SimConfig()).run()
    assert pol.errors.bias == 1.0 and len(pol.errors.ratios) == 24
    assert pol.works and all(w == work[jid] for _, jid, w in pol.works)


def test_a_job_that_outlives_its_scaled_estimate_is_reestimated_in_the_view():
    """Under a bias of 1/4, a job shown 4 W (its first estimate) is viewed at W, its isolated
    time scaled alike; once it has done more than W its view doubles (2 W) and the policy is
    told, as of the world's re-estimate; past 4 W it is the world's job. Mutants caught: no
    doubling (the view's remaining work 0); the re-estimate not reported; ``isolated_s`` not
    scaled."""
    from ringsched.policies.gadget.calibration import Calibrated
    c = parse_spec("1x8")
    err = errors_after([0.25] * MIN_FINISHED)
    js = JobState(job(99, 0.0, 1, 400, c), 99, 400.0)
    err.see([js])
    cal = Calibrated(err)
    shown = js.job.work_samples
    (v,) = cal.view([js], 0.0)
    assert v.job.work_samples == pytest.approx(shown / 4) and v.isolated_s == pytest.approx(100.0)
    assert cal.reestimated == [] and js.job.work_samples == shown  # the world's state untouched
    js.done_samples = 0.3 * shown
    (v,) = cal.view([js], 0.0)
    assert v.job.work_samples == pytest.approx(shown / 2) and cal.reestimated == ["j99"]
    (v,) = cal.view([js], 0.0)
    assert cal.reestimated == []  # told once
    js.done_samples = 0.6 * shown
    (v,) = cal.view([js], 0.0)
    assert v is js and cal.reestimated == ["j99"]


def test_strict_admission_plans_an_arrival_at_its_scaled_estimate():
    """Mutant caught: ``admit`` planning the estimate as shown (a plan twice as long)."""
    from test_gadget import nodes
    c = parse_spec("1x8")
    plans = []
    for bias in (1.0, 0.5):
        g = Gadget(admission="strict")
        g.errors.bias = bias
        j = job(0, 0.0, 8, 6000, c)  # 6,000 s at 8 GPUs: 20 slots shown, 10 at the bias
        assert g.admit(j, nodes(c)) is None
        plans.append(g.plans["j0"])
    shown, scaled = (p.last_slot - p.first_slot + 1 for p in plans)
    assert shown == pytest.approx(2 * scaled, abs=1)


def test_gadget_treats_a_view_reestimate_as_a_reestimate():
    """Mutant caught: ``optimize`` not telling itself of the view's re-estimate (its plan and
    cached horizon kept, late starts still allowed)."""
    from test_gadget import nodes
    c = parse_spec("1x8")
    g = Gadget()
    js = JobState(job(99, 0.0, 1, 400, c), 99, 400.0)
    n = nodes(c)
    g.optimize([js], n, {})
    g.errors.bias = 0.25
    g.optimize([js], n, {})
    assert "j99" not in g.outlived
    js.done_samples = 0.3 * js.job.work_samples
    g.optimize([js], n, {})
    assert "j99" in g.outlived


def test_the_on_time_limit_is_asked_again_for_a_new_estimate():
    """``on_time_by`` remembers its last answer for the same job, time and progress; a view
    with another estimate (a bias, a re-estimate) is another question. Mutant caught: the key
    without the estimate (the padded job's limit given for the true one)."""
    from test_gadget import nodes
    c = parse_spec("1x8")
    n = nodes(c, now=3000.0)
    short = JobState(job(0, 0.0, 8, 600, c), 0, 600.0)
    long = JobState(short.job.with_work_scaled(8.0), 0, 600.0)
    fresh = Gadget().on_time_by(long, n)
    g = Gadget()
    assert g.on_time_by(short, n) != fresh  # (the control: the two questions differ)
    assert g.on_time_by(long, n) == fresh
