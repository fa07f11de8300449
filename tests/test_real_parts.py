"""The parts of real execution, each alone: the attempt state machine (``attempts``), the
online speed model (``online_model``), and the one allocation check both worlds share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ringsched.backends.attempts import Attempts
from ringsched.backends.jobs_file import load_jobs
from ringsched.backends.journal import Journal
from ringsched.backends.launcher import Attempt
from ringsched.backends.online_model import OnlineModel
from ringsched.backends.refit import CPU_PRIOR
from ringsched.cluster.model import load_cluster
from ringsched.loop import PolicyError

JOB = """
jobs:
  - {name: j, entry: "ringsched.backends.demo_jobs:synth_mlp", batch: 32, work: {samples: 640}, max_workers: 2, model: resnet18}
"""


class Owner:
    def __init__(self):
        self.t, self.ended, self.ckpts, self.loss = 0.0, [], [], []

    def now(self):
        return self.t

    def checkpointed(self, job_id, samples):
        self.ckpts.append((job_id, samples))

    def losses_reported(self, job_id, step, losses):
        self.loss.append((job_id, step, losses))

    def attempt_ended(self, att, end, t):
        self.ended.append((att.id, end.outcome, end.fault))


class Recorder:
    name = "rec"

    def __init__(self):
        self.calls, self.events = [], []

    def start(self, att, config):
        self.calls.append(("start", att.id))

    def stop(self, att):
        self.calls.append(("stop", att.id))

    def kill(self, att):
        self.calls.append(("kill", att.id))

    def poll(self, timeout_s):
        out, self.events = self.events, []
        return out


@pytest.fixture
def parts(tmp_path):
    (tmp_path / "jobs.yaml").write_text(JOB)
    job = load_jobs(str(tmp_path / "jobs.yaml"))[0]
    journal = Journal(tmp_path / "state")
    journal.add_job("j", job.to_dict())
    clock = [0.0]
    model = OnlineModel(load_cluster("1x2"), restart_prior_s=5.0)
    model.add_prior("resnet18")
    launcher, owner = Recorder(), Owner()
    atts = Attempts(launcher, journal, model, owner, clock=lambda: clock[0],
                    ckpt_folder=lambda jid: tmp_path / "state" / "ckpt" / jid, stop_timeout_s=10.0, notify=lambda m: None)
    aid = journal.start_attempt("j", (0, 0), servers=1, max_per_server=2, local_bsz=32, model="resnet18", started_s=0.0,
                                start_samples=0.0, predicted_step_s=0.01)
    att = Attempt(aid, job, (0, 0), 0.0, 0.01, 0.0)
    atts.add(att)
    return atts, att, launcher, owner, clock, model


def test_a_worker_error_kills_the_rest_and_the_attempt_ends_once_all_exited(parts):
    """Mutant caught: ``kill_rest`` not called on an error event (no kill recorded)."""
    atts, att, launcher, owner, _, _ = parts
    atts.on_event(att, 1, {"ev": "error", "kind": "user", "error": "ValueError: bad"})
    assert ("kill", att.id) in launcher.calls and att.state == "stopping"
    atts.on_event(att, 0, {"ev": "exit", "rc": -9})
    assert owner.ended == [] and att.id in atts.live  # rank 1 has not exited yet
    atts.on_event(att, 1, {"ev": "exit", "rc": 1})
    assert owner.ended == [(att.id, "failed", "user")] and not atts.live and not atts.by_job


def test_a_stop_not_done_in_time_is_killed(parts):
    """Mutant caught: the stop timeout compared with ``<`` (killed at once, or never)."""
    atts, att, launcher, _, clock, _ = parts
    atts.stop(att)
    clock[0] = 9.0
    atts.pump(0.0)
    assert ("kill", att.id) not in launcher.calls
    clock[0] = 10.5
    atts.pump(0.0)
    assert ("kill", att.id) in launcher.calls


def test_checkpoints_are_capped_and_told_to_the_owner(parts, tmp_path):
    atts, att, _, owner, _, _ = parts
    path = tmp_path / "state" / "ckpt" / "j" / f"a{att.id}-s21-done.pt"
    atts.on_event(att, 0, {"ev": "checkpoint", "step": 21, "samples": 672, "done": True, "path": str(path),
                           "sha256": "0" * 64})
    assert owner.ckpts == [("j", 640.0)]


def test_a_refit_changes_the_version_and_moves_predictions_to_the_measurements(parts):
    """Mutant caught: ``OnlineModel.refit`` ignoring running attempts' medians (no refit)."""
    atts, att, _, _, _, model = parts
    before, version = model.predicted_step_s(att.job, att.placement), model.speed.version
    att.times = [before * 10] * 20  # ten times slower than the prior says
    atts.refresh_model()
    after = model.predicted_step_s(att.job, att.placement)
    assert model.speed.version > version and "resnet18" in model.fitted
    assert abs(after / (before * 10) - 1) < 0.2


class Greedy:
    """A broken policy: every job on server 0 with all its workers."""

    name, periodic, rigid = "greedy", False, False

    def prepare(self, jobs, cluster, speed=None):
        pass

    def admit(self, job, nodes):
        return None

    def optimize(self, jobs, nodes, prev):
        return {js.job_id: (0,) * js.job.max_workers for js in jobs}

    def wakeup_s(self, now_s, slot_s):
        return None

    def on_finish(self, job_id):
        pass


def test_one_allocation_check_in_both_worlds(tmp_path):
    """Over capacity on server 0 (2 + 2 workers, 2 GPUs): the same PolicyError from the
    simulator and the controller, raised by the loop's one check."""
    from ringsched.backends.controller import Controller, RunConfig
    from ringsched.simulator import SimConfig, Simulator
    from step_launcher import StepLauncher

    (tmp_path / "jobs.yaml").write_text(JOB + JOB.splitlines()[-1].replace("name: j,", "name: k,") + "\n")
    jobs = load_jobs(str(tmp_path / "jobs.yaml"))
    cluster = load_cluster("2x2")
    with pytest.raises(PolicyError, match="server 0 given 4 workers, capacity 2") as sim_err:
        Simulator([j.to_job(1.0) for j in jobs], cluster, Greedy(), SimConfig(slot_s=2.0)).run()
    speed = OnlineModel(cluster, 5.0).speed
    launcher = StepLauncher(cluster, speed)
    ctl = Controller(jobs, cluster, "2x2", Greedy(), launcher, Journal(tmp_path / "s"), RunConfig(slot_s=2.0),
                     clock=launcher.clock)
    with pytest.raises(PolicyError) as real_err:
        ctl.run()
    assert str(real_err.value) == str(sim_err.value)
    assert launcher.starts == []
