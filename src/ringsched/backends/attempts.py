"""The attempt state machine: a launched attempt's events in, its ending out.

An attempt runs, is asked to stop (its rank 0 checkpoints), or loses a worker (the others are
killed: the ring is broken); it ends when every rank has exited, and ``faults.classify``
says how (done, stopped, failed, crashed, infrastructure). Its checkpoints are journaled as
they come, with their checksum, capped at the job's work and only from the job's folder. What
an ending means for the job (completed, retried, failed) is the owner's (``AttemptOwner``).
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ringsched.backends import ckpt_store, faults
from ringsched.backends.journal import Journal, write_failure
from ringsched.backends.launcher import Attempt, Launcher
from ringsched.backends.online_model import OnlineModel

STATE_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS)


class AttemptOwner(Protocol):
    """What the attempts tell the controller."""

    def now(self) -> float: ...

    def checkpointed(self, job_id: str, samples: float) -> None:
        """A checkpoint of the job was journaled at ``samples``."""

    def losses_reported(self, job_id: str, step: int, losses: list[float]) -> None:
        """The job's workers reported these (finite) training losses at ``step``."""

    def attempt_ended(self, att: Attempt, end: faults.Ending, t: float) -> None:
        """Every rank of the attempt has exited; ``end`` says how."""


