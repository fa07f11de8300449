"""The policy contract: every registered policy, in both worlds, on the same jobs.

The simulator and the real controller (with ``StepLauncher``: no processes, steps at a true
speed that is not the controller's prior, so it refits mid-run) must both keep allocations
valid, complete every job exactly once, never run a job twice at once, and take the same first
decision from the same inputs. A policy that caches speeds must plan with a refitted model as
a fresh instance would (Optimus' tables, SRTF's and SJF-BCO's rates were kept after a refit).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ringsched.backends.controller import Controller, RunConfig
from ringsched.backends.jobs_file import load_jobs
from ringsched.backends.journal import Journal
from ringsched.backends.refit import CPU_PRIOR
from ringsched.cluster.model import load_cluster
from ringsched.perfmodel.speed import SpeedModel
from ringsched.policies import make_policy
from ringsched.policies.base import JobState, Nodes
from ringsched.policies.registry import policy_names
from ringsched.loop import isolated_run_s
from ringsched.simulator import SimConfig, Simulator
from step_launcher import StepLauncher

JOBS = """
jobs:
  - {name: a, entry: "ringsched.backends.demo_jobs:synth_mlp", batch: 32, work: {samples: 6000}, max_workers: 4, model: resnet18}
  - {name: b, entry: "ringsched.backends.demo_jobs:synth_mlp", batch: 32, work: {samples: 3000}, min_workers: 2, max_workers: 2, model: ncf}
  - {name: c, entry: "ringsched.backends.demo_jobs:synth_mlp", batch: 16, work: {samples: 4000}, max_workers: 2, model: resnet18, arrival_s: 3}
  - {name: d, entry: "ringsched.backends.demo_jobs:synth_mlp", batch: 32, work: {samples: 2000}, model: digits-cnn, arrival_s: 8}
"""
SPECS = policy_names() + ["gadget:work_conserving=false"]  # the last plans ahead (wakeup_s)
SLOW = replace(CPU_PRIOR, compute_base_s=CPU_PRIOR.compute_base_s * 10, compute_per_sample_s=CPU_PRIOR.compute_per_sample_s * 10)


def prior_speed(cluster) -> SpeedModel:
    speed = SpeedModel(cluster)
    for model in ("resnet18", "ncf", "digits-cnn"):  # (digits-cnn: a demo job type, outside the catalogue)
        speed.set_params(model, CPU_PRIOR)
    return speed


def recording(policy):
    """The policy, its optimize calls recorded as (now, {job: placement}) and its on_finish
    calls as ("finish", job)."""
    calls, inner, inner_finish = [], policy.optimize, policy.on_finish

    def optimize(jobs, nodes, prev):
        out = inner(jobs, nodes, prev)
        calls.append((nodes.now_s, {k: tuple(p) for k, p in out.items() if p}))
        return out

    def on_finish(job_id):
        calls.append(("finish", job_id))
        inner_finish(job_id)

    policy.optimize, policy.on_finish = optimize, on_finish
    return policy, calls


def finished(calls) -> list[str]:
    return sorted(c[1] for c in calls if c[0] == "finish")


@pytest.fixture(scope="module")
def run_jobs(tmp_path_factory):
    path = tmp_path_factory.mktemp("jobs") / "jobs.yaml"
    path.write_text(JOBS)
    return load_jobs(str(path))


def simulate(spec, run_jobs):
    cluster = load_cluster("2x2")
    speed = prior_speed(cluster)
    jobs = [j.to_job(isolated_run_s(j.to_job(1.0), cluster, speed)) for j in run_jobs]
    policy, calls = recording(make_policy(spec))
    r = Simulator(jobs, cluster, policy, SimConfig(slot_s=2.0, restart_s=5.0, checkpoint_s=10.0), speed=speed).run()
    return r, calls


def run_real(spec, run_jobs, state, true_speed=None):
    cluster = load_cluster("2x2")
    if true_speed is None:
        true_speed = prior_speed(cluster)
        true_speed.set_params("ncf", SLOW)  # ten times slower than the controller believes
    launcher = StepLauncher(cluster, true_speed)
    policy, calls = recording(make_policy(spec))
    ctl = Controller(run_jobs, cluster, "2x2", policy, launcher, Journal(state),
                     RunConfig(slot_s=2.0, ckpt_every_s=10.0, restart_s=5.0), clock=launcher.clock)
    return ctl, ctl.run(), launcher, calls


@pytest.mark.parametrize("spec", SPECS)
def test_every_policy_completes_every_job_once_in_both_worlds(spec, run_jobs, tmp_path):
    r, sim_calls = simulate(spec, run_jobs)
    assert list(r.jobs.status) == ["completed"] * 4, r.jobs[["job_id", "status", "reason"]]
    ctl, summary, launcher, real_calls = run_real(spec, run_jobs, tmp_path / "s")
    assert launcher.violations == []
    assert [(j["job"], j["status"], j["completions"]) for j in summary["jobs"]] == [
        (n, "completed", 1) for n in "abcd"], [j["reason"] for j in summary["jobs"]]
    assert "ncf" in ctl.fitted and ctl.speed.version > 2  # refitted mid-run
    # each job's scratch state is released once, when it ends
    assert finished(sim_calls) == finished(real_calls) == list("abcd")
    assert not any(js.extra for js in ctl.states.values())
    # the same inputs (jobs, cluster, prior, clock 0) give the same first decision
    assert real_calls[0] == sim_calls[0]


def test_a_policy_that_plans_ahead_is_woken_by_the_controller(run_jobs, tmp_path):
    """The controller asks ``wakeup_s`` when nothing runs: GADGET without lending waits for its
    plans' start instead of declaring every job "never scheduled" after one decision."""
    _, summary, _, calls = run_real("gadget:work_conserving=false", run_jobs, tmp_path / "s")
    assert summary["completed"] == 4 and len(calls) > 1


