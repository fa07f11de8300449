"""Plans that change GPU type once (``type_switch``; policies/gadget/type_switch.py, docs/theory.md
section 11): the kernel against a step-by-step reference, a plan that starts on the idle slow
type and moves to the fast one when its commitment ends, and the world finishing it then."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ringsched.cluster import load_cluster
from ringsched.job import Job
from ringsched.perfmodel.speed import SpeedModel
from ringsched.policies import JobState, Nodes, make_policy
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.policy import Gadget
from ringsched.policies.gadget.type_switch import switch_plans
from ringsched.simulator import SimConfig, Simulator
from ringsched.utility.functions import SigmoidUtility


def _reference(ca, pa, cb, pb, remaining, starts, step_len, keep, s, m):
    """(finish, cost) of the plan on a in steps s..m-1, on b from m (its first step at ``keep``),
    walked step by step; None where it is not a plan that changes type."""
    ok_a = np.isfinite(ca) & (pa > 0)
    ok_b = np.isfinite(cb) & (pb > 0)
    done, cost = 0.0, 0.0
    for t in range(s, m):
        if not ok_a[t]:
            return None
        done += pa[t]
        cost += ca[t]
    if done >= remaining * (1 - 1e-12):
        return None  # done on a: no change
    for t in range(m, len(ca)):
        if not ok_b[t]:
            return None
        lost = (1 - keep) if t == m else 0.0
        step = pb[t] * (keep if t == m else 1.0)
        cost += cb[t]
        if done + step >= remaining * (1 - 1e-12):
            return starts[t] + min(max(lost + (remaining - done) / pb[t], 0.0), 1.0) * step_len, cost
        done += step
    return None


@pytest.mark.parametrize("seed", range(12))
def test_switch_plans_match_a_step_by_step_walk(seed):
    """Every (start, switch step): valid exactly where the walk finds a plan that changes type,
    with its finish time and cost. Mutants caught: the restart left out of the switch step
    (keep = 1 in the kernel), the restart time not added when the plan ends in the switch step,
    no check that a's work is not done before the switch, no check that b can run in the
    switch step."""
    rng = np.random.default_rng(seed)
    n = 12
    ca, cb = rng.uniform(0, 2, n), rng.uniform(0, 2, n)
    ca[rng.random(n) < 0.05] = np.inf
    cb[rng.random(n) < 0.15] = np.inf
    pa, pb = rng.uniform(1, 4, n), rng.uniform(4, 12, n)
    starts, step_len, keep = 600.0 * np.arange(n), 600.0, 0.8
    remaining = float(rng.uniform(8, 30))
    valid, end, finish, total = switch_plans(ca, pa, cb, pb, remaining, starts, step_len, keep)
    found = 0
    for s in range(n):
        for m in range(n):
            ref = _reference(ca, pa, cb, pb, remaining, starts, step_len, keep, s, m) if m > s else None
            assert valid[s, m] == (ref is not None), (s, m)
            if ref is not None:
                found += 1
                assert finish[s, m] == pytest.approx(ref[0], rel=1e-12)
                assert total[s, m] == pytest.approx(ref[1], rel=1e-12)
                assert starts[end[s, m]] <= finish[s, m] <= starts[end[s, m]] + step_len
    assert found > 5


def _cluster(tmp_path, groups: str):
    f = tmp_path / "c.yaml"
    f.write_text("servers:\n" + groups)
    return load_cluster(str(f))


def _two_types(tmp_path):
    return _cluster(tmp_path, "  - {count: 1, gpus: 4, gpu: t4}\n  - {count: 1, gpus: 4}\n")


def _nodes(c):
    """The cluster's speed model and its nodes at t = 0 (300-s slots, 30-s restarts)."""
    sp = SpeedModel(c)
    return sp, Nodes(c, np.ones(c.num_servers, dtype=bool), 0.0, 300.0, sp, 30.0)


