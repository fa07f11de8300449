"""The baseline policies: each one's characteristic behaviour on hand-made scenarios, and
every registered policy on a random workload (outcomes, arrival order, determinism)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ringsched.cluster.model import parse_spec
from ringsched.embedding import consolidated
from ringsched.job import Job
from ringsched.utility.functions import SigmoidUtility
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import JobState, Nodes, make_policy, policy_names
from ringsched.policies.common import allocate_in_order, allocate_in_order_fast
from ringsched.policies.themis import Themis
from ringsched.policies.tiresias import Tiresias
from ringsched.simulator import SimConfig, Simulator

U = SigmoidUtility(1, 3600, 0.001)


def job(i, arrival, gpus, seconds, cluster, *, tenant="", elastic=False, model="resnet50"):
    """A job that takes ``seconds`` alone at ``gpus`` consolidated on ``cluster``."""
    rate = SpeedModel(cluster).throughput_sps(model, 64, consolidated_shape(gpus, int(cluster.gpus.max())))
    return Job(f"j{i}", float(arrival), model, 64, seconds * rate, 1 if elastic else gpus, gpus, U,
               tenant=tenant)


def run(jobs, cluster, policy, **cfg):
    """The hand-computed scenarios below are stated in the slotted world (decisions at slot
    boundaries only); tests/test_simulator.py covers deciding at events."""
    cfg.setdefault("decide_at_events", False)  # (the default; explicit so a flip of it does not move them)
    pol = make_policy(policy) if isinstance(policy, str) else policy
    return Simulator(jobs, cluster, pol, SimConfig(**cfg)).run().jobs.set_index("job_id")


def state(j, index, cluster, placement=(), **attrs):
    js = JobState(j, index, 1.0)
    js.placement = tuple(placement)
    for k, v in attrs.items():
        setattr(js, k, v)
    return js


def nodes(cluster, now=0.0):
    return Nodes(cluster, np.ones(cluster.num_servers, dtype=bool), now, 300.0, SpeedModel(cluster))


# ------------------------------------------------------------------ Tiresias

def test_tiresias_demotes_a_long_job_so_a_new_short_one_preempts_it():
    c = parse_spec("1x8")
    jobs = [job(0, 0, 8, 3600.0, c), job(1, 1000, 8, 300.0, c)]
    r = run(jobs, c, "tiresias", slot_s=300)
    # j0 crosses 3,200 GPU-s at t=400 (queue 2); j1 arrives in queue 1 and preempts it at 1200
    assert r.loc["j1", "first_start_s"] == 1200.0 and r.loc["j1", "finish_s"] == pytest.approx(1500.0)
    assert r.loc["j0", "preemptions"] == 1
    fifo = run(jobs, c, "fifo", slot_s=300)
    assert fifo.loc["j1", "first_start_s"] >= fifo.loc["j0", "finish_s"]
    # with a threshold the long job never reaches, it stays in the top queue and keeps its GPUs
    high = run(jobs, c, Tiresias(queue_thresholds_gpu_s=(1e9,)), slot_s=300)
    assert high.loc["j0", "preemptions"] == 0


def test_tiresias_promote_knob_brings_a_starved_job_back_to_the_top_queue():
    c = parse_spec("1x8")
    old = state(job(0, 0, 8, 9000.0, c), 0, c, attained_gpu_s=8000.0, first_start_s=0.0,
                last_start_s=0.0, last_stop_s=1000.0, mark_s=1000.0)
    new = state(job(1, 2000, 8, 9000.0, c), 1, c)
    n = nodes(c, now=1000.0 + 4 * 1000.0)  # waited 4x its last run (1,000 s)
    assert Tiresias(promote_knob=8).optimize([old, new], n, {}) == {"j1": (0,) * 8}
    assert Tiresias(promote_knob=2).optimize([old, new], n, {}) == {"j0": (0,) * 8}
    assert old.extra  # its service counter restarted at the promotion


def test_tiresias_skipping_unchanged_decisions_gives_the_same_schedule():
    class FromScratch(Tiresias):  # rebuilds its order and answers at every decision
        def optimize(self, jobs, nodes, previous_allocations):
            self._last = None
            return super().optimize(jobs, nodes, previous_allocations)

    c = parse_spec("4x8")
    for seed, kw, cfg in ((5, {"promote_knob": 2}, {}),
                          (6, {"queue_thresholds_gpu_s": (600.0, 3000.0), "promote_knob": 1},
                           {"mtbf_h": 10.0, "mttr_h": 1.0, "contention": True})):
        jobs = random_jobs(c, 80, seed=seed)
        a = run(jobs, c, Tiresias(**kw), slot_s=120, **cfg)
        b = run(jobs, c, FromScratch(**kw), slot_s=120, **cfg)
        pd.testing.assert_frame_equal(a, b)
        assert a.preemptions.sum() > 0


# ------------------------------------------------------------------ SRTF / SJF-BCO

def test_srtf_and_sjf_bco_serve_the_shortest_first_and_only_srtf_preempts():
    c = parse_spec("1x8")
    jobs = [job(0, 0, 8, 3000.0, c), job(1, 0, 8, 1000.0, c), job(2, 0, 8, 2000.0, c)]
    for name in ("srtf", "sjf-bco"):
        r = run(jobs, c, name, slot_s=100, restart_s=0)
        assert list(r.sort_values("first_start_s").index) == ["j1", "j2", "j0"], name
    fifo = run(jobs, c, "fifo", slot_s=100, restart_s=0)
    assert list(fifo.sort_values("first_start_s").index) == ["j0", "j1", "j2"]
    late = [job(0, 0, 8, 3000.0, c), job(1, 500, 8, 100.0, c)]
    assert run(late, c, "srtf", slot_s=100).loc["j0", "preemptions"] == 1
    bco = run(late, c, "sjf-bco", slot_s=100)
    assert bco.loc["j0", "preemptions"] == 0 and bco.loc["j1", "first_start_s"] >= bco.loc["j0", "finish_s"]


def test_sjf_bco_puts_a_new_ring_on_nics_no_other_ring_uses():
    c = parse_spec("4x8")
    ring = state(job(0, 0, 2, 5000.0, c), 0, c, placement=(0, 1))  # a ring over servers 0, 1
    k2 = state(job(1, 0, 4, 5000.0, c), 1, c, placement=(2,) * 4)
    k3 = state(job(2, 0, 4, 5000.0, c), 2, c, placement=(3,) * 4)
    new = state(job(3, 0, 8, 1000.0, c), 3, c)  # free: 7, 7, 4, 4 -> must cross servers
    prev = {js.job_id: js.placement for js in (ring, k2, k3)}
    out = make_policy("sjf-bco").optimize([ring, k2, k3, new], nodes(c), prev)
    assert out["j3"] == (2, 2, 2, 2, 3, 3, 3, 3)  # not the contended NICs of servers 0, 1
    assert {k: out[k] for k in prev} == prev
    # consolidated placement (what the other rigid baselines use) takes the fullest servers
    assert make_policy("srtf").optimize([ring, k2, k3, new], nodes(c), prev)["j3"] == (0,) * 7 + (1,)


def test_sjf_bco_spreads_cross_server_rings_over_distinct_nics():
    c = parse_spec("6x8")
    jobs = [job(i, 0, 12, 2000.0 + i, c) for i in range(3)]
    r = Simulator(jobs, c, make_policy("sjf-bco"), SimConfig()).run()
    first = r.changes[r.changes.t_s == 0.0]
    servers = [set(map(int, p.split())) for p in first.placement]
    assert len(servers) == 3 and all(len(s) == 2 for s in servers)
    assert len(set().union(*servers)) == 6  # no NIC carries two rings


# ------------------------------------------------------------------ DRF

def test_drf_balances_two_tenants():
    c = parse_spec("2x8")
    jobs = ([job(i, 0, 1, 20000.0, c, tenant="a") for i in range(16)]
            + [job(16 + i, 200, 1, 20000.0, c, tenant="b") for i in range(16)])
    r = run(jobs, c, "drf", slot_s=300)
    b_started = r[(r.tenant == "b") & (r.first_start_s == 300.0)]
    assert len(b_started) == 8  # at t=300, b gets half the GPUs back from a
    assert r[r.tenant == "a"].preemptions.sum() == 8
    fifo = run(jobs, c, "fifo", slot_s=300)
    assert (fifo[fifo.tenant == "b"].first_start_s > 300).all()


def test_drf_counts_nic_share_of_cross_server_rings():
    c = parse_spec("4x8")
    a1 = state(job(0, 0, 2, 9000.0, c, tenant="a"), 0, c, placement=(0, 1))  # GPU 2/32, NIC 2/4
    b1 = state(job(1, 1, 8, 9000.0, c, tenant="b"), 1, c, placement=(2,) * 8)  # GPU 8/32, NIC 0
    a2 = state(job(2, 2, 16, 9000.0, c, tenant="a"), 2, c)
    b2 = state(job(3, 3, 16, 9000.0, c, tenant="b"), 3, c)
    prev = {"j0": a1.placement, "j1": b1.placement}
    out = make_policy("drf").optimize([a1, b1, a2, b2], nodes(c), prev)
    # a's dominant share is its NIC share (0.5) > b's 0.25: b's next job goes first
    assert set(out) == {"j0", "j1", "j3"}
    assert out["j0"] == (0, 1) and out["j1"] == (2,) * 8


# ------------------------------------------------------------------ Optimus

def test_optimus_gives_more_workers_to_the_larger_gain_and_uses_every_gpu():
    c = parse_spec("2x8")
    jobs = [job(0, 0, 16, 4000.0, c, elastic=True), job(1, 0, 16, 1000.0, c, elastic=True)]
    out = make_policy("optimus").optimize([state(j, i, c) for i, j in enumerate(jobs)], nodes(c), {})
    assert len(out["j0"]) > len(out["j1"]) >= 1
    assert len(out["j0"]) + len(out["j1"]) == 16
    r = run(jobs, c, "optimus", slot_s=300)
    assert (r.status == "completed").all()


def test_optimus_keeps_unchanged_jobs_in_place_and_admits_by_min_workers():
    c = parse_spec("2x8")
    a = state(job(0, 0, 8, 4000.0, c), 0, c, placement=(1,) * 8)  # rigid: stays 8
    b = state(job(1, 0, 8, 4000.0, c), 1, c)
    out = make_policy("optimus").optimize([a, b], nodes(c), {"j0": a.placement})
    assert out == {"j0": (1,) * 8, "j1": (0,) * 8}
    big = Job("x", 0.0, "resnet50", 64, 1e6, 2, 64, U)
    assert make_policy("optimus").admit(big, nodes(c)) is None
    assert make_policy("optimus").admit(Job("y", 0.0, "resnet50", 64, 1e6, 17, 64, U), nodes(c))


def test_optimus_allocation_is_the_one_worker_at_a_time_greedy():
    """The heap (with batching) gives exactly the textbook greedy: each step, one worker to
    the job with the largest positive gain (ties by arrival), from min_workers up."""
    rng = np.random.default_rng(9)
    models = ["resnet50", "vgg16", "bert_base", "alexnet", "ncf"]
    for trial in range(40):
        c = parse_spec(str(rng.choice(["2x8", "4x8", "3x4"])))
        n = nodes(c, now=float(rng.uniform(0, 1000)))
        states = []
        for i in range(int(rng.integers(1, 9))):
            hi = int(rng.integers(1, 2 * c.total_gpus // 3 + 1))
            j = Job(f"j{i}", float(rng.integers(0, 3)), str(rng.choice(models)), 64,
                    float(rng.uniform(1e5, 1e8)), int(rng.integers(1, hi + 1)), hi, U)
            states.append(state(j, i, c))
        budget, want = int(c.total_gpus), {}
        for js in sorted(states, key=lambda s: (s.job.arrival_s, s.index)):
            if js.job.min_workers <= budget:
                want[js.job_id], budget = js.job.min_workers, budget - js.job.min_workers
        while budget > 0:
            best = None
            for js in states:
                w = want.get(js.job_id)
                if w is None or w >= js.job.max_workers:
                    continue
                rem = js.remaining_at(n.now_s)
                gain = rem / n.throughput_sps(js, w) - rem / n.throughput_sps(js, w + 1)
                key = (-gain, js.job.arrival_s, js.index)
                if gain > 0 and (best is None or key < best[0]):
                    best = (key, js.job_id)
            if best is None:
                break
            want[best[1]] += 1
            budget -= 1
        out = make_policy("optimus").optimize(states, n, {})
        assert {jid: len(p) for jid, p in out.items()} == want, trial


# ------------------------------------------------------------------ Themis

def test_themis_serves_the_worst_rho_job_first():
    c = parse_spec("1x8")
    jobs = [job(0, 0, 8, 3000.0, c), job(1, 0, 8, 10000.0, c), job(2, 100, 8, 300.0, c)]
    r = run(jobs, c, "themis", slot_s=300)
    # at t=300 the short j2 has by far the worst rho (it would finish 1.7x later than alone)
    assert r.loc["j2", "first_start_s"] == 300.0
    ch = Simulator(jobs, c, make_policy("themis"), SimConfig(slot_s=300)).run().changes
    assert ch[ch.t_s == 300.0].set_index("job_id").placement.to_dict() == {"j0": "", "j2": "0 0 0 0 0 0 0 0"}
    # with f = 1 nobody bids: running jobs renew their leases and j2 waits its turn
    calm = run(jobs, c, make_policy("themis", fairness_knob=1.0), slot_s=300)
    assert calm.loc["j0", "preemptions"] == 0 and calm.loc["j2", "first_start_s"] > 300.0


def test_themis_skipping_quiet_leases_gives_the_same_schedule():
    class Unheld(Themis):
        def optimize(self, jobs, nodes, previous_allocations):
            self._hold = None
            return super().optimize(jobs, nodes, previous_allocations)

    c = parse_spec("4x8")
    for seed, kw in ((3, {}), (3, {"lease_s": 900.0}), (4, {"lease_s": 450.0, "fairness_knob": 0.5})):
        jobs = random_jobs(c, 80, seed=seed)
        a = run(jobs, c, Themis(**kw), slot_s=300)
        b = run(jobs, c, Unheld(**kw), slot_s=300)
        pd.testing.assert_frame_equal(a, b)


def test_themis_rho_is_finish_time_over_isolated_time():
    c = parse_spec("2x8")
    sp = SpeedModel(c)
    j = job(0, 100, 8, 1000.0, c)
    js = state(j, 0, c, placement=(0,) * 4 + (1,) * 4, done_samples=j.work_samples / 4, mark_s=400.0,
               rate_sps=0.9 * sp.throughput_sps("resnet50", 64, (8, 2, 4, 1)), run_from_s=430.0)
    js.isolated_s = 800.0
    pol = make_policy("themis")
    rate = sp.throughput_sps("resnet50", 64, sp.shape(js.placement))
    for now in (400.0, 420.0, 430.0, 900.0, 1234.5):
        want = ((now - 100) + js.remaining_at(now) / rate) / 800.0
        assert pol.rho(js, Nodes(c, np.ones(2, dtype=bool), now, 300.0, sp)) == pytest.approx(want, rel=1e-12)
    waiting = state(job(1, 50, 8, 1000.0, c), 1, c)
    waiting.isolated_s = 1000.0
    assert pol.rho(waiting, nodes(c, now=550.0)) == pytest.approx((500.0 + 1000.0) / 1000.0)


# ------------------------------------------------------------------ shared helpers

def test_allocate_in_order_fast_equals_allocate_in_order():
    rng = np.random.default_rng(7)
    for trial in range(300):
        c = parse_spec(rng.choice(["4x8", "3x4", "6x8,racks=2", "5x2"]))
        n = nodes(c)
        n.up = rng.random(c.num_servers) > 0.15
        free = n.capacity.copy()
        states, prev = [], {}
        for i in range(int(rng.integers(1, 14))):
            w = int(rng.choice([1, 2, 3, 4, 8, 12]))
            js = state(job(i, float(rng.integers(0, 5)), w, 100.0, c), i, c)
            states.append(js)
            if rng.random() < 0.5 and w <= free.sum():  # a valid previous placement
                p = consolidated(w, free, None)
                np.subtract.at(free, list(p), 1)
                prev[js.job_id] = p
        rng.shuffle(states)
        order = [(js, int(rng.choice([0, js.job.requested_gpus, js.job.requested_gpus, 1]))) for js in states]
        for pre in (True, False):
            for back in (True, False):
                kw = dict(preemptive=pre, backfill=back)
                want = allocate_in_order(order, n, prev, **kw)
                assert allocate_in_order_fast(order, n, prev, **kw) == want, (trial, kw)
                assert allocate_in_order_fast(iter(order), n, prev, **kw) == want, (trial, kw)


# ------------------------------------------------------------------ every policy

def random_jobs(c, n, seed, span_s=6 * 3600):
    rng = np.random.default_rng(seed)
    return [job(i, float(rng.uniform(0, span_s)), int(rng.choice([1, 1, 1, 2, 4, 8, 16, 40])),
                float(rng.lognormal(7.5, 1.2)), c, tenant=str(rng.choice(["a", "b", "c", ""])),
                elastic=bool(rng.random() < 0.3))
            for i in range(n)]


@pytest.mark.parametrize("name", ["tiresias", "themis", "optimus"])
def test_a_policy_instance_can_be_run_twice(name):
    c = parse_spec("2x8")
    jobs = random_jobs(c, 40, seed=8)
    pol = make_policy(name)
    first = run(jobs, c, pol, slot_s=300)
    pd.testing.assert_frame_equal(run(jobs, c, pol, slot_s=300), first)


@pytest.mark.parametrize("name", policy_names())
def test_every_policy_on_a_random_workload(name):
    c = parse_spec("4x8")
    jobs = random_jobs(c, 200, seed=11, span_s=24 * 3600)
    cfg = dict(slot_s=600, mtbf_h=48.0, mttr_h=1.0, contention=True, seed=2, decide_at_events=True)
    r = run(jobs, c, name, **cfg)
    assert len(r) == 200 and set(r.status) <= {"completed", "waiting", "rejected"}
    too_big = (r.requested_gpus if make_policy(name).rigid else r.min_workers) > 32
    assert (r.status == "rejected").tolist() == too_big.tolist()  # only the 40-GPU ones
    done = r[r.status == "completed"]
    assert len(done) == (~too_big).sum()
    assert np.allclose(done.done_samples, done.work_samples)
    started = r[r.first_start_s.notna()]
    assert (started.first_start_s >= started.arrival_s).all()
    pd.testing.assert_frame_equal(r, run(jobs, c, name, **cfg))


# ------------------------------------------------------------------ FIFO, strict FIFO, SRTF re-placement

def test_fifo_backfills_and_fifo_strict_blocks_behind_the_head():
    c = parse_spec("1x8")
    jobs = [job(0, 0, 6, 3000.0, c), job(1, 10, 4, 1000.0, c), job(2, 20, 2, 500.0, c)]
    back = run(jobs, c, "fifo", slot_s=300)
    strict = run(jobs, c, "fifo-strict", slot_s=300)
    # j1 (4 GPUs) does not fit beside j0 (6 of 8); j2 (2 GPUs) does
    assert back.loc["j2", "first_start_s"] == 300.0 and back.loc["j2", "first_start_s"] < back.loc["j1", "first_start_s"]
    assert strict.loc["j2", "first_start_s"] >= strict.loc["j1", "first_start_s"] >= strict.loc["j0", "finish_s"] - 1e-9
    assert (back.preemptions == 0).all() and (strict.preemptions == 0).all()


def test_srtf_moves_a_fragmented_ring_onto_fewer_servers_when_room_appears():
    c = parse_spec("2x8")
    spread = state(job(0, 0, 8, 5000.0, c), 0, c, placement=(0, 0, 0, 0, 1, 1, 1, 1))
    out = make_policy("srtf").optimize([spread], nodes(c), {"j0": spread.placement})
    assert out["j0"] in ((0,) * 8, (1,) * 8)
    # with no room for a better placement it keeps its servers (a move costs a restart)
    other = state(job(1, 0, 4, 9000.0, c), 1, c, placement=(0, 0, 0, 0))
    other2 = state(job(2, 0, 4, 9000.0, c), 2, c, placement=(1, 1, 1, 1))
    prev = {"j0": spread.placement, "j1": other.placement, "j2": other2.placement}
    out = make_policy("srtf").optimize([spread, other, other2], nodes(c), prev)
    assert out == prev
