"""The scheduling loop of real execution, shared by every backend.

The controller calls a policy exactly as the simulator does (``ringsched.policies.base``):
``admit(job, nodes)`` when a job arrives, ``optimize(active_job_states, nodes,
previous_allocations)`` at every slot boundary, and applies the returned placements. What
differs from the simulator is where progress comes from: each job's ``JobState`` is kept
current from what its workers report (samples done, iteration times), and the speed model
the policy plans with is refitted online from measured step times (``refit``).

A backend is only a :class:`Launcher`: start the workers of an attempt (a job on a
placement), ask them to checkpoint and stop, kill them, and report their events. Applying a
decision: every job whose placement changed is asked to stop (its rank 0 checkpoints), the
controller waits until those workers are gone, then starts each job at its new placement
from its checkpoint. Everything durable goes to the SQLite journal (``journal``), so a new
controller on the same state directory resumes every job from its last checkpoint.
"""

from __future__ import annotations

import errno
import math
import os
import signal
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

from pathlib import Path

import numpy as np

from ringsched.backends import ckpt_store, faults
from ringsched.backends.jobs_file import RunJob, jobs_digest
from ringsched.backends.journal import Journal, StateWriteError, write_failure
from ringsched.backends.online import TERMINAL, ONLINE_DIGEST, CommandSource, apply_commands, online_check_journal
from ringsched.backends.refit import CPU_PRIOR, Measurement, refit
from ringsched.backends.signals import Interrupted
from ringsched.cluster.model import Cluster
from ringsched.errors import InputError
from ringsched.perfmodel.ring import RingParams
from ringsched.perfmodel.speed import Placement, SpeedModel
from ringsched.policies.base import JobState, Nodes, Policy
from ringsched.job import Job
from ringsched.loop import PolicyError
from ringsched.simulator.metrics import isolated_run_s

STATE_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS)
MIN_STEPS = 5  # iterations an attempt needs before its median step time counts as a measurement


@dataclass
class Attempt:
    """One launch of a job on a placement (one gloo group)."""

    id: int
    job: RunJob
    placement: Placement
    started_s: float
    predicted_step_s: float
    start_samples: float
    state: str = "running"  # running -> stopping -> ended
    samples: float = 0.0
    step: int = 0
    times: list[float] = field(default_factory=list)
    exits: dict[int, int] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)
    ended_hint: str | None = None  # "done" / "stopped" from rank 0
    stop_sent_at: float | None = None
    kill_sent: bool = False
    pids: list[int] = field(default_factory=list)
    host: str = ""
    nodes: dict[int, str] = field(default_factory=dict)  # rank -> node id (Ray)
    launched_mono: float = 0.0  # the controller's monotonic clock at launch
    resume_seq: int | None = None  # the journaled checkpoint it resumed from

    @property
    def world(self) -> int:
        return len(self.placement)

    def measured_step_s(self) -> float | None:
        return statistics.median(self.times) if len(self.times) >= MIN_STEPS else None


class LauncherError(Exception):
    """The backend cannot run workers at all (not one attempt's failure): the run ends."""


class Launcher(ABC):
    """What a backend provides: processes for attempts, and their events."""

    name: str = ""

    @abstractmethod
    def start(self, attempt: Attempt, config: dict) -> None:
        """Start ``attempt.world`` workers; ``config`` is the worker config without rank,
        world and rendezvous address (the launcher adds them)."""

    @abstractmethod
    def stop(self, attempt: Attempt) -> None:
        """Ask every worker of the attempt to checkpoint and stop (they agree on the step)."""

    @abstractmethod
    def kill(self, attempt: Attempt) -> None:
        """Stop the attempt's workers now, without a checkpoint."""

    @abstractmethod
    def poll(self, timeout_s: float) -> list[tuple[int, int, dict]]:
        """Events ``(attempt id, rank, event)`` since the last call, waiting up to
        ``timeout_s`` for the first. Every worker ends with ``{"ev": "exit", "rc": code}``,
        after all its other events."""

    def reap(self, stale: list[dict]) -> None:
        """Recovery: make sure workers of attempts journaled by a dead controller are gone."""

    def close(self) -> None:
        """Release everything (workers of unfinished attempts are killed)."""


@dataclass
class RunConfig:
    slot_s: float = 5.0
    ckpt_every_s: float = 10.0
    stop_timeout_s: float = 60.0
    max_failures: int = 3  # a job whose workers crash this many times fails
    report_every_s: float = 0.5
    worker_timeout_s: float = 120.0
    restart_s: float = 5.0  # expected cost of a placement change until stops and starts are measured