def _jobs(sp):
    """A 4-GPU job of a higher priority (so offered first, though longer) that holds the H200
    server for 3 hours, and one arriving with it that needs 1 hour there (10 on the T4 server):
    waiting for the H200 or staying on the T4 both finish later than starting on the T4 and
    moving when the H200 frees up."""
    rate = sp.throughput_sps("resnet50", 64, (4, 1, 4, 1), gpu="h200")
    big = Job("big", 0.0, "resnet50", 64, rate * 3 * 3600, 4, 4, SigmoidUtility(10, 4 * 3600, 0.001), priority=1)
    small = Job("small", 0.0, "resnet50", 64, rate * 3600, 4, 4, SigmoidUtility(1, 6 * 3600, 0.001))
    return big, small


def _gpus(c, plan):
    return [c.servers[pl[0]].gpu for _, _, pl in plan.segments]


def test_the_plan_moves_to_the_fast_type_when_it_frees_up(tmp_path):
    """The H200 server committed for slots [0, 36): with ``type_switch`` the job's plan starts
    now on the T4 and moves to the H200 from the slot the commitment ends, and it pays more
    than the best one-type plan (type_switch=false: wait for the H200)."""
    c = _two_types(tmp_path)
    sp, nodes = _nodes(c)
    big, small = _jobs(sp)
    plans = {}
    for switch in (True, False):
        pol = Gadget(type_switch=switch)
        pol._ensure(nodes, [JobState(big, 0, 0.0), JobState(small, 1, 0.0)])
        pol.book.commit("big", Plan([(0, 36, (1, 1, 1, 1))], 10800.0, 1.0, 0.0))
        plans[switch] = pol.search(small, small.work_samples, nodes, 0, horizon_end_s=86400.0)
    moved, waited = plans[True], plans[False]
    assert _gpus(c, waited) == ["h200"] and waited.first_slot >= 36
    assert _gpus(c, moved)[0] == "t4" and _gpus(c, moved)[-1] == "h200"
    assert moved.first_slot == 0 and moved.segments[-1][0] >= 36  # (the H200 from when it is free)
    assert moved.payoff > waited.payoff and moved.finish_s < waited.finish_s


class _Plans:
    """A policy wrapper that keeps each job's first committed plan."""

    def __init__(self, inner):
        self.inner = inner
        self.first: dict[str, Plan] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def optimize(self, jobs, nodes, previous):
        out = self.inner.optimize(jobs, nodes, previous)
        for jid, plan in self.inner.plans.items():
            self.first.setdefault(jid, Plan(list(plan.segments), plan.finish_s, plan.payoff, plan.cost))
        return out


def test_the_world_moves_the_job_and_finishes_it_when_the_plan_said(tmp_path):
    """The simulator runs the plan that changes type: one restart (at the move, charged as the
    plan charged it) and the finish the plan predicted. Without lending, nothing else moves it.
    Mutants caught: ``stay_put`` moving the H200 segment back onto the T4 servers (same shape,
    no type check: the job stays slow); the restart not charged in the plan (the world finishes
    30 s later than the plan)."""
    c = _two_types(tmp_path)
    big, small = _jobs(SpeedModel(c))
    pol = _Plans(make_policy("gadget:type_switch=true,work_conserving=false"))
    r = Simulator([big, small], c, pol, SimConfig(slot_s=300.0, seed=0, restart_s=30.0)).run()
    plan = pol.first["small"]
    assert _gpus(c, plan)[0] == "t4" and _gpus(c, plan)[-1] == "h200"
    row = r.jobs.set_index("job_id").loc["small"]
    assert row.status == "completed" and row.restarts == 1
    assert row.finish_s == pytest.approx(plan.finish_s, abs=1e-6)
    moves = r.changes[r.changes.job_id == "small"]
    assert [c.servers[int(p.split()[0])].gpu for p in moves.placement if p] == ["t4", "h200"]


