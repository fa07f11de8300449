"""What GADGET learns of its duration estimates as jobs finish (policies/gadget/estimate_error.py)
and how triage in lending uses it: a job is given up only when it would be too late even with
its remaining work scaled by a low quantile of true / first estimate over the finished jobs."""

from __future__ import annotations

import dataclasses

import pytest

from ringsched.cluster.model import parse_spec
from ringsched.policies import JobState
from ringsched.policies.gadget.estimate_error import EstimateError
from ringsched.policies.gadget.policy import Gadget
from ringsched.simulator import SimConfig, Simulator
from test_gadget import job, nodes
from test_gadget_lending import waiting


def finished(err: EstimateError, js: JobState, done: float, status: str = "completed", early: bool = False) -> None:
    js.done_samples, js.status, js.stopped_early = done, status, early
    err.finished(js.job_id)


def order_at(n, idle, ratios) -> list[str]:
    """The job ids in GADGET's lending order at ``n`` once the finished jobs' ratios are ``ratios``."""
    g = Gadget()
    g._ensure(n, idle)
    g.errors.ratios, g.errors._factor = list(ratios), None
    return [idle[i].job_id for i in g.lender._order(idle, n)]


def test_the_ratio_is_true_work_over_the_first_estimate_of_completed_jobs_only():
    c = parse_spec("1x8")
    err = EstimateError(0.5)
    assert err.optimistic() == 1.0  # nothing finished yet: the estimate as it is
    a, b, r, s, f = (JobState(job(i, 0.0, 1, 100, c), i, 100.0) for i in range(5))
    err.see([a, b, r, s, f])
    w = a.job.work_samples
    a.job = dataclasses.replace(a.job, work_samples=2 * w)  # re-estimated: the first estimate counts
    err.see([a])
    finished(err, a, 1.5 * w)
    finished(err, b, 0.25 * b.job.work_samples)
    finished(err, r, 0.1 * w, status="rejected")  # left without completing: no truth seen
    finished(err, s, 0.1 * w, early=True)  # stopped by an objective's rule: not its full work
    finished(err, f, 0.1 * w, status="failed")  # gave up after failures: not its full work
    assert err.ratios == pytest.approx([1.5, 0.25])
    assert not err._first and not err._states  # nothing kept of jobs that left
    assert err.optimistic() == pytest.approx(0.875)  # the median of the two
    err.quantile = 1.0
    err._factor = None
    assert err.optimistic() == 1.0  # never above 1: an under-estimate does not make jobs look later


def test_triage_gives_up_only_jobs_too_late_even_at_the_optimistic_remaining_work():
    """Past its sigmoid's midpoint by its estimate, the late job is given up (served after the
    longer job still in time) while every finished job's estimate was right; once finished
    jobs ran half their estimates, at half its remaining work it is in time, so it is served
    shortest first. A job too late even then stays given up."""
    c = parse_spec("1x8")
    n = nodes(c, now=10_000.0)
    late = waiting(c, 0, 7_200.0, 300, 3_000.0)  # done alone at JCT 3,100 (150 s of it at half)
    in_time = waiting(c, 1, 8_000.0, 1_200, 6_000.0)
    hopeless = waiting(c, 2, 6_800.0, 600, 3_000.0)  # JCT 3,800, at half 3,500: past 3,000 either way
    idle = [late, in_time, hopeless]

    assert Gadget().p.lend_triage_quantile == 0.1
    assert order_at(n, idle, []) == ["j1", "j0", "j2"]
    assert order_at(n, idle, [1.0] * 10) == ["j1", "j0", "j2"]
    assert order_at(n, idle, [0.5] * 10) == ["j0", "j1", "j2"]
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            Gadget(lend_triage_quantile=bad)
    g = Gadget(lend_triage_quantile=1.0)  # the largest quantile: a job is given up only if late at every ratio
    g._ensure(n, idle)
    assert g.lender.errors is g.errors and g.errors.quantile == 1.0


def test_a_job_past_its_horizon_by_its_estimate_but_in_time_at_the_optimistic_work_is_in_the_middle_tier():
    """The horizon test reads the estimate as it stands, the triage test the optimistic work,
    and the tier counts the tests failed: while finished jobs ran 0.3 of their estimates, a job
    past its horizon by its estimate (11,000 s > 10,900 s) but in time for half its value at
    0.3 of its work (10,300 s <= 10,400 s) is in the middle tier, served before a longer one
    there; with exact estimates it is last."""
    c = parse_spec("1x8")
    n = nodes(c, now=10_000.0)
    hopeful = waiting(c, 0, 9_900.0, 1_000, 500.0)  # triage point 10,400 s, horizon 10,900 s
    middle = waiting(c, 1, 7_000.0, 1_500, 2_500.0)  # past its triage point, ends before its horizon
    idle = [hopeful, middle]

    assert order_at(n, idle, []) == ["j1", "j0"]
    assert order_at(n, idle, [0.3] * 10) == ["j0", "j1"]


@pytest.mark.parametrize("estimates, ratio", [("exact", 1.0), ("user:2", 0.5)])
def test_the_world_tells_gadget_of_each_completion_and_it_learns_the_estimates_error(estimates, ratio):
    """Every estimate twice the truth (users who pad their requests): the finished jobs' ratios
    are all one half, and triage tests at half the estimate; exact estimates give 1."""
    c = parse_spec("1x8")
    jobs = [job(i, 200.0 * i, 2, 600, c) for i in range(5)]
    g = Gadget()
    r = Simulator(jobs, c, g, SimConfig(seed=1, estimates=estimates)).run()
    assert (r.jobs.status == "completed").all()
    assert g.errors.ratios == pytest.approx([ratio] * 5)
    assert g.errors.optimistic() == pytest.approx(ratio)
