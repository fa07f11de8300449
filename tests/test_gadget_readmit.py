"""Re-admission of deferred jobs (``GadgetParams.readmit_share``): a job that found no paying
plan when first offered is admitted again only by a plan that keeps at least that share of its
utility's maximum; it still runs on lent GPUs."""

from __future__ import annotations

import numpy as np

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies.gadget.policy import Gadget
from ringsched.simulator import SimConfig, Simulator
from ringsched.utility.functions import SigmoidUtility


def rigid(jid, arrival, gpus, seconds, cluster, utility):
    rate = SpeedModel(cluster).throughput_sps("resnet50", 64, consolidated_shape(gpus, int(cluster.gpus.max())))
    return Job(jid, float(arrival), "resnet50", 64, seconds * rate, gpus, gpus, utility)


class Committing(Gadget):
    """GADGET that records every plan it commits: (job, utility share at the plan's finish)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.committed: list[tuple[str, float]] = []

    def optimize(self, jobs, nodes, previous_allocations):
        before = dict(self.plans)
        out = super().optimize(jobs, nodes, previous_allocations)
        by_id = {js.job_id: js.job for js in jobs}
        for jid, plan in self.plans.items():
            if before.get(jid) is not plan:
                j = by_id[jid]
                self.committed.append((jid, float(j.utility(plan.finish_s - j.arrival_s)) / float(j.utility.max_value)))
        return out


def run(**options):
    """1x8, users who pad (every estimate twice the true work): a job of 20,000 s, planned as
    40,000 s, holds the server; a 2,000 s job arrives at 100 s whose utility keeps 2% of its
    value up to about 24,000 s, so no plan fits its window at its arrival. The long job
    finishes at 20,000 s and frees the server; the short job runs there on lent GPUs, and its
    next offer finds a plan that keeps a few percent of its value."""
    c = parse_spec("1x8")
    steep = SigmoidUtility(value=44.0, target_jct_s=40_115.0, steepness_per_s=0.5)  # (never displaced)
    fading = SigmoidUtility(value=1.0, target_jct_s=12_000.0, steepness_per_s=float(np.log(49.0)) / 12_000.0)
    jobs = [rigid("long", 0, 8, 20_000.0, c, steep), rigid("late", 100, 8, 2_000.0, c, fading)]
    pol = Committing(late_share=0.0, **options)
    r = Simulator(jobs, c, pol, SimConfig(seed=0, estimates="user:2")).run()
    assert (r.jobs.status == "completed").all()  # (the late job runs on lent GPUs either way)
    return [share for jid, share in pol.committed if jid == "late"]


def test_a_deferred_job_is_not_admitted_again_to_a_plan_past_its_utilitys_midpoint():
    taken = run(readmit_share=0.0)
    assert taken and max(taken) < 0.5  # (any paying plan: one is taken)
    assert run() == []  # (the default 0.5: none of those is)