def test_a_segment_is_not_moved_onto_another_type(tmp_path):
    """A planned job running on lent GPUs in a placement of its plan's shape: ``stay_put`` and
    ``commit_early_runs`` move its segment there when it is of the plan's GPU type, and not when
    it is of another (the job would run at the other type's speed, not the plan's). Mutants
    caught: either type check removed."""
    f = tmp_path / "c4.yaml"
    f.write_text("servers:\n  - {count: 2, gpus: 4, gpu: t4}\n  - {count: 2, gpus: 4}\n")
    c = load_cluster(str(f))
    nodes = Nodes(c, np.ones(c.num_servers, dtype=bool), 0.0, 300.0, SpeedModel(c), 30.0)
    planned = (2, 2, 2, 2)  # an H200 server
    for lent, moves in (((0, 0, 0, 0), False), ((3, 3, 3, 3), True)):
        early, now = Gadget(L=1.0, U=10.0), Gadget(L=1.0, U=10.0)
        for pol in (early, now):
            pol._ensure(nodes, [])
        early.book.commit("j", Plan([(2, 10, planned)], 3000.0, 1.0, 0.0))
        early.book.commit_early_runs({"j": lent}, 0, nodes, 4)
        assert early.book.plans["j"].segments[0] == ((0, 10, lent) if moves else (2, 10, planned))
        now.book.commit("j", Plan([(0, 5, (1, 1, 1, 1)), (5, 10, planned)], 3000.0, 1.0, 0.0))
        assert now.book.stay_put(now.book.plans["j"], 5, lent, nodes) == (lent if moves else planned)


def _lent(pol, js, nodes, out, previous=None):
    pol.lender.lend([js], nodes, 0, out, previous or {}, [])
    return out[js.job_id]


def test_a_job_planned_on_the_slow_type_is_lent_idle_fast_gpus(tmp_path):
    """``type_upgrade``: a job running its plan on the T4 server is lent the idle H200 server for
    the slot (same workers; its commitment untouched), and keeps it while it stays idle; not
    when the H200 is committed within the lending lookahead, nor when the job runs and is nearly
    done (a restart cannot pay; one that starts now moves), nor with the option off, nor onto a
    slower type. Mutants caught: the gain check left out (onto the slower type); GPUs idle now
    but committed within the lookahead taken; no nearly-done check; the nearly-done check, or
    ``lend_gain``'s restart to move, for a job that starts now too; no backfilled upgrade (a job done before the H200's commitment
    stays on T4); an earlier upgrade not kept; an earlier run on a slower type kept."""
    c = _two_types(tmp_path)
    sp, nodes = _nodes(c)
    t4, h200 = (0, 0, 0, 0), (1, 1, 1, 1)
    big, small = _jobs(sp)

    def planned(work=small.work_samples, h200_from=None, **opts):
        pol = Gadget(L=1.0, U=10.0, **opts)
        pol._ensure(nodes, [])
        pol.book.commit("small", Plan([(0, 40, t4)], 12000.0, 1.0, 0.0))
        if h200_from is not None:
            pol.book.commit("big", Plan([(h200_from, 40, h200)], 12000.0, 1.0, 0.0))
        js = JobState(dataclasses.replace(small, work_samples=work), 1, 0.0)
        js.status = "active"
        return pol, js

    pol, js = planned()
    assert _lent(pol, js, nodes, {"small": t4}) == h200
    assert pol.book.plans["small"].segments == [(0, 40, t4)]
    pol, js = planned(h200_from=1)  # idle in this slot only
    assert _lent(pol, js, nodes, {"small": t4}) == t4
    assert _lent(pol, js, nodes, {"small": t4}, {"small": h200}) == h200  # (upgraded before: kept while idle now)
    minute = sp.throughput_sps("resnet50", 64, (4, 1, 4, 1), gpu="t4") * 60.0
    pol, js = planned(work=minute)  # a minute left, running on the T4s: a restart cannot pay
    assert _lent(pol, js, nodes, {"small": t4}, {"small": t4}) == t4
    # 20 s of work on the T4s, starting now: it pays a restart on either, so it moves (charged a
    # restart to move, as a running job is, it would lose time)
    pol, js = planned(work=minute / 3)
    assert _lent(pol, js, nodes, {"small": t4}) == h200
    pol, js = planned(work=minute / 3, upgrade_starts=False)
    assert _lent(pol, js, nodes, {"small": t4}) == t4
    # the H200 server committed from slot 2: a job done on it well within that is backfilled
    # there (its GPUs need not stay idle over the whole lookahead); the 12,000 s job is not
    pol, js = planned(work=minute, h200_from=2)
    assert _lent(pol, js, nodes, {"small": t4}) == h200
    pol, js = planned(h200_from=2)
    assert _lent(pol, js, nodes, {"small": t4}) == t4
    pol, js = planned(type_upgrade=False)
    assert _lent(pol, js, nodes, {"small": t4}) == t4
    pol, js = planned()  # on the fast type, idle slow GPUs are no gain
    pol.book.release("small", 0)
    pol.book.commit("small", Plan([(0, 40, h200)], 12000.0, 1.0, 0.0))
    assert _lent(pol, js, nodes, {"small": h200}) == h200
    assert _lent(pol, js, nodes, {"small": h200}, {"small": t4}) == h200  # (ran on lent T4s before: not kept)


