"""Job priority as a Slurm user expects it: among jobs competing for GPUs, the higher priority
is offered them first, by every policy (``policies.common.queue_key``; docs/policies.md,
"Priority"); jobs without one are scheduled exactly as before."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.policies import make_policy, policy_names
from test_baselines import job, random_jobs, run

CLUSTER = parse_spec("1x4")
SLOT_S = 300.0


def two_rivals(priority_of_second: int):
    """Two jobs that each need the whole cluster, submitted together: j0 first and shorter
    (first by arrival, remaining time, attained service, size), j1 with a priority."""
    first = job(0, 0, 4, 1200.0, CLUSTER)
    second = dataclasses.replace(job(1, 0, 4, 2400.0, CLUSTER), priority=priority_of_second)
    return [first, second]


@pytest.mark.parametrize("name", policy_names())
def test_the_higher_priority_job_runs_first(name):
    """j1 gets the GPUs at once (GADGET's plans start at the next slot: it lends the idle GPUs
    to j0 until then) and finishes first."""
    r = run(two_rivals(5), CLUSTER, name, slot_s=SLOT_S)
    assert (r.status == "completed").all(), r
    assert r.loc["j1", "first_start_s"] <= SLOT_S and r.loc["j1", "finish_s"] < r.loc["j0", "finish_s"], \
        r[["first_start_s", "finish_s"]]


@pytest.mark.parametrize("name", policy_names())
def test_a_lower_priority_waits_behind_the_default(name):
    r = run(two_rivals(-5), CLUSTER, name, slot_s=SLOT_S)
    assert r.loc["j0", "finish_s"] <= r.loc["j1", "first_start_s"] + 1e-9, r[["first_start_s", "finish_s"]]


@pytest.mark.parametrize("name", ["fifo", "srtf", "tiresias", "themis", "drf", "optimus", "gadget"])
def test_equal_priorities_change_nothing(name):
    """Every job at the same priority (not 0) is scheduled as with none."""
    c = parse_spec("2x8")
    jobs = random_jobs(c, 60, seed=3)
    raised = [dataclasses.replace(j, priority=7) for j in jobs]
    cfg = dict(slot_s=300)
    pd.testing.assert_frame_equal(run(raised, c, make_policy(name), **cfg), run(jobs, c, make_policy(name), **cfg))


def test_drf_priority_comes_before_fairness():
    """Tenant a's two high-priority jobs both run before tenant b's job, though a's first one
    already gives a the larger dominant share."""
    c = parse_spec("1x4")
    a1, a2 = (dataclasses.replace(job(i, 0, 2, 1200.0, c, tenant="a"), priority=5) for i in (1, 2))
    b0 = job(0, 0, 2, 1200.0, c, tenant="b")
    r = run([b0, a1, a2], c, "drf", slot_s=SLOT_S)
    assert r.loc["j1", "first_start_s"] == r.loc["j2", "first_start_s"] == 0
    assert r.loc["j0", "first_start_s"] >= r.loc["j1", "finish_s"] - 1e-9, r[["first_start_s", "finish_s"]]


def test_drf_orders_a_tenants_own_jobs_by_priority():
    c = parse_spec("1x4")
    low = job(0, 0, 4, 1200.0, c, tenant="a")
    high = dataclasses.replace(job(1, 0, 4, 1200.0, c, tenant="a"), priority=5)
    r = run([low, high], c, "drf", slot_s=SLOT_S)
    assert r.loc["j1", "first_start_s"] == 0 and r.loc["j0", "first_start_s"] >= r.loc["j1", "finish_s"] - 1e-9
