"""GADGET's lending of idle GPUs (policies/gadget/lending.py, book.py): top-ups grow a planned
job and give the GPUs back to a commitment; a plan starting now stays where its job runs; rings
pack within the slack; late starts; lending order past the utility horizon; early runs
committed within the lookahead; never more rings on a NIC than it holds."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.policies import JobState
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.policy import Gadget
from ringsched.utility.functions import SigmoidUtility
from test_gadget import U, job, nodes


def test_top_up_grows_a_planned_job_and_gives_the_gpus_back_to_a_commitment():
    c = parse_spec("1x8")
    g = Gadget(restart_s=30.0)
    a = JobState(job(0, 0.0, 8, 20_000, c), 0, 20_000.0)
    n0 = nodes(c)
    g._ensure(n0, [a])
    g.book.commit("j0", Plan([(0, 200, (0, 0))], 60_000.0, 1.0, 0.1))  # two GPUs for a long time
    out = g.optimize([a], n0, {})
    assert out["j0"] == (0,) * 8  # six idle GPUs lent on top of the two committed
    # later the lent GPUs stay while idle ...
    out2 = g.optimize([a], nodes(c, 300.0), {"j0": out["j0"]})
    assert out2["j0"] == (0,) * 8
    # ... and go back as soon as another job's plan needs them; the commitment stays whole
    b = JobState(job(1, 300.0, 4, 3600, c), 1, 3600.0)
    g.book.commit("j1", Plan([(2, 20, (0, 0, 0, 0))], 6000.0, 1.0, 0.1))
    out3 = g.optimize([a, b], nodes(c, 600.0), {"j0": out["j0"]})
    assert out3["j1"] == (0,) * 4
    assert Counter((0, 0)) <= Counter(out3["j0"]) and len(out3["j0"]) <= 4


def test_top_up_waits_when_a_restart_cannot_pay():
    c = parse_spec("1x8")
    g = Gadget()
    a = JobState(job(0, 0.0, 8, 20_000, c), 0, 20_000.0)
    n0 = nodes(c, restart_s=10_000.0)  # a restart costs more than the lookahead: never worth it
    g._ensure(n0, [a])
    g.book.commit("j0", Plan([(0, 200, (0, 0))], 60_000.0, 1.0, 0.1))
    assert g.optimize([a], n0, {})["j0"] == (0, 0)
    assert Gadget(top_up=False).p.top_up is False


def test_a_plan_starting_now_stays_where_its_job_already_runs():
    c = parse_spec("3x4")
    g = Gadget(top_up=False)
    a = JobState(job(0, 0.0, 2, 3600, c), 0, 3600.0)
    n1 = nodes(c, 300.0)
    g._ensure(n1, [a])
    g.book.commit("j0", Plan([(1, 10, (1, 1))], 3000.0, 1.0, 0.1))  # planned on server 1 from slot 1
    out = g.optimize([a], n1, {"j0": (0, 0)})  # it already runs on lent GPUs of server 0
    assert out["j0"] == (0, 0) and g.plans["j0"].segments == [(1, 10, (0, 0))]
    used = g.ledger.window(1, 10)[0]
    assert (used[0] == 2).all() and (used[1] == 0).all()  # the reservation moved with it
    # when its servers are committed to others in the segment, the job moves to its plan
    g2 = Gadget(top_up=False)
    g2._ensure(n1, [a])
    g2.book.commit("j0", Plan([(1, 10, (1, 1))], 3000.0, 1.0, 0.1))
    g2.book.commit("other", Plan([(5, 8, (0, 0, 0))], 2400.0, 1.0, 0.1))
    b = JobState(job(1, 0.0, 3, 3600, c), 1, 3600.0)
    assert g2.optimize([a, b], n1, {"j0": (0, 0)})["j0"] == (1, 1)
    # and a different shape (a ring over two servers) is not a place to stay
    g3 = Gadget(top_up=False)
    g3._ensure(n1, [a])
    g3.book.commit("j0", Plan([(1, 10, (1, 1))], 3000.0, 1.0, 0.1))
    assert g3.optimize([a], n1, {"j0": (0, 2)})["j0"] == (1, 1)


def test_one_server_rings_pack_onto_the_fullest_server_within_the_slack():
    """Cheapest-first embedding puts a small ring on the emptiest server (fragmentation); with
    ``pack_slack`` it goes to the fullest server that hosts it while the extra cost stays within
    the slack x its utility, keeping a whole server for a wide ring."""
    c = parse_spec("3x8")
    a = JobState(job(0, 0.0, 2, 1800, c), 0, 1800.0)
    others = [JobState(job(i, 0.0, 8, 15_000, c), i, 15_000.0) for i in (1, 2)]
    blocker = JobState(job(9, 0.0, 8, 1500, c), 9, 1500.0)

    def placed(full_until: int = 0, **kw):
        g = Gadget(L=1e-3, U=10.0, work_conserving=False, **{"late_share": 0.0, **kw})
        g._ensure(nodes(c), [a])
        g.book.commit("j1", Plan([(0, 50, (0,) * 5)], 15_000.0, 1.0, 0.1))  # server 0: 5 of 8 busy
        g.book.commit("j2", Plan([(0, 50, (1,) * 2)], 15_000.0, 1.0, 0.1))  # server 1: 2 of 8 busy
        if full_until:  # every GPU committed until then: the job's plan starts later
            g.book.commit("j9", Plan([(0, full_until, (0,) * 3 + (1,) * 6 + (2,) * 8)], 1.0, 1.0, 0.1))
        g.optimize([a, *others] + ([blocker] if full_until else []), nodes(c), {})
        return g.plans["j0"].segments[0], g

    assert (Gadget().p.pack_slack, Gadget().p.pack_within) == (100.0, 3)  # on by default (docs/theory.md, section 9)
    spread, _ = placed(pack_slack=0.0)
    assert spread[2] == (2, 2)  # the empty server is the cheapest
    packed, g = placed()
    assert packed[2] == (0, 0)  # the fullest server that hosts the ring, server 2 stays whole
    assert g.ledger.window(0, 1)[0][:, 0].tolist() == [7, 2, 0]
    tight, _ = placed(pack_slack=1e-9)
    assert tight[2] == (2, 2)  # no budget for the extra price: cheapest
    # a plan that starts in its window's pack_within-th step or later is not packed
    later, _ = placed(full_until=5)
    assert later[0] == 5 and later[2] == (2, 2)
    assert placed(full_until=5, pack_within=6)[0][2] == (0, 0)
    assert placed(pack_within=0)[0][2] == (2, 2)
    with pytest.raises(ValueError):
        Gadget(pack_within=-1)


def test_late_share_starts_the_chosen_plan_as_late_as_it_still_pays_nearly_as_much():
    """``late_share`` keeps the best plan's worker count and embedding but starts it at the latest
    step whose payoff stays within that share of the job's utility of the best (and positive)."""
    c = parse_spec("2x8")
    slow = SigmoidUtility(10.0, 40_000.0, 1e-4)  # nearly flat for hours: later starts pay almost as much
    j = Job("j0", 0.0, "resnet50", 64, job(0, 0.0, 4, 1800, c).work_samples, 1, 4, slow)

    def plan(**kw):
        g = Gadget(L=1e-3, U=10.0, work_conserving=False, **kw)
        g._ensure(nodes(c), [j])
        return g.search(j, j.work_samples, nodes(c), 0, horizon_end_s=60_000.0)

    best = plan(late_share=0.0)
    late = plan(late_share=0.05)
    assert best.first_slot == 0 and late.first_slot > best.first_slot
    assert len(late.first_placement) == len(best.first_placement)  # the same worker count
    assert best.payoff - 0.05 * slow.max_value <= late.payoff <= best.payoff and late.payoff > 0
    assert Gadget().p.late_share == 0.2  # on by default (docs/theory.md, section 9)
    with pytest.raises(ValueError):
        Gadget(late_share=-1.0)