def check_journal(journal: Journal, jobs: list[RunJob], cluster_spec: str) -> bool:
    """True when ``journal`` holds an earlier run of these jobs on this cluster (to resume),
    False when it is empty; an ``InputError`` when it belongs to another run."""
    meta = journal.meta()
    if "jobs_digest" not in meta:
        return False
    if meta.get("jobs_digest") != jobs_digest(jobs):
        raise InputError(f"state directory {journal.dir} belongs to another run (its jobs differ; "
                         f"it ran {meta.get('jobs_source', '?')!r})", field="state")
    if meta.get("cluster") != cluster_spec:
        raise InputError(f"state directory {journal.dir} belongs to a run on cluster "
                         f"{meta.get('cluster')!r}, not {cluster_spec!r}", field="state")
    return True


class Controller:
    """One real run: jobs, a cluster, a policy, a launcher, a journal."""

    def __init__(self, jobs: list[RunJob], cluster: Cluster, cluster_spec: str, policy: Policy,
                 launcher: Launcher, journal: Journal, config: RunConfig | None = None, *,
                 jobs_source: str = "", notify: Callable[[str], None] | None = None,
                 on_tick: Callable[["Controller"], None] | None = None, commands: "CommandSource | None" = None,
                 clock: Callable[[], float] = time.monotonic):
        if not jobs and commands is None:
            raise InputError("no jobs to run", field="jobs")
        self.jobs = {j.name: j for j in jobs}
        self.cluster = cluster
        self.cluster_spec = cluster_spec
        self.policy = policy
        self.launcher = launcher
        self.journal = journal
        self.cfg = config or RunConfig()
        self.jobs_source = jobs_source
        self.notify = notify or (lambda msg: None)
        self.on_tick = on_tick
        self.commands = commands  # online: jobs submitted, cancelled, held, released while it runs
        self.speed = SpeedModel(cluster)
        self.priors: dict[str, RingParams] = {}
        self.measurements: dict[str, list[Measurement]] = {}
        self.fitted: set[str] = set()  # models refitted on measurements at least once
        self._dirty_models: set[str] = set()
        self.states: dict[str, JobState] = {}
        self.alloc: dict[str, Placement] = {}
        self.live: dict[int, Attempt] = {}  # attempt id -> attempt, not yet ended
        self.by_job: dict[str, Attempt] = {}  # job -> its live attempt
        self.losses: dict[str, list[tuple[int, float]]] = {}
        self.loss_first: dict[str, float | None] = {}
        self.loss_last: dict[str, float | None] = {}
        self.counters: dict[str, dict] = {}
        self.ckpt_dir = journal.dir / "ckpt"
        self.log_dir = journal.dir / "logs"
        self.interrupted: int | None = None  # the signal that ended the run early
        self.write_failed = False  # a checkpoint could not be written: the run is ending
        self.retry_at: dict[str, float] = {}  # job -> earliest time of its next launch (backoff)
        self.consecutive_faults: dict[str, int] = {}
        self.stalled = False
        self.wake_s: float | None = None  # when the policy said it acts next (``wakeup_s``)
        self.decisions = 0
        self.startup_s: list[float] = []  # measured: launch -> gloo group formed
        self.stop_s: list[float] = []  # measured: stop asked -> all ranks exited
        self.clock = clock  # monotonic seconds (a test's launcher may drive a fake one)
        self._t0 = clock()
        self._offset = 0.0
        self.wall0 = time.perf_counter()
        for j in jobs:  # every job type starts from the CPU prior, refitted as steps are measured
            self.add_prior(j.model)

    def add_prior(self, model: str) -> None:
        if model not in self.priors:
            self.priors[model] = CPU_PRIOR
            self.speed.set_params(model, CPU_PRIOR)

    # ------------------------------------------------------------------ clock
    def now(self) -> float:
        return self._offset + (self.clock() - self._t0)

    # ------------------------------------------------------------------ setup / recovery
    def _job_view(self, j: RunJob) -> tuple[Job, float]:
        """The job as policies see it, and its isolated time (as the simulator defines it)."""
        iso = isolated_run_s(j.to_job(1.0), self.cluster, self.speed)
        return j.to_job(iso), iso

    def _ckpt_dir(self, job: str) -> Path:
        return self.ckpt_dir / job

    def _setup(self) -> None:
        digest = jobs_digest(list(self.jobs.values()))
        order = sorted(self.jobs.values(), key=lambda j: (j.arrival_s, j.name))
        for n, j in enumerate(order):
            self.register(j, n)
        resuming = (online_check_journal(self.journal, self.cluster_spec) if self.commands is not None
                    else check_journal(self.journal, list(self.jobs.values()), self.cluster_spec))
        if not resuming:
            self.journal.set_meta(jobs_digest=ONLINE_DIGEST if self.commands is not None else digest,
                                  cluster=self.cluster_spec,
                                  backend=self.launcher.name, policy=self.policy.name, jobs_source=self.jobs_source,
                                  clock_s=0.0, created=time.time())
            for j in order:
                self.journal.add_job(j.name, j.to_dict())
            return
        meta = self.journal.meta()
        self._recover(meta)

    def register(self, j: RunJob, index: int) -> JobState:
        """A job's in-memory state (the batch's jobs at setup; online, each submission)."""
        job, iso = self._job_view(j)
        js = self.states[j.name] = JobState(job, index, iso)
        self.losses[j.name] = []
        self.loss_first[j.name] = self.loss_last[j.name] = None
        self.counters[j.name] = {"resizes": 0, "completions": 0, "last_workers": 0, "infra_faults": 0}
        return js

    def _recover(self, meta: dict) -> None:
        """Resume after a controller that stopped (or was killed): orphaned workers are reaped,
        every unfinished job restarts from its last checkpoint, finished ones stay finished."""
        # the clock goes on from the latest time anything was journaled (not only the last
        # decision), so nothing recovered ends before it began
        self._offset = max(float(meta.get("clock_s", 0.0)), self.journal.last_time_s())
        self._t0 = self.clock()
        t = self.now()
        stale = self.journal.attempts(open_only=True)
        if stale:
            self.notify(f"recovering: {len(stale)} attempt(s) of the previous scheduler")
            self.launcher.reap(stale)
        for a in stale:
            self.journal.update_attempt(a["id"], ended_s=t, outcome="orphaned")
        for a in self.journal.attempts():
            if a["measured_step_s"] and a["measured_steps"] >= MIN_STEPS:
                self._add_measurement(a["model"], Measurement(a["workers"], a["servers"], a["max_per_server"],
                                                              a["local_bsz"], a["measured_step_s"], a["measured_steps"]))
        for row in self.journal.jobs():
            jid = row["job_id"]
            if jid not in self.states:
                continue
            js = self.states[jid]
            for k in ("done_samples", "attained_gpu_s", "restarts", "preemptions", "failures", "lost_samples"):
                setattr(js, k, type(getattr(js, k))(row[k]))
            js.first_start_s = row["first_start_s"]
            js.finish_s = row["finish_s"]
            js.reason = row["reason"]
            js.ckpt_samples = row["ckpt_samples"]
            self.loss_first[jid], self.loss_last[jid] = row["loss_first"], row["loss_last"]
            self.losses[jid] = self.journal.losses(jid)
            self.counters[jid] = {"resizes": row["resizes"], "completions": row["completions"],
                                  "last_workers": row["last_workers"], "infra_faults": row["infra_faults"]}
            status = row["status"]
            js.mark_s = js.run_from_s = js.last_stop_s = t
            if status in TERMINAL:
                js.status = status
                continue
            samples = self._resume_point(jid, [a for a in stale if a["job_id"] == jid], t)
            if samples is None:
                self._mark_completed(js, t, note="completed by its final checkpoint before the restart")
                continue
            js.ckpt_samples = js.done_samples = samples
            js.status = status if status in ("active", "held") else "pending"
            self.journal.update_job(jid, status=js.status, done_samples=js.done_samples, ckpt_samples=js.ckpt_samples)
            if js.status == "active":
                self.journal.event(t, jid, "resume", f"from checkpoint at {int(js.ckpt_samples)} samples")
                self.notify(f"{jid}: resumes from its checkpoint at {int(js.ckpt_samples)} samples")
        self._refit_dirty()

    def _resume_point(self, jid: str, stale: list[dict], t: float) -> float | None:
        """Recovery: the samples a job resumes from (None: its final checkpoint is journaled).
        The journal decides; a checkpoint its dead scheduler never journaled (written by
        workers that saw it die) is adopted only if it passes ``ckpt_store.adoptable``."""
        rows = self.journal.checkpoints(jid)
        if any(r["done"] and not r["bad"] for r in rows):
            return None
        choice = self._choose_checkpoint(jid, rows, t)
        work = self.jobs[jid].work_samples
        got = ckpt_store.adoptable(self._ckpt_dir(jid), {a["id"]: a["workers"] * a["local_bsz"] for a in stale},
                                   choice.samples, work)
        if got is None:
            return choice.samples
        self.journal.add_checkpoint(jid, got["attempt"], got["step"], min(got["samples"], work), got["done"],
                                    got["path"], t, sha256=got["sha256"], size_bytes=got["bytes"])
        self.journal.event(t, jid, "adopt", f"checkpoint of attempt {got['attempt']} at {got['samples']} samples, "
                                            "written after the previous scheduler died")
        return None if got["done"] else float(got["samples"])

    def _choose_checkpoint(self, jid: str, rows: list[dict], t: float) -> ckpt_store.Choice:
        """The newest good journaled checkpoint; corrupt ones are marked bad (and logged)."""
        choice = ckpt_store.choose(rows)
        for r in choice.bad:
            self.journal.mark_checkpoint_bad(r["seq"])
            self.journal.event(t, jid, "ckpt-bad", f"{r['path']} (step {r['step']}) changed or vanished; "
                                                   "falling back to the previous checkpoint")
            self.notify(f"{jid}: checkpoint {Path(r['path']).name} is corrupt or missing; using the previous one")
        return choice

    # ------------------------------------------------------------------ measurements and the model
    def _add_measurement(self, model: str, m: Measurement) -> None:
        self.measurements.setdefault(model, []).append(m)
        self._dirty_models.add(model)

    def _refit_dirty(self, extra: dict[str, list[Measurement]] | None = None) -> None:
        models = set(self._dirty_models) | set(extra or {})
        for model in sorted(models):
            data = list(self.measurements.get(model, [])) + list((extra or {}).get(model, []))
            if model in self.priors and data:
                self.speed.set_params(model, refit(self.priors[model], data))
                self.fitted.add(model)
        self._dirty_models.clear()

    def predicted_step_s(self, job: RunJob, placement: Placement) -> float:
        return self.speed.step_time_s(job.model, job.local_bsz, self.speed.shape(placement))

    # ------------------------------------------------------------------ main loop
    def run(self) -> dict:
        self._setup()
        # the same once-per-run hook the simulator calls (GADGET derives its price range here)
        if self.states:  # (online, a policy that needs the workload prepares on its first decision)
            self.policy.prepare([js.job for js in self.states.values()], self.cluster, self.speed)
        slot = self.cfg.slot_s
        next_b = self.now()
        try:
            while not self._finished():
                self._pump(0.05)
                now = self.now()
                if self.commands is not None and apply_commands(self, self.commands.drain(), now):
                    next_b = now  # a submission or a release is decided on at once, not at the next slot
                if now >= next_b:
                    self.wake_s = None
                    self._boundary(now)
                    next_b = (math.floor(self.now() / slot + 1e-9) + 1) * slot
                    if self.wake_s is not None:  # the slot boundary at or after the policy's wake-up
                        next_b = max(self.now(), min(next_b, math.ceil(self.wake_s / slot - 1e-9) * slot))
                if self.on_tick is not None:
                    self.on_tick(self)
        except (KeyboardInterrupt, Interrupted) as e:
            self.interrupted = getattr(e, "signum", signal.SIGINT)
            self.notify(f"interrupted ({signal.Signals(self.interrupted).name}): checkpointing running jobs")
            self._stop_all()
        except BaseException:
            try:  # whatever broke, running jobs keep their work: checkpoint them before leaving
                self._stop_all()
            except BaseException:  # noqa: BLE001 - the first error is the one to report
                pass
            raise
        finally:
            try:
                self.journal.set_meta(clock_s=self.now())
            except StateWriteError:
                pass  # the journal keeps its last consistent state; the error is reported once
            finally:
                self.launcher.close()
        return self.summary()

    def _finished(self) -> bool:
        if self.live:
            return False
        if self.commands is not None:
            return self.commands.closed  # online: the service runs until it is told to stop
        if self.stalled:
            return True
        return all(js.status in TERMINAL for js in self.states.values())

    def _stop_all(self) -> None:
        for att in list(self.live.values()):
            if att.state == "running":
                self._stop(att)
        self._wait_stopped()
        for js in self.states.values():
            if js.status not in TERMINAL:
                self._materialize(js, self.now())
                self.journal.update_job(js.job_id, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)

    # ------------------------------------------------------------------ decisions
    def _nodes(self, t: float) -> Nodes:
        return Nodes(self.cluster, np.ones(self.cluster.num_servers, dtype=bool), t, self.cfg.slot_s, self.speed,
                     self.restart_estimate_s())

    def restart_estimate_s(self) -> float:
        """What a placement change costs here: the median measured stop plus start (the configured
        prior for a part not yet measured), told to policies as ``Nodes.restart_s``."""
        half = self.cfg.restart_s / 2
        stop = statistics.median(self.stop_s[-20:]) if self.stop_s else half
        start = statistics.median(self.startup_s[-20:]) if self.startup_s else half
        return float(stop + start)

    def _boundary(self, t: float) -> None:
        nodes = None
        for js in sorted(self.states.values(), key=lambda s: s.index):
            if js.status == "pending" and js.job.arrival_s <= t:
                nodes = nodes or self._nodes(t)
                reason = self.policy.admit(js.job, nodes)
                if reason is None:
                    js.status = "active"
                    self.journal.update_job(js.job_id, status="active")
                else:
                    js.status, js.reason = "rejected", reason
                    self.journal.update_job(js.job_id, status="rejected", reason=reason)
                    self.journal.event(t, js.job_id, "rejected", reason)
                    self.notify(f"{js.job_id}: rejected: {reason}")
                    self.ended(js)
        # measurements so far of running attempts count too (they are the freshest)
        running = {}
        for att in self.live.values():
            m = self._measurement(att)
            if m is not None:
                running.setdefault(att.job.model, []).append(m)
                self.journal.update_attempt(att.id, measured_step_s=m.step_s, measured_steps=m.steps)
        self._refit_dirty(running)
        # a job retried after a fault waits out its backoff before the policy sees it again
        active = [js for js in sorted(self.states.values(), key=lambda s: s.index)
                  if js.status == "active" and self.retry_at.get(js.job_id, 0.0) <= t]
        if not active:
            self.journal.set_meta(clock_s=t)
            return
        for js in active:
            self._materialize(js, t)
        nodes = self._nodes(t)
        new = self.policy.optimize(active, nodes, MappingProxyType(dict(self.alloc)))
        self.decisions += 1
        new = {jid: tuple(int(s) for s in p) for jid, p in new.items() if p}
        self._validate(new, {js.job_id: js for js in active}, t)
        backing_off = any(js.status == "active" and self.retry_at.get(js.job_id, 0.0) > t
                          for js in self.states.values())
        if (self.commands is None and not new and not self.live and not backing_off
                and not any(js.status == "pending" for js in self.states.values())):
            wake = self.policy.wakeup_s(t, self.cfg.slot_s)
            if wake is not None and wake > t:
                self.wake_s = wake  # the policy acts later (a plan that starts then): not stalled
                return
            self.stalled = True  # nothing runs and nothing can change: the rest wait forever
            for js in active:
                js.status = "waiting"
                js.reason = (f"never scheduled by {self.policy.name}" if js.first_start_s is None
                             else f"stopped and never resumed by {self.policy.name}")
                self.journal.event(t, js.job_id, "waiting", js.reason)
                self.notify(f"{js.job_id}: {js.reason}")
            return
        changed = [js for js in active if new.get(js.job_id, ()) != self.alloc.get(js.job_id, ())]
        for js in active:
            self.journal.update_job(js.job_id, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)
        self.journal.set_meta(clock_s=t)
        if not changed:
            return
        self.journal.add_plan(t, new)
        for js in changed:
            att = self.by_job.get(js.job_id)
            if att is not None and att.state == "running":
                self._stop(att)
        self._wait_stopped()
        t = self.now()
        for js in active:
            if js.status != "active" or js.job_id in self.by_job:
                continue  # finished or failed meanwhile, or running on an unchanged placement
            p = new.get(js.job_id, ())
            if p:
                self._launch(js, p, t)
            elif js in changed:
                js.preemptions += 1
                self.journal.update_job(js.job_id, preemptions=js.preemptions)
                self.journal.event(t, js.job_id, "preempt", "")
                self.notify(f"{js.job_id}: preempted")

    def _validate(self, new: dict, active: dict, t: float) -> None:
        counts = np.zeros(self.cluster.num_servers, dtype=np.int64)
        for jid, p in new.items():
            js = active.get(jid)
            if js is None:
                raise PolicyError(f"{self.policy.name}: allocation for unknown or inactive job {jid!r} at t={t:.1f}")
            if not js.job.min_workers <= len(p) <= js.job.max_workers:
                raise PolicyError(f"{self.policy.name}: job {jid} given {len(p)} workers outside "
                                  f"[{js.job.min_workers}, {js.job.max_workers}]")
            if list(p) != sorted(p) or p[0] < 0 or p[-1] >= counts.size:
                raise PolicyError(f"{self.policy.name}: job {jid}: placement {p} is not sorted server indices")
            np.add.at(counts, list(p), 1)
        over = np.flatnonzero(counts > self.cluster.gpus)
        if over.size:
            s = int(over[0])
            raise PolicyError(f"{self.policy.name}: server {s} given {int(counts[s])} workers, capacity {int(self.cluster.gpus[s])}")

    def _materialize(self, js: JobState, t: float) -> None:
        """Fold measured progress up to ``t`` into ``js`` (as the simulator's ``_materialize``)."""
        js.attained_gpu_s = js.attained_at(t)
        att = self.by_job.get(js.job_id)
        if att is not None:
            js.done_samples = float(min(js.job.work_samples, max(att.samples, att.start_samples)))
            recent = att.times[-50:]
            if len(recent) >= MIN_STEPS:
                js.rate_sps = att.world * js.job.local_bsz / statistics.median(recent)
            elif att.predicted_step_s > 0:
                js.rate_sps = att.world * js.job.local_bsz / att.predicted_step_s
        else:
            js.rate_sps = 0.0
        js.mark_s = t
        js.run_from_s = t

    def _launch(self, js: JobState, p: Placement, t: float) -> None:
        j = self.jobs[js.job_id]
        shape = self.speed.shape(p)
        pred = self.predicted_step_s(j, p)
        prev_workers = self.counters[js.job_id]["last_workers"]
        ran_before = js.first_start_s is not None
        if ran_before:
            js.restarts += 1
        else:
            js.first_start_s = t
        resized = ran_before and prev_workers and prev_workers != len(p)
        if resized:
            self.counters[js.job_id]["resizes"] += 1
        self.counters[js.job_id]["last_workers"] = len(p)
        choice = self._choose_checkpoint(js.job_id, self.journal.checkpoints(js.job_id), t)
        start_samples = choice.samples
        if start_samples < js.ckpt_samples:  # its newest checkpoint was corrupt: the work since is lost
            js.lost_samples += js.ckpt_samples - start_samples
            self.journal.update_job(js.job_id, lost_samples=js.lost_samples)
        js.done_samples = js.ckpt_samples = start_samples
        aid = self.journal.start_attempt(js.job_id, p, servers=shape[1], max_per_server=shape[2], local_bsz=j.local_bsz,
                                         model=j.model, started_s=t, start_samples=start_samples, predicted_step_s=pred,
                                         informed=j.model in self.fitted)
        att = Attempt(aid, j, p, t, pred, start_samples, samples=start_samples, launched_mono=self.clock(),
                      resume_seq=choice.row["seq"] if choice.row else None)
        js.placement = p
        js.last_start_s = t
        js.mark_s = js.run_from_s = t
        js.rate_sps = len(p) * j.local_bsz / pred
        self.alloc[js.job_id] = p
        self.live[aid] = att
        self.by_job[js.job_id] = att
        self.journal.update_job(js.job_id, restarts=js.restarts, first_start_s=js.first_start_s,
                                resizes=self.counters[js.job_id]["resizes"], last_workers=len(p),
                                done_samples=js.done_samples)
        what = (f"resize {prev_workers} -> {len(p)} workers" if resized else
                ("restart" if ran_before else "start") + f" on {len(p)} worker(s)")
        where = " ".join(map(str, p))
        self.journal.event(t, js.job_id, "resize" if resized else ("restart" if ran_before else "start"),
                           f"{what}, servers [{where}], predicted step {pred * 1e3:.1f} ms")
        self.notify(f"{js.job_id}: {what} on servers [{where}] (predicted step {pred * 1e3:.1f} ms)")
        config = {"job": j.name, "attempt": aid, "entry": j.entry, "paths": list(j.paths), "local_bsz": j.local_bsz,
                  "work_samples": j.work_samples, "seed": j.seed, "args": j.args, "placement": list(p),
                  "ckpt_dir": str(self._ckpt_dir(j.name)), "resume": choice.resume(),
                  "ckpt_every_s": self.cfg.ckpt_every_s,
                  "report_every_s": self.cfg.report_every_s, "timeout_s": self.cfg.worker_timeout_s,
                  "log_dir": str(self.log_dir / j.name)}
        try:
            self.launcher.start(att, config)
        except LauncherError:
            raise
        except Exception as e:  # noqa: BLE001 - a launch failure is an infrastructure failure of the attempt
            att.errors.append({"ev": "error", "kind": "launch", "error": f"{type(e).__name__}: {e}", "rank": -1})
            self._end(att)
            return
        if att.pids:
            self.journal.update_attempt(aid, pids=att.pids, host=att.host)

    def _stop(self, att: Attempt) -> None:
        att.state = "stopping"
        att.stop_sent_at = self.clock()
        self.launcher.stop(att)

    def _wait_stopped(self) -> None:
        while any(a.state == "stopping" for a in self.live.values()):
            self._pump(0.05)
            if self.on_tick is not None:
                self.on_tick(self)

    # ------------------------------------------------------------------ events
    def _pump(self, timeout_s: float) -> None:
        for aid, rank, ev in self.launcher.poll(timeout_s):
            att = self.live.get(aid)
            if att is not None:
                self._on_event(att, rank, ev)
        now = self.clock()
        for att in list(self.live.values()):
            if (att.state == "stopping" and not att.kill_sent and att.stop_sent_at is not None
                    and now - att.stop_sent_at > self.cfg.stop_timeout_s):
                att.kill_sent = True
                self.notify(f"{att.job.name}: did not stop within {self.cfg.stop_timeout_s:g} s; killed")
                self.launcher.kill(att)

    def _on_event(self, att: Attempt, rank: int, ev: dict) -> None:
        kind = ev.get("ev")
        jid = att.job.name
        t = self.now()
        if kind in ("spawned", "started") and ev.get("pid") and int(ev["pid"]) not in att.pids:
            att.pids.append(int(ev["pid"]))
            self.journal.update_attempt(att.id, pids=att.pids)
        if kind == "started":
            if ev.get("node"):
                att.nodes[rank] = str(ev["node"])
                if len(att.nodes) == att.world:
                    att.host = " ".join(att.nodes[r] for r in range(att.world))
                    self.journal.update_attempt(att.id, host=att.host)
            if rank == 0:  # it resumed where the journal said (the worker checked): start_samples stands
                att.step = int(ev.get("step", 0))
                self.startup_s.append(self.clock() - att.launched_mono)
        elif kind == "progress":
            att.samples = float(ev["samples"])
            att.step = int(ev["step"])
            att.times.extend(float(x) for x in ev.get("times", ()))
            losses = [float(x) for x in ev.get("losses", ()) if math.isfinite(float(x))]
            if losses:
                if self.loss_first[jid] is None:
                    self.loss_first[jid] = float(np.mean(losses[:10]))
                self.loss_last[jid] = float(np.mean(losses[-10:]))
                point = (att.step, float(np.mean(losses)))
                self.losses[jid].append(point)
                self.journal.add_losses(jid, [point])
                self.journal.update_job(jid, loss_first=self.loss_first[jid], loss_last=self.loss_last[jid])
        elif kind == "checkpoint":
            self._on_checkpoint(att, ev, t)
        elif kind == "ckpt-failed" and ev.get("errno") in STATE_WRITE_ERRNOS and not self.write_failed:
            # the state directory is full or failing: the run cannot keep anyone's work; end it
            # (the journal keeps its last consistent state, the previous checkpoints stay)
            self.write_failed = True
            raise write_failure(Path(str(ev.get("path", self.ckpt_dir))), OSError(ev["errno"], os.strerror(ev["errno"])))
        elif kind in ("done", "stopped"):
            att.samples = float(ev.get("samples", att.samples))
            if rank == 0:
                att.ended_hint = kind
        elif kind == "error":
            att.errors.append(dict(ev, rank=rank))
            if att.state != "ended" and not att.kill_sent:
                self._kill_rest(att)
        elif kind == "exit":
            att.exits[rank] = int(ev.get("rc", -1))
            if att.exits[rank] != 0 and att.ended_hint != "done" and not att.kill_sent:
                self._kill_rest(att)
            if len(att.exits) >= att.world:
                self._end(att)

    def _on_checkpoint(self, att: Attempt, ev: dict, t: float) -> None:
        """Journal a checkpoint (its checksum; progress capped at the job's work) and delete the
        files of all but the last two good ones."""
        jid = att.job.name
        js = self.states[jid]
        work = att.job.work_samples
        samples = float(ev["samples"])
        done = bool(ev.get("done"))
        path = Path(str(ev.get("path", "")))
        if (samples < att.start_samples or samples > work + att.world * att.job.local_bsz or (done and samples < work)
                or path.parent != self._ckpt_dir(jid)):  # the journal names files in the job's folder only
            self.notify(f"{jid}: ignored an implausible checkpoint report ({int(samples)} samples, {path})")
            return
        js.ckpt_samples = min(samples, float(work))
        self.journal.add_checkpoint(jid, att.id, int(ev["step"]), js.ckpt_samples, done, str(path), t,
                                    sha256=str(ev.get("sha256", "")), size_bytes=int(ev.get("bytes", 0)))
        self.journal.update_job(jid, ckpt_samples=js.ckpt_samples)
        ckpt_store.prune(self.journal.checkpoints(jid))

    def _kill_rest(self, att: Attempt) -> None:
        """One worker failed: the ring is broken, the others cannot go on."""
        att.kill_sent = True
        att.state = "stopping" if att.state == "running" else att.state
        if att.stop_sent_at is None:
            att.stop_sent_at = self.clock()
        self.launcher.kill(att)

    def _measurement(self, att: Attempt) -> Measurement | None:
        m = att.measured_step_s()
        if m is None:
            return None
        _, k, d, _ = self.speed.shape(att.placement)
        return Measurement(att.world, k, d, att.job.local_bsz, m, len(att.times))

    def _end(self, att: Attempt) -> None:
        t = self.now()
        jid = att.job.name
        js = self.states[jid]
        if att.state == "stopping" and att.stop_sent_at is not None and att.ended_hint == "stopped":
            self.stop_s.append(self.clock() - att.stop_sent_at)
        att.state = "ended"
        self.live.pop(att.id, None)
        if self.by_job.get(jid) is att:
            del self.by_job[jid]
        end = faults.classify(att.exits, att.errors, att.ended_hint)
        att.samples = min(att.samples, float(att.job.work_samples))
        m = self._measurement(att)
        if m is not None:
            self._add_measurement(att.job.model, m)
        self.journal.update_attempt(att.id, ended_s=t, outcome=end.outcome, end_samples=att.samples,
                                    measured_step_s=m.step_s if m else None, measured_steps=m.steps if m else 0,
                                    error=end.error, fault=end.fault)
        # the job's state at t
        js.attained_gpu_s = js.attained_at(t)
        js.mark_s = js.run_from_s = t
        js.last_stop_s = t
        js.placement = ()
        js.rate_sps = 0.0
        self.alloc.pop(jid, None)
        if end.outcome == "done":
            self.consecutive_faults[jid] = 0
            js.done_samples = float(js.job.work_samples)
            self._mark_completed(js, t)
        elif end.outcome == "failed":
            js.done_samples = float(att.samples)
            js.status, js.reason = "failed", end.error
            js.finish_s = t
            self.journal.update_job(jid, status="failed", reason=end.error, finish_s=t, done_samples=js.done_samples,
                                    attained_gpu_s=js.attained_gpu_s)
            self.journal.event(t, jid, "failed", end.error)
            self.notify(f"{jid}: failed: {end.error}")
            self.ended(js)
        elif end.outcome == "stopped":
            self.consecutive_faults[jid] = 0
            js.done_samples = js.ckpt_samples = float(att.samples)
            self.journal.update_job(jid, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)
        else:
            self._on_fault(att, end, t)

    def _on_fault(self, att: Attempt, end: faults.Ending, t: float) -> None:
        """A crash or an infrastructure fault: back to the queue (after a backoff) from the
        last good checkpoint; only repeated crashes (not infrastructure faults) fail a job."""
        jid = att.job.name
        js = self.states[jid]
        if any(e.get("kind") == "ckpt" for e in att.errors) and att.resume_seq is not None:
            self.journal.mark_checkpoint_bad(att.resume_seq)  # failed verification in the worker
        ck_samples = ckpt_store.choose(self.journal.checkpoints(jid)).samples
        js.failures += 1
        infra = self.counters[jid]["infra_faults"] + (end.fault == "infra")
        self.counters[jid]["infra_faults"] = infra
        js.lost_samples += max(0.0, att.samples - ck_samples)
        js.done_samples = js.ckpt_samples = ck_samples
        n = self.consecutive_faults[jid] = self.consecutive_faults.get(jid, 0) + 1
        if end.fault == "crash" and js.failures - infra >= self.cfg.max_failures:
            js.status = "failed"
            js.reason = f"workers crashed {js.failures - infra} times; last: {end.error}"
            js.finish_s = t
            self.journal.update_job(jid, status="failed", reason=js.reason, finish_s=t)
            self.notify(f"{jid}: failed: {js.reason}")
            self.ended(js)
        else:
            wait = faults.backoff_s(n)
            self.retry_at[jid] = t + wait
            self.notify(f"{jid}: {end.fault} fault ({end.error}); retried in {wait:g} s from its checkpoint "
                        f"at {int(ck_samples)} samples")
        self.journal.update_job(jid, failures=js.failures, infra_faults=infra, lost_samples=js.lost_samples,
                                done_samples=js.done_samples, ckpt_samples=js.ckpt_samples,
                                attained_gpu_s=js.attained_gpu_s)
        self.journal.event(t, jid, "infra" if end.fault == "infra" else "crash", end.error or "")

    def ended(self, js: JobState) -> None:
        """The job left for good: the policy's scratch state for it is released."""
        js.extra.clear()
        self.policy.on_finish(js.job_id)

    def _mark_completed(self, js: JobState, t: float, note: str = "") -> None:
        jid = js.job_id
        self.ended(js)
        js.status = "completed"
        js.finish_s = t
        js.done_samples = float(js.job.work_samples)
        self.counters[jid]["completions"] += 1
        self.journal.update_job(jid, status="completed", finish_s=t, done_samples=js.done_samples,
                                attained_gpu_s=js.attained_gpu_s, completions=self.counters[jid]["completions"])
        self.journal.event(t, jid, "completed", note)
        self.notify(f"{jid}: completed" + (f" ({note})" if note else "")
                    + (f", loss {self.loss_first[jid]:.3g} -> {self.loss_last[jid]:.3g}"
                       if self.loss_first[jid] is not None and self.loss_last[jid] is not None else ""))

    # ------------------------------------------------------------------ report
    def summary(self) -> dict:
        from ringsched.backends.run_summary import summarize  # it reads the controller: imported late

        return summarize(self)