def two_jobs(cluster, speed):
    from ringsched.job import Job
    from ringsched.utility.defaults import jct_utility

    out = []
    for n, (model, work) in enumerate((("resnet18", 10_000.0), ("ncf", 12_000.0))):
        j = Job(job_id=model, arrival_s=0.0, model=model, local_bsz=32, work_samples=work, min_workers=1,
                max_workers=4, utility=jct_utility(10.0, 4), requested_gpus=1)
        js = JobState(j, n, isolated_run_s(j, cluster, speed))
        js.status = "active"
        out.append(js)
    return out


@pytest.mark.parametrize("spec", ["optimus", "srtf", "sjf-bco"])
def test_after_a_refit_a_policy_plans_as_a_fresh_one(spec):
    """Refit the slow model ten times slower between two decisions: the decision is a fresh
    instance's on the refitted model (and differs from the first, so the test can fail)."""
    cluster = load_cluster("1x4" if spec == "optimus" else "1x1")
    speed = prior_speed(cluster)
    speed.set_params("ncf", replace(CPU_PRIOR, compute_per_sample_s=CPU_PRIOR.compute_per_sample_s / 10))
    jobs = two_jobs(cluster, speed)
    policy = make_policy(spec)

    def nodes():
        import numpy as np

        return Nodes(cluster, np.ones(cluster.num_servers, dtype=bool), 0.0, 5.0, speed)

    before = policy.optimize(jobs, nodes(), {})
    speed.set_params("ncf", replace(SLOW, compute_per_sample_s=SLOW.compute_per_sample_s * 10))
    after = policy.optimize(jobs, nodes(), {})
    fresh = make_policy(spec).optimize(jobs, nodes(), {})
    assert after == fresh
    assert after != before


def test_a_refit_is_a_reason_to_decide_again(run_jobs, tmp_path):
    """One job alone (ncf), ten times slower than the prior: once its steps are measured the model
    is refitted and the policy asked again, before anything else happens. Mutant caught: the
    real world's ``advance`` not counting a new speed version as a change (one decision only)."""
    cluster = load_cluster("1x1")
    true_speed = prior_speed(cluster)
    true_speed.set_params("ncf", SLOW)
    launcher = StepLauncher(cluster, true_speed)
    policy, calls = recording(make_policy("srtf"))
    job = replace([j for j in run_jobs if j.name == "d"][0], model="ncf")
    ctl = Controller([replace(job, arrival_s=0.0)], cluster, "1x1", policy, launcher, Journal(tmp_path / "s"),
                     RunConfig(slot_s=2.0), clock=launcher.clock)
    summary = ctl.run()
    decisions = [c for c in calls if c[0] != "finish"]
    assert summary["completed"] == 1 and len(launcher.starts) == 1
    assert len(decisions) >= 2 and decisions[1][0] < summary["jobs"][0]["jct_s"]


class SlowStop(StepLauncher):
    """Stops take ``stop_polls`` polls (a checkpoint under load), so a decision waits."""

    stop_polls = 40

    def _advance(self, aid, run):
        if run.stopping and not run.killed:
            run.wait = getattr(run, "wait", self.stop_polls) - 1
            if run.wait > 0:
                return []
        return super()._advance(aid, run)


class Script:
    """A command source that hands out each (clock, command) once the fake clock reaches it."""

    def __init__(self, launcher, timed):
        self.launcher, self.timed, self.closed = launcher, list(timed), False

    def drain(self):
        due = [c for t, c in self.timed if t <= self.launcher.t]
        self.timed = [(t, c) for t, c in self.timed if t > self.launcher.t]
        self.closed = not self.timed and self.launcher.t > 60.0
        return due


def test_a_hold_is_taken_while_a_decision_waits_for_stops(run_jobs, tmp_path):
    """b is submitted; srtf preempts the long a for it, and waits for a's (slow) checkpoint;
    b is held meanwhile: it must never start (the hold is taken during the wait, not after
    the launch it would otherwise get). Mutant caught: ``_wait_stopped`` not draining commands."""
    from ringsched.backends.online import Command

    cluster = load_cluster("1x2")
    a = replace([j for j in run_jobs if j.name == "a"][0], max_workers=2, work_samples=10**6)
    b = replace([j for j in run_jobs if j.name == "d"][0], name="b", min_workers=2, max_workers=2, model="ncf")
    launcher = SlowStop(cluster, prior_speed(cluster))
    commands = Script(launcher, [(3.0, Command("submit", "b", b)), (3.5, Command("hold", "b"))])
    ctl = Controller([a], cluster, "1x2", make_policy("srtf"), launcher, Journal(tmp_path / "s"),
                     RunConfig(slot_s=2.0), clock=launcher.clock, commands=commands)
    ctl.run()
    assert launcher.violations == []
    assert [s[1] for s in launcher.starts].count("b") == 0, launcher.starts
    assert ctl.states["b"].status == "held"
