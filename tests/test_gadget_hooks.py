"""GADGET's hooks into the world: re-planning a re-estimated job, the split of its GPU-time
between committed plans and lent GPUs (``stats``), and the slot a mid-slot decision plans from."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.utility.functions import SigmoidUtility
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import Nodes
from ringsched.policies.gadget.params import utility_horizon_s
from ringsched.policies.gadget.policy import Gadget, slot_of
from ringsched.simulator import SimConfig, Simulator

U = SigmoidUtility(1, 3600, 0.001)


def job(i, arrival, gpus, seconds, cluster):
    rate = SpeedModel(cluster).throughput_sps("resnet50", 64, consolidated_shape(gpus, int(cluster.gpus.max())))
    return Job(f"j{i}", float(arrival), "resnet50", 64, seconds * rate, 1, gpus, U)


class Watched(Gadget):
    """GADGET that records, at the first decision after each re-estimate, the start of the
    decision's slot (plans count whole slots), the job's plan and the time its new remaining work
    needs at its fastest."""

    name = "gadget-watched-test"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.told: list[str] = []
        self.after: list[tuple] = []

    def on_reestimate(self, job_id):
        super().on_reestimate(job_id)
        self.told.append(job_id)

    def optimize(self, jobs, nodes, previous_allocations):
        out = super().optimize(jobs, nodes, previous_allocations)
        for jid in self.told:
            js = next(j for j in jobs if j.job_id == jid)
            fastest = max(nodes.throughput_sps(js, w) for w in range(1, js.job.max_workers + 1))
            self.after.append((slot_of(nodes) * nodes.slot_s, self.plans.get(jid),
                               js.remaining_at(nodes.now_s) / fastest))
        self.told.clear()
        return out


class LateWatched(Watched):
    """Also records (decision slot, plan) at the first decision that plans each job."""

    name = "gadget-late-watched-test"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.first: dict[str, tuple] = {}
        self.slots: list[int] = []

    def optimize(self, jobs, nodes, previous_allocations):
        if self.told:
            self.slots.append(slot_of(nodes))
        out = super().optimize(jobs, nodes, previous_allocations)
        for jid, plan in self.plans.items():
            self.first.setdefault(jid, (slot_of(nodes), plan))
        return out


def test_a_reestimated_job_is_planned_to_start_at_once_not_late():
    """A late start bets on the estimate; a doubled one is a guess (up to twice the work left,
    its knee shown as late), so the re-plan of a re-estimated job starts at its best start.
    Mutant caught: the search's ``late`` ignored (the re-plan starts late like the first plan)."""
    c = parse_spec("1x8")
    rate = SpeedModel(c).throughput_sps("resnet50", 64, consolidated_shape(8, 8))
    flat = SigmoidUtility(1, 20 * 3600, 0.001)  # worth the same for hours: a later start pays as much
    j = Job("j0", 0.0, "resnet50", 64, 3000.0 * rate, 8, 8, flat)
    pol = LateWatched()
    r = Simulator([j], c, pol, SimConfig(estimates="user:0.3")).run()
    assert r.jobs.status.iloc[0] == "completed" and r.jobs.reestimates.iloc[0] == 2
    slot0, first = pol.first["j0"]
    assert first.first_slot > slot0  # the control: the first plan, on the estimate, starts late
    assert len(pol.after) == len(pol.slots) == 2
    for slot, (_, plan, _) in zip(pol.slots, pol.after):
        assert plan is not None and plan.first_slot == slot, (slot, plan)


@pytest.mark.parametrize("events", [True, False])
def test_a_reestimated_job_is_planned_again_for_its_new_work(events):
    c = parse_spec("1x8")
    jobs = [job(0, 0, 8, 3000.0, c), job(1, 100, 4, 2500.0, c)]
    pol = Watched()
    r = Simulator(jobs, c, pol, SimConfig(estimates="user:0.3", decide_at_events=events)).run()
    assert (r.jobs.status == "completed").all()
    assert len(pol.after) >= 2 and all(r.jobs.reestimates >= 1)
    planned = [(slot_start_s, plan, need_s) for slot_start_s, plan, need_s in pol.after if plan is not None]
    assert len(planned) >= 2, pol.after  # (a re-plan that would finish too late is refused: on lent GPUs)
    for slot_start_s, plan, need_s in planned:
        # a plan made for the doubled estimate: it cannot finish before the new work is done
        assert plan.finish_s >= slot_start_s + need_s - 1e-6, (slot_start_s, plan, need_s)