def waiting(c, i, arrival, seconds, target):
    """A waiting 1-8 GPU job of ``seconds`` alone at 8 GPUs, its sigmoid at half value at
    ``target`` and 2% (its horizon) at 2 x target."""
    u = SigmoidUtility(1.0, target, float(np.log(49.0)) / target)
    j = Job(f"j{i}", arrival, "resnet50", 64, job(i, arrival, 8, seconds, c).work_samples, 1, 8, u)
    return JobState(j, i, seconds)


def lend_order(idle, n, **params) -> list[str]:
    """The job ids in GADGET's lending order (``Lender._order``) at ``n``."""
    g = Gadget(**params)
    g._ensure(n, idle)
    return [idle[i].job_id for i in g.lender._order(idle, n)]


def test_lending_serves_jobs_past_their_utility_horizon_last():
    """Idle jobs get lent GPUs shortest remaining first, except that a job which could not
    finish before its utility horizon even alone from now (nothing left to earn) comes after
    every job that still can: under overload the short jobs die first, and served first they
    took the lent GPUs from the long jobs that can still earn."""
    c = parse_spec("1x8")
    n = nodes(c, now=10_000.0)
    dead = waiting(c, 0, 0.0, 600, 1800.0)  # horizon at 3,600 s: long past
    long_alive = waiting(c, 1, 9_000.0, 7_200, 21_600.0)
    short_alive = waiting(c, 2, 9_900.0, 300, 1800.0)
    doomed = waiting(c, 3, 7_000.0, 900, 1800.0)  # horizon at 10,600 s: not yet passed, but 900 s of work left
    idle = [dead, long_alive, short_alive, doomed]
    assert lend_order(idle, n) == ["j2", "j1", "j0", "j3"]  # shortest first among the living, then the dead
    n_early = nodes(c, now=0.0)  # at t = 0 all can still earn: plain shortest first
    assert lend_order(idle, n_early) == ["j2", "j0", "j3", "j1"]