def test_a_job_running_early_on_its_slow_plan_is_lent_idle_fast_gpus(tmp_path):
    """A planned job that runs before its plan starts (a late start), on the plan's T4 servers,
    is lent the idle H200 server like a job running its plan (``upgrade_lent``): jobs of
    seconds on H200 planned onto T4s ran there for minutes. Mutant caught: early runs left out
    of ``upgrade`` (as lent on top of a plan)."""
    c = _two_types(tmp_path)
    sp, nodes = _nodes(c)
    t4, h200 = (0, 0, 0, 0), (1, 1, 1, 1)
    _, small = _jobs(sp)
    for opts, where in (({}, h200), ({"upgrade_lent": False}, t4)):
        pol = Gadget(L=1.0, U=10.0, **opts)
        pol._ensure(nodes, [])
        pol.book.commit("small", Plan([(3, 40, t4)], 12000.0, 1.0, 0.0))  # starts in slot 3
        js = JobState(small, 1, 0.0)
        js.status = "active"
        assert _lent(pol, js, nodes, {"small": t4}) == where


def test_start_gain_charges_a_job_that_starts_now_no_restart_to_move():
    """``gain.start_gain``: done while lent, the time saved over the time on the planned ring,
    both with a restart; past the window, the progress there less one restart to move back;
    a window no longer than a restart gains nothing. Mutants caught: ``lend_gain`` in its place
    (a restart to move charged), the move back left out, no guard (a window shorter than a
    restart turned a slower ring into a gain)."""
    from ringsched.policies.gadget.gain import lend_gain, start_gain

    assert start_gain(1.0, 4.0, 400.0, 30.0, 1200.0) == pytest.approx((430.0 - 130.0) / 430.0)
    assert lend_gain(1.0, 4.0, 400.0, 30.0, 1200.0) < start_gain(1.0, 4.0, 400.0, 30.0, 1200.0)
    assert start_gain(1.0, 2.0, 1e6, 30.0, 1200.0) == pytest.approx((2.0 * 1170.0 - 30.0) / 1170.0 - 1.0)
    assert start_gain(1.0, 0.5, 1e6, 30.0, 20.0) == -1.0
    assert start_gain(1.0, 2.0, 1e6, 30.0, 30.0) == -1.0


def _three_servers(tmp_path):
    return _cluster(tmp_path, "  - {count: 1, gpus: 4, gpu: t4}\n  - {count: 2, gpus: 8}\n")


