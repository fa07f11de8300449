"""The reservation against starvation (``GadgetParams.reserve_wide``, ``reserve.reservation``):
the first job with nothing left to earn that needs more than one GPU, neither runs nor has a
plan, is planned at any payoff, one at a time, so the GPUs it needs are reserved in the ledger
(which lending leaves alone) instead of being lent to each newcomer first."""

from __future__ import annotations

from ringsched.cluster.model import parse_spec
from ringsched.policies import JobState
from ringsched.policies.gadget.policy import Gadget
from ringsched.policies.gadget.reserve import reservation
from ringsched.simulator import SimConfig, Simulator
from test_gadget import nodes
from test_gadget_on_time import rigid, sigmoid


def stream(c):
    """1x8: an 8-GPU rigid job of 30 min with nothing left to earn from the start, beside a
    stream of 1-GPU jobs of an hour, one every 7.5 min. At these prices (L = 1 per GPU-slot,
    against a value of 1) few of them are ever planned (6 of 40): the others run on lent GPUs,
    live jobs before the wide one, and one of them always runs."""
    wide = rigid("wide", 0.0, 8, 1_800.0, c, sigmoid(1.0, 10.0))
    small = [rigid(f"s{i}", 450.0 * i, 1, 3_600.0, c, sigmoid(1.0, 36_000.0)) for i in range(40)]
    return [wide] + small


def wide_jct(**options) -> float:
    c = parse_spec("1x8")
    r = Simulator(stream(c), c, Gadget(L=1.0, U=100.0, **options), SimConfig(seed=0)).run()
    assert (r.jobs.status == "completed").all()
    return float(r.jobs.set_index("job_id").jct_s["wide"])


def test_a_wide_job_with_nothing_left_to_earn_is_not_starved_by_jobs_on_lent_gpus():
    """Without the reservation the wide job waits for the whole stream (its 8 GPUs are never
    idle at once); with it, it is planned once it has waited its own time alone (30 min). Mutant
    caught: the reservation off (its plan never made)."""
    assert wide_jct(reserve_wide=False) > 15_000.0
    assert wide_jct() < 10_000.0  # (7,200 s against 22,950 s)


def test_one_reservation_at_a_time_for_the_first_wide_waiting_job():
    """Of two wide dead jobs only the first (by arrival) is planned; a dead 1-GPU job (lent as
    soon as one GPU is idle), a job that runs and one that has waited less than its time alone
    are never reserved for. Mutants caught: every candidate reserved at once; the width test
    left out; running jobs not skipped; the wait left out."""
    c = parse_spec("2x8")
    dead = sigmoid(1.0, 10.0)
    first = JobState(rigid("first", 5.0, 8, 1_800.0, c, dead), 0, 1_800.0)
    second = JobState(rigid("second", 10.0, 8, 1_800.0, c, dead), 1, 1_800.0)
    narrow = JobState(rigid("narrow", 0.0, 1, 1_800.0, c, dead), 2, 1_800.0)
    running = JobState(rigid("running", 0.0, 8, 1_800.0, c, dead), 3, 1_800.0)
    g = Gadget(L=1.0, U=100.0)
    n = nodes(c, now=20_000.0)
    jobs = [narrow, running, first, second]
    g.optimize(jobs, n, {"running": (8,) * 8})
    assert "first" in g.plans and "second" not in g.plans and "narrow" not in g.plans
    assert "running" not in g.plans
    assert reservation(g, jobs, n, 67, {"running": (8,) * 8}) == set()  # (the first one's plan stands)
    assert reservation(fresh_policy(n, jobs), [narrow, running, second], n, 66, {"running": (8,) * 8}) == {"second"}
    fresh = JobState(rigid("fresh", 19_000.0, 8, 1_800.0, c, dead), 4, 1_800.0)  # (waited 1,000 s of its 1,800)
    assert reservation(fresh_policy(n, [fresh]), [fresh], n, 66, {}) == set()
    assert reservation(fresh_policy(n, jobs, reserve_wide=False), jobs, n, 66, {}) == set()


def fresh_policy(n, jobs, **options):
    """GADGET at the test's prices, prepared for ``jobs``, with no decision made yet."""
    g = Gadget(L=1.0, U=100.0, **options)
    g._ensure(n, jobs)
    return g