def test_lending_triage_serves_jobs_too_late_for_their_share_after_those_in_time():
    """A job that could no longer keep ``lend_triage_share`` of its utility even alone from now
    (just past its sigmoid's midpoint at the default 0.5, but still earning) is lent GPUs after every
    job that still can, however short, and before the jobs with nothing left to earn; with
    the share at 0 the order is plain shortest first with the dead last."""
    c = parse_spec("1x8")
    n = nodes(c, now=10_000.0)
    late = waiting(c, 0, 7_000.0, 300, 3_000.0)  # done alone at JCT 3,300: past half, before the 2% tail
    in_time = waiting(c, 1, 8_000.0, 1_200, 6_000.0)  # JCT 3,200 of 6,000: keeps more than half
    dead = waiting(c, 2, 0.0, 100, 1_800.0)  # JCT 10,100 > 3,600: nothing left to earn
    idle = [late, in_time, dead]
    assert Gadget().p.lend_triage_share == 0.5
    assert lend_order(idle, n) == ["j1", "j0", "j2"]
    assert lend_order(idle, n, lend_triage_share=0.0) == ["j0", "j1", "j2"]
    # the late job keeps more than 10%: in time for that share
    assert lend_order(idle, n, lend_triage_share=0.1) == ["j0", "j1", "j2"]
    for bad in (-0.1, 0.01, 1.0):  # (0.01: below tail_utility, it would split the dead)
        with pytest.raises(ValueError):
            Gadget(lend_triage_share=bad)


def test_a_job_running_early_on_its_planned_servers_gets_those_slots_committed():
    """With a late plan, lending runs the job early on its plan's placement; commit_early_runs
    then commits the slots until the plan starts (when the ledger has room and the plan starts
    within the lending lookahead), so a new plan cannot land there and move it. A plan that
    starts later keeps its early run lent: committing it would block every later arrival from
    now until the job is done."""
    c = parse_spec("2x8")
    slow = SigmoidUtility(10.0, 40_000.0, 1e-4)
    j = Job("j0", 0.0, "resnet50", 64, job(0, 0.0, 4, 1800, c).work_samples, 1, 4, slow)
    js = JobState(j, 0, 1800.0)

    def decide(**kw):
        g = Gadget(L=1e-3, U=10.0, late_share=0.05, **kw)
        out = g.optimize([js], nodes(c), {})
        return g, out

    g, out = decide(commit_early_runs=False)
    a, _, pl = g.plans["j0"].segments[0]
    assert a > 0 and out["j0"] == pl  # planned later, running early on lent GPUs
    assert g.ledger.window(0, 1)[0].sum() == 0  # ... which the prices do not see
    late = a
    g, out = decide(lend_lookahead=late - 1)  # the plan starts beyond the lending lookahead
    a, _, pl = g.plans["j0"].segments[0]
    assert a == late and out["j0"] == pl
    assert g.ledger.window(0, a)[0].sum() == 0  # the early run stays lent: new plans may take it
    g, out = decide(lend_lookahead=late)  # within the lookahead: committed
    a, _, pl = g.plans["j0"].segments[0]
    assert a == 0 and out["j0"] == pl
    used = g.ledger.window(0, 1)[0][:, 0]
    assert used.sum() == len(pl)  # committed from now on
    # without room in the ledger until the plan starts, nothing is committed early
    g = Gadget(L=1e-3, U=10.0, late_share=0.05)
    g._ensure(nodes(c), [js])
    plan = g.search(j, j.work_samples, nodes(c), 0, horizon_end_s=g.horizon_end_s(js, nodes(c)))
    start, _, pl = plan.segments[0]
    g.book.commit("j0", plan)
    s = pl[0]
    g.book.commit("jx", Plan([(start - 1, start, (s,) * 8)], 1.0, 1.0, 0.1))  # the slot before the plan: full
    assert start >= 1
    g.book.commit_early_runs({"j0": pl}, 0, nodes(c), 1 << 30)
    assert g.plans["j0"].segments[0][0] == start