def test_a_backfilled_upgrade_takes_the_server_that_stays_idle_until_the_job_ends(tmp_path):
    """A 4-GPU job planned on the T4 server from now, done in about a slot and a half on H200:
    H200 server 1 is committed whole from slot 1; server 2 has 2 GPUs committed from slot 1 and
    all 8 from slot 3. It is backfilled onto server 2, which stays idle enough for the two slots
    it needs, and server 2's windows of 1-4 slots go from 8, 6, 6, 0 idle GPUs to 4, 2, 2, 0.
    Mutants caught: the ring chosen on GPUs idle now only (server 1, taken back before the job
    ends); only this slot taken (4, 4, 4, 0); the whole lookahead taken (4, 2, 2, -4)."""
    c = _three_servers(tmp_path)
    sp, nodes = _nodes(c)
    rate = sp.throughput_sps("resnet50", 64, (4, 1, 4, 1), gpu="h200")
    job = Job("j", 0.0, "resnet50", 64, rate * 400.0, 4, 4, SigmoidUtility(1, 6 * 3600, 0.001))
    pol = Gadget(L=1.0, U=10.0)
    pol._ensure(nodes, [])
    pol.book.commit("j", Plan([(0, 40, (0, 0, 0, 0))], 12000.0, 1.0, 0.0))
    pol.book.commit("a", Plan([(1, 40, (1,) * 8)], 12000.0, 1.0, 0.0))
    pol.book.commit("b", Plan([(1, 40, (2, 2))], 12000.0, 1.0, 0.0))
    pol.book.commit("c", Plan([(3, 40, (2,) * 6)], 12000.0, 1.0, 0.0))
    js = JobState(job, 0, 0.0)
    js.status = "active"
    from ringsched.policies.gadget import upgrade as up
    seen = {}
    real = up._idle

    def spy(cap, views):  # server 2's windows at each call: the last one is after the move
        seen.setdefault("w", []).append([int(cap.within(k)[2]) for k in (1, 2, 3, 4)])
        return real(cap, views)

    up._idle = spy
    try:
        assert _lent(pol, js, nodes, {"j": (0, 0, 0, 0)}) == (2, 2, 2, 2)
    finally:
        up._idle = real
    assert seen["w"][0] == [8, 6, 6, 0] and seen["w"][-1] == [4, 2, 2, 0]


def test_an_early_run_kept_on_a_faster_type_leaves_its_plans_gpus_to_others(tmp_path):
    """A planned job whose plan (on the T4 server, from slot 10) has not started runs on the H200
    server, upgraded before; a rigid 8-GPU job waits. Lending keeps the early run where it is
    and the waiting job gets the T4 server. Mutant caught: the early run first given its plan's
    T4 GPUs and moved back by ``upgrade`` (the T4 GPUs booked for nothing, the 8-GPU job left
    waiting)."""
    c = _cluster(tmp_path, "  - {count: 1, gpus: 8, gpu: t4}\n  - {count: 1, gpus: 4}\n")
    sp, nodes = _nodes(c)
    rate = sp.throughput_sps("resnet50", 64, (4, 1, 4, 1), gpu="h200")
    a = JobState(Job("a", 0.0, "resnet50", 64, rate * 600.0, 4, 4, SigmoidUtility(1, 6 * 3600, 0.001)), 0, 0.0)
    b = JobState(Job("b", 0.0, "resnet50", 64, rate * 36000.0, 8, 8, SigmoidUtility(1, 6 * 3600, 0.001)), 1, 0.0)
    for js in (a, b):
        js.status = "active"
    pol = Gadget(L=1.0, U=10.0)
    pol._ensure(nodes, [])
    pol.book.commit("a", Plan([(10, 40, (0, 0, 0, 0))], 12000.0, 1.0, 0.0))
    out: dict = {}
    pol.lender.lend([a, b], nodes, 0, out, {"a": (1, 1, 1, 1)}, [])
    assert out["a"] == (1, 1, 1, 1) and out.get("b") == (0,) * 8