def test_a_reestimated_job_is_planned_again_only_where_its_new_work_pays():
    """A plan made on an estimate that failed was no promise: after a re-estimate the job is
    offered for its new work at its payoff, like any job, not at any payoff as a job behind a
    plan it was promised (under noisy estimates those re-plans held the GPUs of jobs that still
    paid: ``ho2-philly-b436b2``). Past its value, it runs on lent GPUs and still completes.
    Mutant caught: the re-estimated job offered at any payoff (``promised`` taking every job behind)."""
    c = parse_spec("1x8")
    gone = SigmoidUtility(1, 1200.0, 0.01)  # pays on its first estimate, nothing once that runs out
    jobs = [dataclasses.replace(job(0, 0, 8, 3000.0, c), utility=gone)]
    pol = Watched()
    r = Simulator(jobs, c, pol, SimConfig(estimates="user:0.3")).run()
    assert r.jobs.status.iloc[0] == "completed" and r.jobs.reestimates.iloc[0] == 2
    assert [plan for _, plan, _ in pol.after] == [None, None]
    assert r.summary["policy_stats"]["lent_gpu_h"] > 0  # it ran on, on lent GPUs
    # (the control, where the new work still pays: ``test_a_reestimated_job_is_planned_again_for_its_new_work``)


class HorizonWatched(Gadget):
    """GADGET that records, at every decision, the utility horizon it holds for each job beside
    the one of the job as the world shows it now, and whether the job was re-estimated by then."""

    name = "gadget-horizon-watched-test"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.seen: list[tuple] = []

    def optimize(self, jobs, nodes, previous_allocations):
        out = super().optimize(jobs, nodes, previous_allocations)
        for js in jobs:
            now = utility_horizon_s(js.job, self.p.tail_utility)
            again = js.job.work_samples > self.errors.first_estimate(js.job_id, js.job.work_samples)
            if js.job_id in self.horizon:
                self.seen.append(("policy", again, self.horizon[js.job_id][0], now))
            if (lent := self.lender._alone.get(js.job_id)) is not None:  # noqa: SLF001 - the lending tiers' cache
                self.seen.append(("lending", again, lent[3], js.job.arrival_s + now))
        return out


def test_a_reestimated_job_is_judged_by_its_new_utility_not_a_cached_one():
    """A re-estimate stretches a run-derived knee with the work, so the horizon GADGET keeps
    for the job (admission windows, the lending tiers) must move with it: the old one gave
    re-estimated jobs up early (noisy estimates, ``philly-0e4a51-small``: utility x1.23).
    Mutant caught: ``on_reestimate`` without dropping the cached horizons."""
    c = parse_spec("1x8")
    run = SigmoidUtility(1, 3 * 1500.0, 0.002, floor_s=600.0, from_run=True)  # knee: 3x a 1,500-s run
    jobs = [dataclasses.replace(job(0, 0, 8, 3000.0, c), utility=run),
            dataclasses.replace(job(1, 100, 4, 2500.0, c), utility=run)]
    pol = HorizonWatched()
    r = Simulator(jobs, c, pol, SimConfig(estimates="user:0.3")).run()
    assert (r.jobs.status == "completed").all() and all(r.jobs.reestimates >= 1)
    after = [(where, held, now) for where, again, held, now in pol.seen if again]
    assert {where for where, _, _ in after} == {"policy", "lending"}  # both caches seen after a re-estimate
    for where, held, now in after:
        assert held == pytest.approx(now), (where, held, now)


def test_gpu_time_splits_into_planned_and_lent_and_adds_up_to_what_ran():
    c = parse_spec("2x8")
    jobs = [job(i, 37.0 * i, [8, 4, 2, 1][i % 4], 400.0 + 150 * i, c) for i in range(14)]
    for events in (True, False):
        pol = Gadget()
        r = Simulator(jobs, c, pol, SimConfig(decide_at_events=events)).run()
        st = r.summary["policy_stats"]
        held_h = r.jobs.gpu_s.sum() / 3600
        assert st["planned_gpu_h"] + st["lent_gpu_h"] == pytest.approx(held_h, rel=1e-6)
        assert 0 < st["planned_share"] < 1 and st["lent_gpu_h"] > 0
        assert st["planned_share"] == pytest.approx(st["planned_gpu_h"] / held_h, rel=1e-6)
    # nothing is lent when GADGET does not lend: every GPU-second ran under a plan
    st = Simulator(jobs, c, Gadget(work_conserving=False), SimConfig()).run().summary["policy_stats"]
    assert st["lent_gpu_h"] == 0 and st["planned_share"] == 1.0 and st["jobs_ever_planned_share"] == 1.0


@pytest.mark.parametrize("now_s, slot", [(0.0, 0), (299.0, 0), (151.0, 0), (300.0, 1), (300.0 - 1e-10, 1), (899.9, 2)])
def test_a_decision_plans_from_the_slot_it_lies_in(now_s, slot):
    c = parse_spec("1x8")
    n = Nodes(c, np.ones(1, dtype=bool), now_s, 300.0, SpeedModel(c))
    assert slot_of(n) == slot