def test_lending_never_puts_more_rings_on_a_nic_than_it_holds():
    """A lent ring over two servers takes the ring's NIC share in this slot too: planned jobs
    lent their crossing placements afterwards must find it taken."""
    c = parse_spec("3x4")
    g = Gadget(top_up=False, commit_early_runs=False)
    a = JobState(Job("a", 0.0, "resnet50", 64, 1000.0, 5, 5, U), 0, 10.0)  # shortest: lent first, must cross
    b = JobState(job(1, 0.0, 2, 20_000, c), 1, 20_000.0)
    d = JobState(job(2, 0.0, 2, 20_000, c), 2, 20_000.0)
    n = nodes(c)
    g._ensure(n, [a, b, d])
    g.book.commit("j1", Plan([(5, 10, (1, 2))], 3000.0, 1.0, 0.0))  # two crossing rings on servers 1 and 2 later
    g.book.commit("j2", Plan([(5, 10, (1, 2))], 3000.0, 1.0, 0.0))
    out: dict = {}
    g.lender.lend([a, b, d], n, 0, out, {}, [])  # a has no plan: it is lent GPUs first
    nic = np.zeros(3)
    for pl in out.values():
        servers = np.unique(pl)
        if servers.size > 1:
            nic[servers] += g.p.nic_share
    assert "a" in out and len(set(out["a"])) > 1  # the lent ring crosses servers
    assert np.all(nic <= 1 + 1e-9), (out, nic)


def test_a_job_without_a_plan_grows_on_lent_gpus_when_others_free_up():
    """A ring lent where one GPU was idle grows once the cluster frees up (when that pays for
    the restarts, the top-up rule). Before, it kept its first size for life: an 8-GPU job ran
    on 1 GPU for 8 h beside 30 idle GPUs (synthetic many-short jobs on 4x8).
    Mutant caught: lent jobs left out of the top-up (``_lent_below_max`` returns [])."""
    c = parse_spec("1x8")
    dead = SigmoidUtility(1.0, 600.0, float(np.log(49.0)) / 600.0)  # nothing left to earn: never planned
    j = Job("j0", 0.0, "resnet50", 64, job(0, 0.0, 8, 20_000, c).work_samples, 1, 8, dead)
    a = JobState(j, 0, 20_000.0)
    other = JobState(job(1, 0.0, 7, 3600, c), 1, 3600.0)
    n0 = nodes(c, 10_000.0)
    g = Gadget(restart_s=30.0)
    g._ensure(n0, [a, other])
    g.book.commit("j1", Plan([(33, 45, (0,) * 7)], 13_500.0, 1.0, 0.1))  # seven GPUs committed now
    out = g.optimize([a, other], n0, {})
    assert "j0" not in g.plans and out["j0"] == (0,)  # the one idle GPU is lent
    out2 = g.optimize([a], nodes(c, 10_300.0), {"j0": out["j0"]})  # j1 is gone: its GPUs are idle
    assert "j0" not in g.plans and out2["j0"] == (0,) * 8
    slow = Gadget()  # where a restart cannot pay (the world's 10,000 s), it stays as it is
    slow._ensure(n0, [a])
    assert slow.optimize([a], nodes(c, 10_300.0, restart_s=10_000.0), {"j0": (0,)})["j0"] == (0,)


def test_a_planned_job_running_early_on_lent_gpus_grows_on_idle_ones_before_its_plan_starts():
    """A job whose plan starts later runs early where its plan will run it, and a top-up grows it
    on GPUs idle meanwhile, as it grows a job without a plan. Before, only jobs without a plan
    or running their plan could grow: on Pollux's workload 6 (16x4 T4) ImageNet jobs waiting
    for their plans ran on 4 GPUs beside 16 idle ones for 5,900 s with nothing waiting.
    Mutant caught: ``_lent_below_max`` leaving out jobs with a plan (the former rule)."""
    c = parse_spec("1x8")
    a = JobState(job(0, 0.0, 8, 20_000, c), 0, 20_000.0)
    n0 = nodes(c)
    g = Gadget(restart_s=30.0)
    g._ensure(n0, [a])
    g.book.commit("j0", Plan([(20, 220, (0, 0))], 66_000.0, 1.0, 0.1))  # two GPUs from slot 20
    out = g.optimize([a], n0, {})
    assert "j0" in g.plans and out["j0"] == (0,) * 8  # early, at its plan's place, grown on the six idle


