"""The fault suite of real execution (issue 20): the controller's rules under a scripted
launcher (workers that say what a script tells them, no torch), and recovery of a scheduler
that died: journaled progress, adopted checkpoints and the losses their sidecars carry. The
rest of the fast part is in test_faults.py. Every injected fault is counted
(``fault_kit.FAULTS``) and the total printed at the end (``pytest -s``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fault_kit import FAULTS, fault_totals, sha, sidecar  # noqa: F401 - fault_totals: a fixture

from ringsched.backends import ckpt_store
from ringsched.backends.journal import Journal


FAKE_JOBS = """
jobs:
  - name: odd
    entry: ringsched.backends.demo_jobs:synth_mlp
    batch: 64
    work: {samples: 100}
"""


class ScriptedLauncher:
    """A launcher whose workers say what ``script(attempt, config)`` returns (events of rank 0
    then an exit per rank): the controller's rules without torch, in milliseconds."""

    name = "scripted"

    def __init__(self, script):
        self.script, self.pending, self.configs = script, [], []

    def start(self, attempt, config):
        self.configs.append(config)
        self.pending += [(attempt.id, 0, ev) for ev in self.script(attempt, config)]
        self.pending += [(attempt.id, r, {"ev": "exit", "rc": 0}) for r in range(attempt.world)]

    def stop(self, attempt):
        pass

    def kill(self, attempt):
        pass

    def poll(self, timeout_s):
        out, self.pending = self.pending, []
        return out

    def reap(self, stale):
        pass

    def close(self):
        pass


def scripted_run(state: Path, script, tmp_path: Path) -> tuple[dict, ScriptedLauncher, Journal]:
    from ringsched.backends.controller import Controller, RunConfig
    from ringsched.backends.jobs_file import load_jobs
    from ringsched.cluster.model import load_cluster
    from ringsched.policies import make_policy

    (tmp_path / "jobs.yaml").write_text(FAKE_JOBS)
    jobs = load_jobs(str(tmp_path / "jobs.yaml"))
    launcher, journal = ScriptedLauncher(script), Journal(state)
    ctl = Controller(jobs, load_cluster("1x2"), "1x2", make_policy("srtf"), launcher, journal,
                     RunConfig(slot_s=0.05))
    return ctl.run(), launcher, journal


def finishing(overshoot: int, folder: str | None = None):
    def script(attempt, config):
        done = config["work_samples"] + overshoot
        path = str(Path(folder or config["ckpt_dir"]) / "a1-s2-done.pt")
        return [{"ev": "started", "pid": 1, "step": 0, "samples": 0},
                {"ev": "checkpoint", "step": 2, "samples": done, "done": True, "path": path, "sha256": "0" * 64},
                {"ev": "done", "step": 2, "samples": done}]
    return script


def test_progress_never_exceeds_the_work(tmp_path):
    """The final step overshoots the work by less than a global batch (128 of 100 here): the
    journal records at most the work."""
    summary, _, journal = scripted_run(tmp_path / "s", finishing(28), tmp_path)
    assert summary["completed"] == 1 and summary["jobs"][0]["done_samples"] == 100
    assert [r["samples"] for r in journal.checkpoints("odd")] == [100.0]
    assert journal.attempts()[0]["end_samples"] == 100.0


@pytest.mark.parametrize("overshoot, folder", [(10**12, None), (0, "/etc")])
def test_an_implausible_checkpoint_report_is_not_journaled(tmp_path, overshoot, folder):
    """More samples than the work plus a batch, or a file outside the job's checkpoint folder
    (which pruning would later delete): not journaled."""
    FAULTS["checkpoint: implausible report"] += 1
    summary, _, journal = scripted_run(tmp_path / "s", finishing(overshoot, folder), tmp_path)
    assert journal.checkpoints("odd") == []


def died_with_an_attempt_open(tmp_path: Path) -> tuple[Path, Journal, int]:
    """The state of a scheduler that died at clock 5 s while job ``odd`` ran its attempt
    (started at 4 s): the state folder, its journal (open) and the attempt's id."""
    from ringsched.backends.jobs_file import jobs_digest, load_jobs

    state = tmp_path / "s"
    (tmp_path / "jobs.yaml").write_text(FAKE_JOBS)
    jobs = load_jobs(str(tmp_path / "jobs.yaml"))
    j = Journal(state)
    j.set_meta(jobs_digest=jobs_digest(jobs), cluster="1x2", clock_s=5.0)
    j.add_job("odd", jobs[0].to_dict())
    j.update_job("odd", status="active")
    aid = j.start_attempt("odd", (0,), servers=1, max_per_server=1, local_bsz=64, model="odd", started_s=4.0,
                          start_samples=0.0, predicted_step_s=0.01)
    return state, j, aid