class Attempts:
    """The live attempts of a run (``live`` by attempt id, ``by_job`` by job)."""

    def __init__(self, launcher: Launcher, journal: Journal, model: OnlineModel, owner: AttemptOwner, *,
                 clock: Callable[[], float], ckpt_folder: Callable[[str], Path], stop_timeout_s: float,
                 notify: Callable[[str], None]):
        self.launcher, self.journal, self.model, self.owner = launcher, journal, model, owner
        self.clock, self.ckpt_folder, self.stop_timeout_s, self.notify = clock, ckpt_folder, stop_timeout_s, notify
        self.live: dict[int, Attempt] = {}
        self.by_job: dict[str, Attempt] = {}
        self.write_failed = False  # a checkpoint could not be written: the run is ending

    def add(self, att: Attempt) -> None:
        self.live[att.id] = att
        self.by_job[att.job.name] = att

    def stop(self, att: Attempt) -> None:
        """Ask the attempt to checkpoint and stop."""
        att.state = "stopping"
        att.stop_sent_at = self.clock()
        self.launcher.stop(att)

    def wait_stopped(self, on_tick: Callable[[], None] | None = None) -> None:
        while any(a.state == "stopping" for a in self.live.values()):
            self.pump(0.05)
            if on_tick is not None:
                on_tick()

    def pump(self, timeout_s: float) -> None:
        """Take the launcher's events; kill what did not stop within ``stop_timeout_s``."""
        for aid, rank, ev in self.launcher.poll(timeout_s):
            att = self.live.get(aid)
            if att is not None:
                self.on_event(att, rank, ev)
        now = self.clock()
        for att in list(self.live.values()):
            if (att.state == "stopping" and not att.kill_sent and att.stop_sent_at is not None
                    and now - att.stop_sent_at > self.stop_timeout_s):
                att.kill_sent = True
                self.notify(f"{att.job.name}: did not stop within {self.stop_timeout_s:g} s; killed")
                self.launcher.kill(att)

    def on_event(self, att: Attempt, rank: int, ev: dict) -> None:
        kind = ev.get("ev")
        if kind in ("spawned", "started") and ev.get("pid") and int(ev["pid"]) not in att.pids:
            att.pids.append(int(ev["pid"]))
            self.journal.update_attempt(att.id, pids=att.pids)
        if kind == "started":
            self._started(att, rank, ev)
        elif kind == "progress":
            att.samples = float(ev["samples"])
            att.step = int(ev["step"])
            att.times.extend(float(x) for x in ev.get("times", ()))
            losses = [float(x) for x in ev.get("losses", ()) if math.isfinite(float(x))]
            if losses:
                self.owner.losses_reported(att.job.name, att.step, losses)
        elif kind == "checkpoint":
            self._checkpoint(att, ev, self.owner.now())
        elif kind == "ckpt-failed" and ev.get("errno") in STATE_WRITE_ERRNOS and not self.write_failed:
            # the state directory is full or failing: the run cannot keep anyone's work; end it
            # (the journal keeps its last consistent state, the previous checkpoints stay)
            self.write_failed = True
            path = Path(str(ev.get("path", self.ckpt_folder(att.job.name).parent)))
            raise write_failure(path, OSError(ev["errno"], os.strerror(ev["errno"])))
        elif kind in ("done", "stopped"):
            att.samples = float(ev.get("samples", att.samples))
            if rank == 0:
                att.ended_hint = kind
        elif kind == "error":
            att.errors.append(dict(ev, rank=rank))
            if att.state != "ended" and not att.kill_sent:
                self.kill_rest(att)
        elif kind == "exit":
            att.exits[rank] = int(ev.get("rc", -1))
            if att.exits[rank] != 0 and att.ended_hint != "done" and not att.kill_sent:
                self.kill_rest(att)
            if len(att.exits) >= att.world:
                self.end(att)

    def _started(self, att: Attempt, rank: int, ev: dict) -> None:
        if ev.get("node"):
            att.nodes[rank] = str(ev["node"])
            if len(att.nodes) == att.world:
                att.host = " ".join(att.nodes[r] for r in range(att.world))
                self.journal.update_attempt(att.id, host=att.host)
        if rank == 0:  # it resumed where the journal said (the worker checked): start_samples stands
            att.step = int(ev.get("step", 0))
            self.model.startup_s.append(self.clock() - att.launched_mono)

    def _checkpoint(self, att: Attempt, ev: dict, t: float) -> None:
        """Journal a checkpoint (its checksum; progress capped at the job's work) and delete the
        files of all but the last two good ones."""
        jid = att.job.name
        work = att.job.work_samples
        samples = float(ev["samples"])
        done = bool(ev.get("done"))
        path = Path(str(ev.get("path", "")))
        if (samples < att.start_samples or samples > work + att.world * att.job.local_bsz or (done and samples < work)
                or path.parent != self.ckpt_folder(jid)):  # the journal names files in the job's folder only
            self.notify(f"{jid}: ignored an implausible checkpoint report ({int(samples)} samples, {path})")
            return
        samples = min(samples, float(work))
        self.journal.add_checkpoint(jid, att.id, int(ev["step"]), samples, done, str(path), t,
                                    sha256=str(ev.get("sha256", "")), size_bytes=int(ev.get("bytes", 0)))
        self.journal.update_job(jid, ckpt_samples=samples)
        self.owner.checkpointed(jid, samples)
        ckpt_store.prune(self.journal.checkpoints(jid))

    def kill_rest(self, att: Attempt) -> None:
        """One worker failed: the ring is broken, the others cannot go on."""
        att.kill_sent = True
        att.state = "stopping" if att.state == "running" else att.state
        if att.stop_sent_at is None:
            att.stop_sent_at = self.clock()
        self.launcher.kill(att)

    def end(self, att: Attempt) -> None:
        """Every rank exited (or the launch failed): classify, measure, journal, tell the owner."""
        t = self.owner.now()
        jid = att.job.name
        if att.state == "stopping" and att.stop_sent_at is not None and att.ended_hint == "stopped":
            self.model.stop_s.append(self.clock() - att.stop_sent_at)
        att.state = "ended"
        self.live.pop(att.id, None)
        if self.by_job.get(jid) is att:
            del self.by_job[jid]
        end = faults.classify(att.exits, att.errors, att.ended_hint)
        att.samples = min(att.samples, float(att.job.work_samples))
        m = self.model.measurement(att)
        if m is not None:
            self.model.add(att.job.model, m)
        self.journal.update_attempt(att.id, ended_s=t, outcome=end.outcome, end_samples=att.samples,
                                    measured_step_s=m.step_s if m else None, measured_steps=m.steps if m else 0,
                                    error=end.error, fault=end.fault)
        self.owner.attempt_ended(att, end, t)

    def refresh_model(self) -> None:
        """Refit the speed model with every new measurement, running attempts' medians so far
        included (they are the freshest); those are journaled too."""
        running: dict = {}
        for att in self.live.values():
            m = self.model.measurement(att)
            if m is not None:
                running.setdefault(att.job.model, []).append(m)
                self.journal.update_attempt(att.id, measured_step_s=m.step_s, measured_steps=m.steps)
        self.model.refit(running)