def test_a_grown_lent_ring_gives_its_extra_gpus_to_waiting_jobs_first():
    """A job without a plan grown on lent GPUs keeps only its base in the lending phase: the
    GPUs it grew on go to jobs still waiting, and the top-up phase gives it back what they
    leave. Before, the grown ring kept all of them while a newcomer waited (Philly, the first
    20,000 jobs on 64x8: mean JCT 6.90 h against 6.19 h with the rule).
    Mutant caught: ``_base_of`` returning where the job runs (the grown ring)."""
    c = parse_spec("1x8")
    dead = SigmoidUtility(1.0, 600.0, float(np.log(49.0)) / 600.0)  # nothing left to earn: never planned

    def lent_job(i, arrival, gpus, seconds):
        j = Job(f"j{i}", arrival, "resnet50", 64, job(i, arrival, gpus, seconds, c).work_samples, 1, gpus, dead)
        return JobState(j, i, seconds)

    a = lent_job(0, 0.0, 8, 2_000)  # the shorter: first in the lending order
    other = JobState(job(1, 0.0, 7, 3600, c), 1, 3600.0)
    n0 = nodes(c, 10_000.0)
    g = Gadget(restart_s=30.0)
    g._ensure(n0, [a, other])
    g.book.commit("j1", Plan([(33, 45, (0,) * 7)], 13_500.0, 1.0, 0.1))
    out = g.optimize([a, other], n0, {})
    out = g.optimize([a], nodes(c, 10_300.0), {"j0": out["j0"]})
    assert out["j0"] == (0,) * 8  # grown on the GPUs j1 left
    b = lent_job(2, 10_500.0, 4, 20_000)  # a newcomer, longer: after j0 in the order
    out2 = g.optimize([a, b], nodes(c, 10_600.0), {"j0": out["j0"]})
    assert len(out2.get("j2", ())) == 4 and len(out2["j0"]) == 4  # j0 keeps its base and what j2 left


def test_an_adaptive_batch_job_is_not_topped_up_onto_a_ring_that_runs_it_slower():
    """Top-ups (and type upgrades) weigh a ring at what the world credits: an adaptive-batch
    job's goodput at the batches it picks there. BERT asked on 8 T4s, planned on one 4-GPU
    server of 2x4: across both servers its goodput is 39.5 samples/s against 51.6 on one,
    though its throughput at its own batch is higher there. Mutant caught: ``ring_rate`` at the
    throughput of the job's own batch (it is topped up to both servers and ends 25% later)."""
    from ringsched.perfmodel.speed import SpeedModel
    from ringsched.simulator import SimConfig, Simulator
    from ringsched.utility.defaults import jct_utility

    c = parse_spec("2x4,gpu=t4")
    speed = SpeedModel(c)
    j = Job("b", 0.0, "bert_base", 48, 182_799.0, 1, 8, jct_utility(1800.0, 8), requested_gpus=8, adaptive_batch=True)
    one, two = (0,) * 4, (0,) * 4 + (1,) * 4
    assert speed.progress_sps(j, 0.0, two) < 0.8 * speed.progress_sps(j, 0.0, one)
    assert speed.throughput_sps("bert_base", 48, speed.shape(two)) > speed.throughput_sps("bert_base", 48, speed.shape(one))
    seen = []

    class Watching(Gadget):
        def optimize(self, jobs, nodes, previous_allocations):
            out = super().optimize(jobs, nodes, previous_allocations)
            seen.extend(len(out[js.job_id]) for js in jobs if js.job_id in out)
            return out

    r = Simulator([j], c, Watching(), SimConfig(seed=0)).run()
    assert seen and max(seen) == 4
    assert float(r.jobs.jct_s.iloc[0]) < 1.05 * 182_799.0 / speed.progress_sps(j, 0.0, one)


@pytest.mark.parametrize("lookahead", [1, 2])
def test_a_lookahead_under_three_slots_lends(lookahead):
    """With no window between now and the lookahead's end, the idle capacity has no middle rows;
    lending still writes its takings back (``IdleCapacity.assign``) and lends the idle GPUs.
    Mutant caught: assigning the list of no rows into the (0 x servers) array (a ValueError,
    found with ``gadget:lend_lookahead=2`` on the suite's ``syn-1.1``)."""
    c = parse_spec("1x4")
    g = Gadget(lend_lookahead=lookahead, commit_early_runs=False)
    jobs = [JobState(job(i, 0.0, 1, 3600, c), i, 3600.0) for i in range(3)]
    n = nodes(c)
    g._ensure(n, jobs)
    out: dict = {}
    g.lender.lend(jobs, n, 0, out, {}, [])
    assert sorted(out) == ["j0", "j1", "j2"] and sum(len(p) for p in out.values()) <= 4, out
