"""GADGET's lane (``lane_gpus``, docs/theory.md section 9): no elastic job takes the last GPUs of
the cluster in its plans or its lent rings, so that a job arriving while a wide job runs can
start at once; a job whose fewest workers need those GPUs still gets them, and a top-up may
use them when it pays for its restarts (lending takes them back for waiting jobs first). Each
test names the mutant it catches; the property over random workloads is in test_gadget.py
(``Watched``: no committed plan is wider than ``most_workers``)."""

from __future__ import annotations

import numpy as np
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.policies import JobState
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.policy import Gadget, Oasis
from ringsched.simulator import SimConfig, Simulator
from ringsched.utility.functions import SigmoidUtility
from test_gadget import job, nodes


def widest(plan: Plan) -> int:
    return max(len(pl) for _, _, pl in plan.segments)


@pytest.mark.parametrize("policy", [Gadget, Oasis])
def test_a_plan_leaves_the_last_gpu_of_the_cluster_free(policy):
    """An elastic job of up to every GPU is planned on all but one (at zero prices the widest
    plan pays best); with ``lane_gpus=0`` on all of them. Mutant caught: the search's worker
    menu up to the job's own most (``GadgetParams.menu`` without the lane)."""
    c = parse_spec("2x8")
    a = JobState(job(0, 0.0, 16, 1800, c), 0, 1800.0)
    for lane, most in ((1, 15), (0, 16), (3, 13)):
        g = policy(lane_gpus=lane)
        n = nodes(c)
        g._ensure(n, [a])
        assert widest(g.offer(a, n, 0)) == most


def test_a_job_whose_fewest_workers_need_the_lane_still_gets_it():
    """A rigid job of every GPU runs on every GPU: the lane never makes a job impossible."""
    c = parse_spec("2x8")
    rigid = JobState(job(0, 0.0, 16, 3600, c, lo=16), 0, 3600.0)
    g = Gadget()
    assert g.p.most_workers(rigid.job, 16) == 16
    n = nodes(c)
    g._ensure(n, [rigid])
    assert widest(g.offer(rigid, n, 0)) == 16
    assert len(g.optimize([rigid], n, {})["j0"]) == 16


def test_a_top_up_may_use_the_lane_when_it_pays_for_its_restarts():
    """Top-ups are not bound by the lane: they grow a job only when the gain pays for a restart
    to grow and one to shrink back (``top_up_gain``), and lending gives their GPUs to waiting
    jobs first. A 2-GPU plan on 1x8 is topped up to all 8. Mutant caught: the top-up's worker
    menu capped at ``most_workers``."""
    c = parse_spec("1x8")
    a = JobState(job(0, 0.0, 8, 20_000, c), 0, 20_000.0)
    g = Gadget(restart_s=30.0)
    n0 = nodes(c)
    g._ensure(n0, [a])
    g.book.commit("j0", Plan([(0, 200, (0, 0))], 60_000.0, 1.0, 0.1))  # two GPUs for a long time
    assert len(g.optimize([a], n0, {})["j0"]) == 8


def test_a_lent_ring_stops_short_of_the_lane():
    """A job with nothing left to earn (never planned) is lent all idle GPUs but the last.
    Mutant caught: the lent ring's size up to the job's own most (``js.job.max_workers``)."""
    c = parse_spec("1x8")
    dead = SigmoidUtility(1.0, 600.0, float(np.log(49.0)) / 600.0)
    a = JobState(Job("j0", 0.0, "resnet50", 64, job(0, 0.0, 8, 20_000, c).work_samples, 1, 8, dead), 0, 20_000.0)
    for lane, got in ((1, 7), (0, 8)):
        g = Gadget(lane_gpus=lane)
        n = nodes(c, 10_000.0)
        g._ensure(n, [a])
        out = g.optimize([a], n, {})
        assert "j0" not in g.plans and len(out["j0"]) == got


def test_a_short_job_arriving_while_a_wide_job_runs_starts_at_once():
    """The lane's purpose, end to end on 2x8: a half-hour job elastic up to 16 GPUs, then a 1-GPU
    job of 2 minutes. With the lane the short job starts on arrival and the wide job pays about
    1/16 of its run; without it (the control) the short job waits for the whole wide run."""
    c = parse_spec("2x8")
    jobs = [job(0, 0.0, 16, 1800, c), job(1, 300.0, 1, 120, c)]

    def run(lane):
        r = Simulator(jobs, c, Gadget(lane_gpus=lane), SimConfig(seed=0)).run().jobs.set_index("job_id")
        return r.loc["j0", "jct_s"], r.loc["j1", "jct_s"]

    wide_lane, short_lane = run(1)
    wide_none, short_none = run(0)
    assert short_lane == pytest.approx(120.0, rel=0.01)  # no wait
    assert short_none > 1200.0  # it waited for the wide job
    assert wide_lane <= wide_none * (1 + 1 / 16) + 60.0  # the wide job lost about one GPU's share
