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


def test_under_padded_estimates_gadget_decides_with_the_true_work_once_the_factor_shows():
    """Every request padded 2x: after ``MIN_FINISHED`` jobs finished, the jobs GADGET decides
    with carry their true work (the control: before, they carry the padded estimate), while the
    world's own states keep the estimate it showed. Mutants caught: ``view`` returning the jobs
    as shown; ``optimize`` not deciding with the view."""
    c = parse_spec("1x8")
    u = SigmoidUtility(1, 3 * 600.0, 0.002, floor_s=300.0, from_run=True)
    jobs = [dataclasses.replace(job(i, 60.0 * i, 1, 200 + 10 * i, c), utility=u) for i in range(24)]
    true = {j.job_id: j.work_samples for j in jobs}
    pol = WorkWatched()
    r = Simulator(jobs, c, pol, SimConfig(estimates="user:2")).run()
    assert (r.jobs.status == "completed").all() and pol.errors.bias == pytest.approx(0.5)
    before = [(jid, w) for n, jid, w in pol.works if n < MIN_FINISHED]
    after = [(jid, w) for n, jid, w in pol.works if n >= MIN_FINISHED]
    assert before and after
    assert all(w == pytest.approx(2 * true[jid]) for jid, w in before)
    assert all(w == pytest.approx(true[jid]) for jid, w in after)
    assert (r.jobs.estimated_work_samples == 2 * r.jobs.work_samples).all()  # the world's estimates as shown


def test_exact_estimates_are_never_scaled():
    c = parse_spec("1x8")
    jobs = [job(i, 60.0 * i, 1, 200 + 10 * i, c) for i in range(24)]
    pol = Gadget()
    Simulator(jobs, c, pol, SimConfig()).run()
    assert pol.errors.bias == 1.0 and len(pol.errors.ratios) == 24


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
