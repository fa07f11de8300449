"""GADGET's contract (issue 4, design brief section 4): prices rise with utilisation and stay in
their bounds; the greedy embedding keeps a ring on one server when one can host it; strict
admission never admits a job with a non-positive payoff; a committed plan is never broken
(every slot the job holds at least its planned GPUs), also while idle GPUs are lent on top;
top-up lending grows a planned job and gives the GPUs back when a commitment needs them."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.utility.functions import SigmoidUtility
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import JobState, Nodes
from ringsched.policies.gadget.embed import embed
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.policy import Gadget, Oasis, slot_of
from ringsched.policies.gadget.prices import PriceFunction
from ringsched.simulator import SimConfig, Simulator

U = SigmoidUtility(1, 3600, 0.001)


def job(i, arrival, gpus, seconds, cluster, *, lo=1):
    rate = SpeedModel(cluster).throughput_sps("resnet50", 64, consolidated_shape(gpus, int(cluster.gpus.max())))
    return Job(f"j{i}", float(arrival), "resnet50", 64, seconds * rate, lo, gpus, U)


def nodes(cluster, now=0.0, restart_s=30.0):
    return Nodes(cluster, np.ones(cluster.num_servers, dtype=bool), now, 300.0, SpeedModel(cluster), restart_s)


# ------------------------------------------------------------------ prices
@given(L=st.floats(1e-6, 10), ratio=st.floats(1.5, 1e9), zeta=st.floats(0.05, 1.0),
       z=st.lists(st.floats(0, 1), min_size=2, max_size=20))
def test_prices_rise_with_utilisation_and_stay_in_bounds(L, ratio, zeta, z):
    P = PriceFunction(L, L * ratio, zeta)
    zs = np.sort(np.array(z))
    p = P(zs)
    assert P(0.0) == 0.0
    assert np.all(np.diff(p) >= 0)  # rises with usage
    assert np.all(p[zs <= zeta] <= P.U * (1 + 1e-9))  # at most U up to the threshold share
    assert float(P(zeta)) == pytest.approx(P.U, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), S=st.integers(1, 5), slot=st.integers(0, 30), horizon_h=st.floats(0.5, 400.0),
       policy=st.sampled_from([Gadget, Oasis]))
def test_window_prices_stay_within_the_upper_bound(seed, S, slot, horizon_h, policy):
    """What a search pays for one GPU (or a ring's NIC share) in a step of b slots is at most
    b x U / O_s (b x nic_share x U): the price of a full resource, never more."""
    rng = np.random.default_rng(seed)
    c = parse_spec(f"{S}x8")
    g = policy(L=1e-3, U=50.0)
    n = nodes(c, now=slot * 300.0)
    g._ensure(n, [])
    g.ledger.gpu_used[:, :600] = rng.integers(0, 9, size=(S, 600))
    g.ledger.bw_used[:, :600] = rng.choice([0.0, 0.5, 1.0], size=(S, 600))
    g.ledger.front[:] = 600
    win = g.planner.window(n, slot, slot * 300.0 + horizon_h * 3600.0)
    assert np.all(win.gp >= 0) and np.all(win.bp >= 0)
    assert np.all(win.gp <= win.b * g.p.U / c.gpus[:, None] * (1 + 1e-9))
    assert np.all(win.bp <= win.b * g.p.nic_share * g.p.U * (1 + 1e-9))
    full = g.ledger.gpu_used[:, slot:slot + win.b * win.steps].reshape(S, win.steps, win.b).min(axis=2) == 8
    assert np.allclose(win.gp[full], win.b * g.p.U / 8)  # a full step is priced at the bound


def test_committing_a_plan_raises_the_prices_it_uses():
    c = parse_spec("2x8")
    g = Gadget()
    js = JobState(job(0, 0.0, 8, 3600, c), 0, 3600.0)
    out = g.optimize([js], nodes(c), {})
    servers = sorted(set(out["j0"]))
    used = g.ledger.window(0, 1)[0][:, 0]
    p = g.prices_g(used / c.gpus)
    assert all(p[s] > 0 for s in servers) and all(p[s] == 0 for s in range(2) if s not in servers)


# ------------------------------------------------------------------ embedding
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), S=st.integers(1, 8), w=st.integers(1, 8))
def test_greedy_embedding_uses_one_server_when_one_can_host_the_ring_and_respects_nics(seed, S, w):
    """One server (the cheapest that hosts the ring) when one can; else a ring over servers
    with free GPUs and the ring's NIC share free on each; the compiled one-step twin
    (``kernels.embed_one``, the fixed embedding) obeys the same."""
    from ringsched.policies.gadget import kernels

    rng = np.random.default_rng(seed)
    free = rng.integers(0, 9, size=(S, 1))
    gp = rng.uniform(0, 5, size=(S, 1))
    bfree = rng.choice([0.0, 0.5, 1.0], size=(S, 1))
    e = embed(w, free, gp, bfree, np.full((S, 1), 0.7), 0.5)
    fits1, counts1 = kernels.embed_one(w, free[:, 0], gp[:, 0], bfree[:, 0], np.full(S, 0.7), 0.5, True)
    hosts = np.flatnonzero(free[:, 0] >= w)
    room = free[:, 0] * (bfree[:, 0] >= 0.5)
    for ok, counts in ((bool(e.ok[0]), e.counts(0, S) if e.ok[0] else None), (fits1, counts1)):
        if hosts.size:
            assert ok and (counts > 0).sum() == 1
            chosen = int(np.flatnonzero(counts)[0])
            assert gp[chosen, 0] == gp[hosts, 0].min()  # the cheapest server that can host it
        elif room.sum() >= w:
            assert ok and (counts > 0).sum() > 1 and counts.sum() == w
            assert np.all(counts <= room)  # GPUs free, and the NIC share free on every server it crosses
        else:
            assert not ok
    if hosts.size:
        assert e.k[0] == 1 and e.cost[0] == pytest.approx(w * gp[hosts, 0].min())


def brute_cheapest_fewest(w, f, g, n):
    """Every set of fewest servers and every split of w workers over it: the least cost."""
    import itertools

    S = len(f)
    for k in range(1, S + 1):
        best = np.inf
        for T in itertools.combinations([s for s in range(S) if f[s] > 0], k):
            for xs in itertools.product(*[range(1, f[s] + 1) for s in T]):
                if sum(xs) == w:
                    best = min(best, sum(x * g[s] + n[s] for x, s in zip(xs, T)))
        if any(sum(f[s] for s in T) >= w for T in itertools.combinations(range(S), k)):
            return k, best
    return 0, np.inf


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), S=st.integers(2, 7), w=st.integers(2, 12))
def test_multi_server_embedding_is_the_cheapest_over_the_fewest_servers(seed, S, w):
    """No server hosts the ring: the embedding uses the fewest servers possible and, among all
    such sets and splits (brute force), one of least cost; the fixed-embedding kernel agrees."""
    from ringsched.policies.gadget import kernels

    rng = np.random.default_rng(seed)
    f = rng.integers(0, min(w, 5), size=S)  # every server holds fewer than w: a ring must cross
    g = rng.choice([0.0, 0.5, 1.0, 3.0, 10.0], size=S) if seed % 2 else rng.uniform(0, 10, size=S)
    n = rng.uniform(0, 3, size=S)
    k, want = brute_cheapest_fewest(w, f.tolist(), g.tolist(), n.tolist())
    e = embed(w, f[:, None], g[:, None], np.ones((S, 1)), n[:, None], 0.5)
    fits, counts = kernels.embed_one(w, f, g, np.ones(S), n, 0.5, True)
    assert bool(e.ok[0]) == fits == (k > 0)
    if k:
        assert e.k[0] == k and e.cost[0] == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert np.array_equal(e.counts(0, S), counts) and counts.sum() == w and np.all(counts <= f)


def test_multi_server_embedding_prunes_servers_without_losing_the_optimum():
    """Many servers of the same few capacities: the knapsack keeps only k + 1 per capacity and
    per worker count (``fewest.candidates``); the cost must still be the brute-force least."""
    from ringsched.policies.gadget.fewest import candidates, fewest_servers

    rng = np.random.default_rng(11)
    pruned = 0
    for _ in range(25):
        S, w = 10, int(rng.integers(5, 8))
        f = rng.choice([2, 3], size=S)
        g, n = rng.uniform(0, 10, size=S), rng.uniform(0, 3, size=S)
        k, want = brute_cheapest_fewest(w, f.tolist(), g.tolist(), n.tolist())
        pruned += candidates(w, f, g, n, fewest_servers(w, f)).size < S
        e = embed(w, f[:, None], g[:, None], np.ones((S, 1)), n[:, None], 0.5)
        assert e.k[0] == k and e.cost[0] == pytest.approx(want, rel=1e-12)
    assert pruned > 10  # the pruning was exercised


def test_embedding_counterexample_of_the_fullest_first_greedy():
    """Free GPUs [4, 3, 3], prices [h, 1, 1], w = 5: fullest first cost 4h + 1; the cheapest
    pair of servers costs 5 at any h."""
    for h in (10.0, 1e6):
        e = embed(5, np.array([[4], [3], [3]]), np.array([[h], [1.0], [1.0]]), np.ones((3, 1)), np.zeros((3, 1)), 0.5)
        assert e.cost[0] == 5.0 and e.counts(0, 3).tolist() in ([0, 3, 2], [0, 2, 3])


# ------------------------------------------------------------------ admission and commitments
def random_jobs(c, n, seed, spread_s=20_000.0):
    """Elastic (1..g) or, one time in three, rigid jobs of g GPUs, arriving over ``spread_s``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        arrival, g, secs = float(rng.uniform(0, spread_s)), int(rng.integers(1, c.total_gpus + 1)), float(rng.lognormal(7.5, 1))
        out.append(job(i, arrival, g, secs, c, lo=g if rng.integers(3) == 0 else 1))
    return out


class Watched(Gadget):
    """GADGET that checks its own contract around every decision and admission.

    Before each, it snapshots the ledger and every committed plan; after it, each plan must
    survive (same end, same finish, the same shape in every slot from now on: only its own
    reservation may move, ``stay_put`` and ``commit_early_runs``), except plans of jobs that
    finished, fell behind (plan over) or run on a failed server. Every new plan must pay
    (unless the job is behind or, strict, already started); the ledger from now on must be the
    sum of the plans and within every server's GPUs and NIC; what the jobs get must hold their
    committed placements and fit the GPUs and NICs in service (lent GPUs included)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.admitted: list[float] = []
        self.checked = 0
        self.survived = 0
        self.topped_up = 0

    def _snapshot(self):
        return {jid: (list(p.segments), p.last_slot, p.finish_s, p.payoff, p) for jid, p in self.plans.items()}

    def _check_survivors(self, before, slot, nodes, exempt):
        for jid, (segs, last, finish, payoff, obj) in before.items():
            if jid in exempt:
                continue
            now = self.plans.get(jid)
            assert now is not None, f"plan of {jid} released at slot {slot}"
            assert (now.last_slot, now.finish_s, now.payoff) == (last, finish, payoff), f"plan of {jid} replaced"
            old = Plan(segs, finish, payoff, 0.0)
            for t in range(slot, last + 1):
                a, b = old.at(t), now.at(t)
                if a:
                    assert b and nodes.speed.shape(a) == nodes.speed.shape(b), f"plan of {jid} broken at {t}: {a} -> {b}"
            self.survived += 1

    def _check_ledger(self, slot):
        if not self.plans:
            return
        end = max(p.segments[-1][1] for p in self.plans.values())
        if end <= slot:
            return
        used_g, used_b = self.ledger.window(slot, end)
        want_g, want_b = np.zeros_like(used_g, dtype=np.int64), np.zeros_like(used_b)
        for p in self.plans.values():
            for a, z, pl in p.segments:
                if z > slot:
                    counts, bw = self.book.usage(pl)
                    want_g[:, max(a, slot) - slot:z - slot] += counts[:, None]
                    want_b[:, max(a, slot) - slot:z - slot] += bw[:, None]
        np.testing.assert_array_equal(used_g, want_g)
        np.testing.assert_allclose(used_b, want_b, atol=1e-9)
        assert np.all(used_g <= self.ledger.gpus[:, None]), "a server's GPUs are over-committed"
        assert np.all(used_b <= 1 + 1e-9), "a NIC is over-committed"

    def admit(self, j, nodes):
        before = self._snapshot()
        reason = super().admit(j, nodes)
        slot = slot_of(nodes)
        if self.book is not None:
            self._check_survivors(before, slot, nodes, set())
            self._check_ledger(slot)
        if reason is None and self.p.admission == "strict":
            self.admitted.append(self.plans[j.job_id].payoff)
        return reason

    def optimize(self, jobs, nodes, previous_allocations):
        slot = slot_of(nodes)
        before = self._snapshot()
        active = {js.job_id: js for js in jobs}
        behind = {jid for jid, (segs, last, *_ ) in before.items() if last < slot or any(
            not nodes.up[s] for s in set(Plan(segs, 0, 0, 0).at(slot)))}
        out = super().optimize(jobs, nodes, previous_allocations)
        self._check_survivors(before, slot, nodes, behind | (before.keys() - active.keys()))
        for jid, plan in self.plans.items():
            if jid in before and before[jid][4] is plan:
                continue
            must = jid in behind or (self.p.admission == "strict" and active[jid].first_start_s is not None)
            assert must or plan.payoff > 0, f"{jid} admitted at payoff {plan.payoff}"
        self._check_ledger(slot)
        for jid, plan in self.plans.items():
            pl = plan.at(slot)
            if pl:
                got = Counter(out.get(jid, ()))
                assert not (Counter(pl) - got), f"plan of {jid} broken at slot {slot}: {pl} -> {out.get(jid)}"
                self.checked += 1
                self.topped_up += len(out[jid]) > len(pl)
        gpus = np.zeros(nodes.cluster.num_servers, dtype=np.int64)
        nic = np.zeros(nodes.cluster.num_servers)
        for pl in out.values():
            servers = np.unique(np.asarray(pl))
            np.add.at(gpus, np.asarray(pl), 1)
            if self.ring_aware and servers.size > 1:
                nic[servers] += self.p.nic_share
        assert np.all(gpus <= nodes.capacity), f"slot {slot}: more GPUs given than in service"
        assert np.all(nic <= 1 + 1e-9), f"slot {slot}: a NIC carries more rings than it has room for"
        return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 20), seed=st.integers(0, 10_000), spec=st.sampled_from(["2x4", "3x8", "4x2"]),
       admission=st.sampled_from(["deferred", "strict"]), restart_s=st.sampled_from([0.0, 30.0]),
       mtbf_h=st.sampled_from([None, None, 3.0]), spread_s=st.sampled_from([20_000.0, 1_000.0]),
       bound_first=st.booleans())
def test_committed_plans_survive_every_decision_and_admissions_pay(n, seed, spec, admission, restart_s, mtbf_h,
                                                                   spread_s, bound_first):
    c = parse_spec(spec)
    pol = Watched(admission=admission, bound_first=bound_first)
    cfg = SimConfig(restart_s=restart_s, seed=seed, mtbf_h=mtbf_h, mttr_h=0.5)
    r = Simulator(random_jobs(c, n, seed, spread_s), c, pol, cfg).run()
    assert pol.checked > 0 or pol.plans_made == 0  # every committed plan was checked in its slots
    assert all(p > 0 for p in pol.admitted)
    if admission == "strict":  # every job not rejected was admitted through a positive-payoff plan
        assert len(pol.admitted) == int((r.jobs.status != "rejected").sum())
    assert set(r.jobs.status) <= {"completed", "waiting", "rejected"}


def test_the_survival_check_sees_plans_that_persist():
    """The snapshot check is not vacuous: on a contended run many plans outlive a decision."""
    c = parse_spec("3x8")
    pol = Watched()
    Simulator(random_jobs(c, 20, 3), c, pol, SimConfig(seed=3)).run()
    assert pol.survived > 50 and pol.checked > 50


# ------------------------------------------------------------------ top-up lending
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


# ------------------------------------------------------------------ policy specs and --admission
def test_policy_specs_carry_validated_options():
    from ringsched.cli.workload import parse_policies
    from ringsched.errors import InputError
    from ringsched.policies import make_policy
    from ringsched.policies.registry import parse_policy

    assert parse_policy("gadget:admission=strict,pack_slack=100") == ("gadget", {"admission": "strict",
                                                                                 "pack_slack": 100.0})
    g = make_policy("gadget:top_up=false,retry_backoff=3", lend_lookahead=8)
    assert (g.p.top_up, g.p.retry_backoff, g.p.lend_lookahead) == (False, 3, 8)
    assert parse_policies("fifo,gadget:admission=strict,pack_slack=1,oasis") == [
        "fifo", "gadget:admission=strict,pack_slack=1", "oasis"]
    for bad in ("fifo:x=1", "gadget:nope=1", "gadget:pack_slack=abc", "gadget:admission=maybe", "gadget:L",
                "gadget:max_steps=0", "gadget:bounds=thoery", "gadget:L=5,U=1", "gadget:zeta=0", "gadget:zeta=1.5",
                "gadget:tail_utility=1", "gadget:retry_every=0", "gadget:max_plans_per_slot=0",
                "gadget:lend_lookahead=0", "gadget:retry_backoff=-1", "gadget:restart_s=-1", "gadget:U=-2",
                "gadget:top_up_gain=-0.1", "gadget:energy_cost_per_gpu_s=-1", "oasis:nic_share=0"):
        with pytest.raises(InputError):
            parse_policy(bad)
    with pytest.raises(InputError, match="did you mean max_steps"):
        parse_policy("gadget:max_step=3")


@pytest.mark.parametrize("spec,says", [("gadget:max_steps=0", "max_steps must be at least 1"),
                                       ("gadget:bounds=thoery", "bounds must be one of"),
                                       ("gadget:max_step=3", "unknown option 'max_step'")])
def test_impossible_policy_options_are_one_clear_line_and_exit_2(cli, spec, says):
    code, _, err = cli("simulate", "--trace", "synthetic:50", "--cluster", "2x8", "--policy", spec)
    assert code == 2 and says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_simulate_admission_strict_rejects_and_names_the_variant(cli):
    code, out, err = cli("simulate", "--trace", "synthetic:60,load=3", "--cluster", "2x8", "--policy", "gadget",
                         "--admission", "strict", "--json")
    assert code == 0, err
    import json

    s = json.loads(out)
    assert s["policy"] == "gadget:admission=strict" and s["rejected"] > 0
    assert s["completed"] + s["rejected"] + s["waiting"] == s["jobs"]
    code, _, err = cli("simulate", "--trace", "synthetic:10", "--cluster", "2x8", "--policy", "fifo", "--admission", "strict")
    assert code == 2 and "takes no options" in err and "Traceback" not in err


def test_retry_backoff_offers_deferred_jobs_less_often():
    """With retry_backoff a deferred job waits retry_every x 2^k slots after k failed offers, so a
    contended run searches fewer plans; every job still ends completed, waiting or rejected.
    Backoff counts slots, so the world decides at slot boundaries only (at events, the extra
    decisions inside a slot offer the jobs whose retry is due there too, with or without it)."""
    from ringsched.cli.workload import load_workload

    wl = load_workload("synthetic:150,load=3", "2x8", vc=None, window=None, limit=None, seed=2, rigid=False)

    class Counting(Gadget):
        searches = 0

        def search(self, *a, **k):
            type(self).searches += 1
            return super().search(*a, **k)

    counts = {}
    for backoff in (0, 4):
        Counting.searches = 0
        pol = Counting(retry_backoff=backoff)
        r = Simulator(wl.jobs, wl.cluster, pol, SimConfig(seed=2, decide_at_events=False)).run()
        assert set(r.jobs.status) <= {"completed", "waiting", "rejected"}
        counts[backoff] = Counting.searches + pol.bound_skips  # offers: searched or ruled out by the bound
    assert counts[4] < 0.9 * counts[0], counts  # (752 -> 632 offers with the dead-last lending order)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), S=st.integers(1, 6), policy=st.sampled_from([Gadget, Oasis]),
       slot=st.integers(0, 5), stay=st.booleans())
def test_payoff_bound_is_never_below_the_search(seed, S, policy, slot, stay):
    """The cheap bound that rules re-offers out must never rule out a plan the search would
    take: on random ledgers its value is at least the payoff of the plan the search finds."""
    rng = np.random.default_rng(seed)
    c = parse_spec(f"{S}x8")
    g = policy()
    n = nodes(c, now=slot * 300.0)
    jobs = [job(i, 0.0, int(rng.choice([1, 2, 4, 8, 16])), float(rng.uniform(600, 40000)), c) for i in range(3)]
    g._ensure(n, [JobState(j, i, j.work_samples) for i, j in enumerate(jobs)])
    g.ledger.gpu_used[:, :200] = rng.integers(0, 9, size=(S, 200))
    g.ledger.bw_used[:, :200] = rng.choice([0.0, 0.5, 1.0], size=(S, 200))
    g.ledger.front[:] = 200  # (written directly, not through add_range: where usage may be nonzero)
    for j in jobs:
        remaining = j.work_samples * float(rng.uniform(0.1, 1.0))
        current = ()
        if stay:
            current = tuple(sorted(rng.integers(0, S, size=min(j.max_workers, 8 * S)).tolist()))
        win = g.planner.window(n, slot, 40 * 3600.0)
        bound = g.bounds.payoff_bounds(j, remaining, n, win).max(initial=-np.inf)
        quick = g.bounds.quick_bound(j, remaining, n, slot, 40 * 3600.0)
        plan = g.search(j, remaining, n, slot, horizon_end_s=40 * 3600.0, current=current, ran_before=stay)
        if plan is not None:
            tol = 1e-9 * max(1.0, abs(plan.payoff))
            assert bound >= plan.payoff - tol
            assert quick >= plan.payoff - tol


def test_payoff_bound_leaves_decisions_unchanged():
    """Skipping the searches the bound rules out changes no decision: same results, fewer searches."""
    from ringsched.cli.workload import load_workload

    wl = load_workload("synthetic:200,load=3", "2x8", vc=None, window=None, limit=None, seed=1, rigid=False)
    runs = {}
    for on in (True, False):
        pol = Gadget(bound_first=on)
        r = Simulator(wl.jobs, wl.cluster, pol, SimConfig(seed=1)).run()
        runs[on] = (r.jobs.to_csv(index=False), pol.bound_skips)
    assert runs[True][0] == runs[False][0]
    assert runs[True][1] > 0 and runs[False][1] == 0


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 600), st.integers(0, 2), st.integers(1, 3),
                              st.sampled_from([1, -1]), st.integers(0, 5000)), max_size=25))
def test_ledger_usage_prefix_follows_every_change(ops):
    """The running usage sums behind the quick bound stay equal to sums recomputed from the
    ledger through commits, releases, growth and queries that move its base."""
    from ringsched.policies.gadget.prices import Ledger

    led = Ledger(np.array([8, 8, 4]), np.ones(3), initial_slots=16)
    for start, length, server, count, sign, query in ops:
        counts = np.zeros(3, dtype=np.int64)
        counts[server] = count
        if sign < 0:  # remove only what is there
            counts = np.minimum(counts, led.window(start, start + length)[0][:, :].min(axis=1))
        led.add_range(start, start + length, counts, np.zeros(3), sign)
        z = led.usage_prefix(query, query + 700)
        used = led.window(query, query + 700)[0] / led.gpus[:, None]
        np.testing.assert_allclose(np.diff(z, axis=1), used, atol=1e-9)


def test_max_rate_is_the_fastest_shape_also_with_a_per_server_overhead():
    """The bounds' rate must beat every shape a plan can take; with a fitted per-server overhead
    the widest spread is not the fastest multi-server shape, so every k has to be tried."""
    from dataclasses import replace

    c = parse_spec("8x8")
    n = nodes(c)
    g = Gadget()
    j = job(0, 0.0, 16, 3600.0, c)
    base = n.speed.params("resnet50")
    n.speed.set_params("resnet50", replace(base, server_overhead_s=0.05, colocation_slowdown=0.01))
    for w in (2, 5, 8, 16):
        shapes = [(w, k, d) for k in range(1, min(w, 8) + 1) for d in range(-(-w // k), min(w, 8) + 1)
                  if (k == 1) == (d == w) and d * k >= w]
        fastest = max(g.planner.plan_rate(n, j, *sh) for sh in shapes)
        assert g.planner.max_rate(n, j, w) >= fastest * (1 - 1e-12), w
        k2 = g.planner.plan_rate(n, j, w, 2, -(-w // 2)) if w > 1 else 0.0
        widest = g.planner.plan_rate(n, j, w, min(w, 8), -(-w // min(w, 8))) if w > 1 else 0.0
        if w >= 8:
            assert k2 > widest  # the case the old rule missed


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


def test_lending_serves_jobs_past_their_utility_horizon_last():
    """Idle jobs get lent GPUs shortest remaining first, except that a job which could not
    finish before its utility horizon even alone from now (nothing left to earn) comes after
    every job that still can: under overload the short jobs die first, and served first they
    took the lent GPUs from the long jobs that can still earn."""
    c = parse_spec("1x8")
    n = nodes(c, now=10_000.0)

    def waiting(i, arrival, seconds, target):
        u = SigmoidUtility(1.0, target, float(np.log(49.0)) / target)  # horizon (2% left): 2 x target
        j = Job(f"j{i}", arrival, "resnet50", 64, job(i, arrival, 8, seconds, c).work_samples, 1, 8, u)
        return JobState(j, i, seconds)

    dead = waiting(0, 0.0, 600, 1800.0)  # horizon at 3,600 s: long past
    long_alive = waiting(1, 9_000.0, 7_200, 21_600.0)
    short_alive = waiting(2, 9_900.0, 300, 1800.0)
    doomed = waiting(3, 7_000.0, 900, 1800.0)  # horizon at 10,600 s: not yet passed, but 900 s of work left
    g = Gadget()
    idle = [dead, long_alive, short_alive, doomed]
    g._ensure(n, idle)
    order = [idle[i].job_id for i in g.lender._order(idle, n)]
    assert order == ["j2", "j1", "j0", "j3"]  # shortest first among the living, then the dead
    n_early = nodes(c, now=0.0)  # at t = 0 all can still earn: plain shortest first
    g = Gadget()
    g._ensure(n_early, idle)
    assert [idle[i].job_id for i in g.lender._order(idle, n_early)] == ["j2", "j0", "j3", "j1"]


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
    g, out = decide()  # the plan starts in slot 6, beyond the lending lookahead (4 slots)
    a, _, pl = g.plans["j0"].segments[0]
    assert a == 6 and out["j0"] == pl
    assert g.ledger.window(0, a)[0].sum() == 0  # the early run stays lent: new plans may take it
    g, out = decide(lend_lookahead=6)  # within the lookahead: committed
    a, _, pl = g.plans["j0"].segments[0]
    assert a == 0 and out["j0"] == pl
    used = g.ledger.window(0, 1)[0][:, 0]
    assert used.sum() == len(pl)  # committed from now on
    # without room in the ledger until the plan starts, nothing is committed early
    g = Gadget(L=1e-3, U=10.0, late_share=0.05)
    g._ensure(nodes(c), [js])
    plan = g.search(j, j.work_samples, nodes(c), 0, horizon_end_s=g._horizon_end(js, nodes(c)))
    start, _, pl = plan.segments[0]
    g.book.commit("j0", plan)
    s = pl[0]
    g.book.commit("jx", Plan([(start - 1, start, (s,) * 8)], 1.0, 1.0, 0.1))  # the slot before the plan: full
    assert start >= 1
    g.book.commit_early_runs({"j0": pl}, 0, nodes(c), 1 << 30)
    assert g.plans["j0"].segments[0][0] == start


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), start=st.integers(0, 20), n=st.integers(1, 30), moving=st.booleans())
def test_ledger_first_overflow_matches_the_whole_check(seed, start, n, moving):
    """``Ledger.first_overflow`` reads only the servers a placement touches; it must find the
    same first slot as checking every server and slot."""
    from ringsched.policies.gadget.prices import Ledger

    rng = np.random.default_rng(seed)
    S = 4
    cap = np.array([8, 8, 4, 8])
    led = Ledger(cap, np.full(S, 1e10), initial_slots=8)
    for _ in range(6):  # random commitments within capacity
        a = int(rng.integers(0, 40))
        z = a + int(rng.integers(1, 20))
        cnt = np.zeros(S, dtype=np.int64)
        cnt[int(rng.integers(0, S))] = int(rng.integers(1, 5))
        bw = (cnt > 0) * float(rng.choice([0.0, 0.5]))
        g, b = led.window(a, z)
        if np.all(g + cnt[:, None] <= cap[:, None]) and np.all(b + bw[:, None] <= 1.0):
            led.add_range(a, z, cnt, bw)
    counts = rng.integers(0, 3, size=S) * (rng.random(S) < 0.5)
    bw = (counts > 0) * 0.5 * (counts.sum() > counts.max())
    end = start + n
    less = None
    g, b = led.window(start, end)
    g, b = g.astype(np.int64), b.copy()
    if moving:
        at = start + int(rng.integers(0, n))
        old = np.zeros(S, dtype=np.int64)
        old[int(np.argmax(counts))] = 4  # where the new usage goes: without removing it, it overflows
        ob = np.zeros(S)
        led.add_range(at, end, old, ob)  # its own reservation, removed again by ``less``
        less = (at, old, ob)
        g, b = led.window(start, end)
        g, b = g.astype(np.int64), b.copy()
        g[:, at - start:] -= old[:, None]
    over = np.any(g + counts[:, None] > cap[:, None], axis=0) | np.any(b + bw[:, None] > 1.0 + 1e-9, axis=0)
    want = start + int(np.argmax(over)) if over.any() else None
    assert led.first_overflow(start, end, counts, bw, cap, less) == want


def test_exact_subroutine_respects_gpu_and_nic_capacity_even_when_prices_are_low():
    """``subroutine=exact`` offers a configuration only where its GPUs are free and the ring's
    NIC share is free on every server it crosses: capacity, not the price, keeps it out (with
    a tiny U no price could)."""
    c = parse_spec("3x4")
    g = Gadget(subroutine="exact", max_per_server=1, L=1e-9, U=1e-6, nic_share=0.5, max_steps=1000,
               work_conserving=False, late_share=0.0, pack_slack=0.0, admission="strict")
    j = Job("j0", 0.0, "resnet50", 64, 50_000.0, 2, 2, U)  # rigid ring of 2 workers, one per server: it crosses
    n = nodes(c)
    g._ensure(n, [j])
    for k in range(2):  # two rings over servers 0 and 1 fill both NICs until slot 10
        g.book.commit(f"r{k}", Plan([(0, 10, (0, 1))], 3000.0, 1.0, 0.0))
    g.book.commit("full", Plan([(0, 6, (2, 2, 2, 2))], 1800.0, 1.0, 0.0))  # server 2's GPUs until slot 6
    plan = g.search(j, j.work_samples, n, 0, horizon_end_s=40 * 300.0)
    assert plan is not None and plan.first_slot >= 10  # every pair of servers has a full NIC before
    g.book.release("r1", 0)  # one NIC share free again on servers 0 and 1; server 2 full until 6
    plan = g.search(j, j.work_samples, n, 0, horizon_end_s=40 * 300.0)
    assert plan.first_slot == 0 and plan.first_placement == (0, 1)
    g.book.release("r0", 0)  # NICs all free; now server 0's GPUs full until slot 4, server 2's until 6
    g.book.commit("full0", Plan([(0, 4, (0, 0, 0, 0))], 1200.0, 1.0, 0.0))
    plan = g.search(j, j.work_samples, n, 0, horizon_end_s=40 * 300.0)
    assert plan.first_slot == 4 and plan.first_placement == (0, 1)


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
