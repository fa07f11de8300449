"""GADGET's backfilling in lending (policies/gadget/lending.py ``_backfill``, idle.py): a job
that ends before a commitment takes its GPUs is lent them though they are committed within the
lookahead; a longer one is not; the estimates' pessimistic factor counts; each window of idle
GPUs is kept right as rings are lent. Also: the lending order ranks a job wider than the
cluster at the widest ring it can get here."""

from __future__ import annotations

import numpy as np

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.policies import JobState
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.idle import IdleCapacity
from ringsched.policies.gadget.policy import Gadget
from test_gadget import U, job, nodes
from test_gadget_lending import lend_order


def _lent_ahead_of_a_plan(*seconds_alone, ran_over=(), **params) -> dict:
    """On 1x8 whose 8 GPUs a plan takes from slot 2 (600 s): what lending gives waiting 1-8 GPU
    jobs of ``seconds_alone`` (at 8 GPUs) at t = 0, once finished jobs ran ``ran_over`` times
    their first estimates."""
    c = parse_spec("1x8")
    g = Gadget(**params)
    jobs = [JobState(job(i + 1, 0.0, 8, s, c), i + 1, float(s)) for i, s in enumerate(seconds_alone)]
    n = nodes(c)
    g._ensure(n, jobs)
    g.book.commit("j0", Plan([(2, 20, (0,) * 8)], 6_000.0, 1.0, 0.1))
    for ratio in ran_over:
        g.errors.see([b := JobState(job(9, 0.0, 1, 10, c), 9, 10.0)])
        b.done_samples, b.status = ratio * b.job.work_samples, "completed"
        g.errors.finished("j9")
    assert g.errors.pessimistic() >= 1.0 >= g.errors.optimistic()
    out: dict = {}
    g.lender.lend(jobs, n, 0, out, {}, [])
    return out


def test_a_short_job_is_lent_gpus_a_plan_takes_after_it_ends():
    # 300 s at 8 GPUs: on the 7 lending gives it (one kept for the lane), with a restart,
    # done within slot 1; the 600 s and the hour-long jobs would run into the plan
    out = _lent_ahead_of_a_plan(300, 600, 3_600)
    assert list(out) == ["j1"] and len(out["j1"]) == 7
    assert _lent_ahead_of_a_plan(600) == {}  # ends in slot 2, where the plan holds every GPU
    assert _lent_ahead_of_a_plan(300, backfill=False) == {}  # the lookahead's rule alone
    assert Gadget().p.backfill is True


def _lent_after_jobs_ran_over(*ratios: float) -> dict:
    """What lending gives the 300 s job of ``_lent_ahead_of_a_plan`` once finished jobs ran
    ``ratios`` times their first estimates (no calibration: ratios that agree would be taken as
    the estimates' bias and the jobs scaled, in ``optimize``, before lending sees them)."""
    return _lent_ahead_of_a_plan(300, ran_over=ratios, calibrate_spread=0)


def test_backfilling_takes_the_work_at_the_estimates_pessimistic_factor():
    assert len(_lent_after_jobs_ran_over(*[0.5] * 10)["j1"]) == 7  # over-estimated jobs: the estimate stands
    assert _lent_after_jobs_ran_over(*[2.0] * 10) == {}  # 2 x 343 s + a restart runs into slot 2
    # the high quantile (0.9) of the ratios, not the low one the triage takes
    assert _lent_after_jobs_ran_over(*[0.5] * 5, *[3.0] * 5) == {}
    assert len(_lent_after_jobs_ran_over(*[0.5] * 9, 3.0)["j1"]) == 7


class _Ledger:
    def __init__(self, used_g):
        self.used_g = np.array(used_g, dtype=np.int64)

    def window(self, a, z):
        return self.used_g[:, : z - a], np.zeros(self.used_g[:, : z - a].shape)


def test_each_window_of_idle_gpus_keeps_what_a_backfilled_ring_leaves():
    cap = np.array([8, 8])
    idle = IdleCapacity.of(_Ledger([[0, 0, 4, 8], [0, 0, 0, 0]]), cap, 0, 4, 0.5)
    assert [idle.within(k)[0] for k in (1, 2, 3, 4)] == [8, 8, 4, 0]
    lists = idle.as_lists()
    lists.take_within(((0, 2), (1, 2)), False, 2)  # two GPUs on each server for two slots
    idle.assign(lists)
    assert [int(idle.within(k)[0]) for k in (1, 2, 3, 4)] == [6, 6, 4, 0]  # later windows were tighter already
    assert [int(idle.within(k)[1]) for k in (1, 2, 3, 4)] == [6, 6, 6, 6]  # ... or keep what is left of two slots
    lists = idle.as_lists()
    lists.take_now(((1, 6),), False)
    idle.assign(lists)
    assert [int(idle.within(k)[1]) for k in (1, 2, 3, 4)] == [0, 0, 0, 0]
    # a ring kept on GPUs idle in this slot leaves the tighter later windows as they were
    idle = IdleCapacity.of(_Ledger([[0, 2, 2, 6]]), np.array([8]), 0, 4, 0.5)
    lists = idle.as_lists()
    assert lists.take_now(((0, 2),), False) == 0  # the lookahead's free (2) stays
    idle.assign(lists)
    assert [int(idle.within(k)[0]) for k in (1, 2, 3, 4)] == [6, 6, 6, 2]


def test_the_lending_order_ranks_a_job_wider_than_the_cluster_at_its_widest_ring_here():
    """A 32-GPU job on 8 GPUs runs on at most 7 (one kept for the lane): ranked at 32 workers
    on a 4-server ring that does not exist it looked four times shorter than it is, took lent
    GPUs ahead of shorter jobs and was stopped for them later."""
    c = parse_spec("1x8")
    n = nodes(c)
    wide_j = job(0, 0.0, 8, 3 * 3600, c)
    wide = JobState(Job("j0", 0.0, "resnet50", 64, wide_j.work_samples, 1, 32, U), 0, 3 * 3600.0)
    narrow = JobState(job(1, 0.0, 7, 2 * 3600, c), 1, 2 * 3600.0)
    assert lend_order([wide, narrow], n) == ["j1", "j0"]