def test_recovery_resumes_from_the_journal_and_its_clock_passes_every_journaled_time(tmp_path):
    """A scheduler died at clock 9 s with an attempt open; its last decision was at 5 s and its
    last journaled checkpoint at 9 s. The next one closes the attempt at or after 9 s and
    resumes from that checkpoint, not from a sidecar's claim."""
    state, j, aid = died_with_an_attempt_open(tmp_path)
    pt = state / "ckpt" / "odd" / f"a{aid}-s1.pt"
    pt.parent.mkdir(parents=True)
    pt.write_bytes(b"a checkpoint")
    j.add_checkpoint("odd", aid, 1, 64.0, False, str(pt), 9.0, sha256=sha(pt), size_bytes=12)
    # written after the kill: adoptable, but its "done" short of the work is not believed
    sidecar(state / "ckpt" / "odd", aid, 5, 99, True)
    j.db.close()
    FAULTS["scheduler killed (scripted)"] += 1
    summary, launcher, journal = scripted_run(state, finishing(0), tmp_path)
    first = journal.attempts()[0]
    assert first["outcome"] == "orphaned" and first["ended_s"] >= 9.0
    resume = launcher.configs[0]["resume"]
    assert resume["samples"] == 99 and resume["path"].endswith("a1-s5.pt")  # adopted: open attempt, hash, bounds
    assert summary["completed"] == 1


def test_a_job_that_ended_while_its_scheduler_was_dead_keeps_its_losses(tmp_path):
    """The scheduler died just after it started a fast job, which ran to its end on its own and
    wrote its final checkpoint with a sidecar. The next scheduler adopts that checkpoint,
    completes the job and journals the losses the sidecar carries (the dead one heard none):
    the curve and the first and last loss, as if it had heard them. Found by
    tests/test_service_durable.py, where such a job ended with no loss at all.
    Mutant caught: ``recovery.adopt_losses`` not called (the losses stay None)."""
    state, j, aid = died_with_an_attempt_open(tmp_path)
    pt = sidecar(state / "ckpt" / "odd", aid, 2, 128, True)
    side = Path(str(pt) + ".json")
    side.write_text(json.dumps(json.loads(side.read_text()) | {"losses": {"points": [[1, 2.0], [2, 1.0]],
                                                                          "first": 2.2, "last": 0.9}}))
    j.db.close()
    FAULTS["scheduler killed (scripted)"] += 1
    summary, launcher, journal = scripted_run(state, finishing(0), tmp_path)
    assert summary["completed"] == 1 and launcher.configs == []  # completed by the adopted checkpoint
    assert journal.losses("odd") == [(1, 2.0), (2, 1.0)]
    row = journal.jobs()[0]
    assert (row["loss_first"], row["loss_last"]) == (2.2, 0.9)


@pytest.mark.parametrize("record, ok", [
    ({"points": [[1, 2.0], [5, 1.5]], "first": 2.1, "last": 1.4}, True),
    ({"points": [], "first": None, "last": None}, True),
    ({"points": [[1, float("nan")]], "first": 2.0, "last": 1.0}, False),
    ({"points": [[1, 2.0]], "first": "2", "last": 1.0}, False),
    ({"points": [[-1, 2.0]], "first": 2.0, "last": 1.0}, False),
    ({"points": [[1.5, 2.0]], "first": 2.0, "last": 1.0}, False),
    ({"points": [[1, True]], "first": 2.0, "last": 1.0}, False),
    ({"points": "[[1, 2.0]]"}, False),
    ([[1, 2.0]], False),
])
def test_a_sidecars_loss_record_is_plain_finite_numbers_or_nothing(record, ok):
    """What a sidecar says about losses is journaled only if every number is finite and every
    step a non-negative integer; anything else is ignored (the checkpoint may still be adopted).
    Mutant caught: the record taken as it is (a NaN or a string journaled)."""
    got = ckpt_store.loss_record(json.loads(json.dumps(record)))
    assert (got is not None) == ok
    if ok:
        assert got["points"] == [tuple(p) for p in record["points"]] and got["last"] == record["last"]


def test_a_checkpoints_sidecar_carries_its_attempts_reported_losses(tmp_path):
    """The worker's reports go into the record its checkpoints' sidecars carry (the first ten
    and the last ten losses of the attempt, and one point per report), and ``adoptable`` reads
    it back. Mutant caught: ``save`` writing the sidecar without the record."""
    import threading

    from ringsched.backends.worker import TrainContext

    ctx = TrainContext({"job": "odd", "attempt": 3, "rank": 0, "world": 1, "local_bsz": 4, "work_samples": 400,
                        "ckpt_dir": str(tmp_path)}, lambda ev: None, threading.Event())
    for step, losses in ((12, [3.0] * 12), (20, [1.0] * 8)):
        ctx.step, ctx._losses = step, list(losses)
        ctx._report()
    record = ctx._loss_record()
    assert record == {"points": [[12, 3.0], [20, 1.0]], "first": 3.0, "last": 1.4}
    ckpt_store.save(tmp_path, 3, {"format": ckpt_store.CKPT_FORMAT, "step": 20, "samples": 80, "done": False},
                    record)
    got = ckpt_store.adoptable(tmp_path, {3: 4}, 0.0, 400)
    assert got["samples"] == 80 and got["losses"] == {"points": [(12, 3.0), (20, 1.0)], "first": 3.0, "last": 1.4}
