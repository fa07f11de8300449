"""Admission on time (``GadgetParams.on_time_share``, deferred admission): a job is admitted
only by a plan that keeps at least that share of what it could still earn running alone from
now, and not at all once it has nothing left to earn (below ``tail_utility``); it still runs
on lent GPUs."""

from __future__ import annotations

import numpy as np

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import JobState
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.policy import Gadget
from ringsched.simulator import SimConfig, Simulator
from ringsched.utility.functions import SigmoidUtility
from test_gadget import nodes


def rigid(jid, arrival, gpus, seconds, cluster, utility):
    rate = SpeedModel(cluster).throughput_sps("resnet50", 64, consolidated_shape(gpus, int(cluster.gpus.max())))
    return Job(jid, float(arrival), "resnet50", 64, seconds * rate, gpus, gpus, utility)


def sigmoid(value, target_s):
    return SigmoidUtility(value=value, target_jct_s=target_s, steepness_per_s=float(np.log(49.0)) / target_s)


class Committing(Gadget):
    """GADGET that records every plan it commits: (job, decision time, utility share kept)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.committed: list[tuple[str, float, float]] = []

    def optimize(self, jobs, nodes, previous_allocations):
        before = dict(self.plans)
        out = super().optimize(jobs, nodes, previous_allocations)
        by_id = {js.job_id: js.job for js in jobs}
        for jid, plan in self.plans.items():
            if before.get(jid) is not plan:
                j = by_id[jid]
                kept = float(j.utility(plan.finish_s - j.arrival_s)) / float(j.utility.max_value)
                self.committed.append((jid, nodes.now_s, kept))
        return out


def run(**options):
    """1x8, users who pad (every estimate twice the true work): a job of 20,000 s, planned as
    40,000 s, holds the server; a 2,000 s job arrives at 100 s. Alone it would keep 97% of
    its value; its only plan then starts after the long job's reservation and keeps 18%. The
    long job finishes at 20,000 s; the short one runs on lent GPUs and is planned there."""
    c = parse_spec("1x8")
    steep = SigmoidUtility(value=44.0, target_jct_s=40_115.0, steepness_per_s=0.5)  # (never displaced)
    jobs = [rigid("long", 0, 8, 20_000.0, c, steep), rigid("late", 100, 8, 2_000.0, c, sigmoid(1.0, 30_000.0))]
    pol = Committing(late_share=0.0, **options)
    r = Simulator(jobs, c, pol, SimConfig(seed=0, estimates="user:2")).run()
    assert (r.jobs.status == "completed").all()  # (the late job runs either way)
    return [(t, kept) for jid, t, kept in pol.committed if jid == "late"]


def test_a_job_is_not_admitted_to_a_plan_that_keeps_less_than_half_of_what_it_could_earn():
    """Mutant caught: the rule off, or applied to re-offers only (the plan at arrival is taken)."""
    taken = run(on_time_share=0.0)
    assert taken[0][0] < 1_000 and taken[0][1] < 0.25  # any paying plan: the late one, at arrival
    kept = run()
    assert kept and all(t >= 20_000 and share > 0.5 for t, share in kept)  # planned once the server is free


def test_the_rule_compares_with_the_job_alone_from_now_and_drops_jobs_with_nothing_left():
    """Mutants caught: measured against the utility's maximum (a job that can no longer reach
    it is never planned), the floor at ``tail_utility`` left out (a plan for 1e-80 of the value
    is taken), alone time left out (now taken as the finish)."""
    c = parse_spec("1x8")
    g = Gadget()
    n = nodes(c, now=10_000.0)
    j = rigid("j", 0.0, 8, 4_000.0, c, sigmoid(1.0, 9_000.0))  # alone from now: JCT 14,000 s, keeps 0.23
    js = JobState(j, 0, 4_000.0)
    g._ensure(n, [js])
    assert abs(g.fastest_alone_s(js, n) - 4_000.0) < 1.0

    def late(finish_s, job_state=js):
        return g.too_late(job_state, Plan([(33, 47, (0,) * 8)], finish_s, 1.0, 0.0), n)

    share = float(j.utility(14_000.0)) / float(j.utility.max_value)
    assert 0.1 < share < 0.3
    assert not late(14_000.0) and not late(14_600.0)  # 0.23 -> 0.2: more than half of what is left
    assert late(17_000.0)  # 0.23 -> 0.09: less than half
    dead = JobState(rigid("d", 0.0, 8, 4_000.0, c, sigmoid(1.0, 2_000.0)), 1, 4_000.0)  # alone: 1e-5 left
    g._ensure(n, [dead])
    assert late(14_000.0, dead)
    assert not Gadget(on_time_share=0.0).too_late(js, Plan([(33, 47, (0,) * 8)], 1e9, 1.0, 0.0), n)


def test_a_job_with_nothing_left_to_earn_is_not_searched_for():
    """Its plan could only be refused, so its offer skips the search (speed: under overload such
    jobs are re-offered every few slots). Mutant caught: the early return in ``offer`` removed."""
    c = parse_spec("1x8")
    g = Gadget()
    n = nodes(c, now=10_000.0)
    dead = JobState(rigid("d", 0.0, 8, 4_000.0, c, sigmoid(1.0, 2_000.0)), 0, 4_000.0)
    alive = JobState(rigid("a", 9_000.0, 8, 4_000.0, c, sigmoid(1.0, 9_000.0)), 1, 4_000.0)
    g._ensure(n, [dead, alive])
    calls = []
    search = g.planner.search
    g.planner.search = lambda *a, **kw: calls.append(a[0].job_id) or search(*a, **kw)
    assert g.offer(dead, n, 33) is None and calls == []
    assert g.offer(alive, n, 33) is not None and calls == ["a"]
    assert g.offer(dead, n, 33, must=True) is not None  # (taken at any payoff: searched)
