"""Real execution: the real cluster as a ``World`` of the shared ``DecisionLoop``.

The loop calls the policy exactly as in the simulator (``ringsched.loop``): it admits
arrivals, asks ``optimize`` after something changed (an attempt ended, a job was submitted or
released, a backoff expired, the speed model was refitted), at slot boundaries for periodic
policies, and at the time ``wakeup_s`` names when nothing else would happen; it checks the
answer once. What differs from the simulator is where progress comes from: each job's
``JobState`` is kept current from what its workers report, and the speed model the policy
plans with is refitted online from measured step times (``online_model``).

A backend is only a ``Launcher`` (``launcher``). Applying a decision: every job whose
placement changed is asked to stop (its rank 0 checkpoints), the controller waits until those
workers are gone (``attempts``), then starts each job at its new placement from its
checkpoint. Everything durable goes to the SQLite journal, so a new controller on the same
state directory resumes every job from its last checkpoint (``recovery``).
"""

from __future__ import annotations

import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ringsched.backends import ckpt_store, faults, outcomes, signals
from ringsched.backends.attempts import Attempts
from ringsched.backends.gpu_slots import assign_slots
from ringsched.backends.jobs_file import RunJob, jobs_digest
from ringsched.backends.journal import Journal, StateWriteError
from ringsched.backends.launcher import MIN_STEPS, Attempt, Launcher, LauncherError
from ringsched.backends.online import ONLINE_DIGEST, TERMINAL, CommandSource, apply_commands, online_check_journal
from ringsched.backends.online_model import OnlineModel
from ringsched.backends.recovery import check_journal, choose_checkpoint, recover
from ringsched.cluster.model import Cluster
from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.loop import Change, DecisionLoop, Roster, isolated_run_s, waiting_reason
from ringsched.perfmodel.speed import Placement
from ringsched.policies.base import JobState, Nodes, Policy

__all__ = ["Attempt", "Controller", "Launcher", "LauncherError", "RunConfig", "TERMINAL", "check_journal"]


@dataclass
class RunConfig:
    slot_s: float = 5.0
    ckpt_every_s: float = 10.0
    stop_timeout_s: float = 60.0
    max_failures: int = 3  # a job whose workers crash this many times fails
    report_every_s: float = 0.5
    worker_timeout_s: float = 120.0
    restart_s: float = 5.0  # expected cost of a placement change until stops and starts are measured


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
        self.clock = clock  # monotonic seconds (a test's launcher may drive a fake one)
        self.model = OnlineModel(cluster, self.cfg.restart_s)
        self.roster = Roster(policy)
        self.attempts = Attempts(launcher, journal, self.model, self, clock=clock, ckpt_folder=self.ckpt_folder,
                                 stop_timeout_s=self.cfg.stop_timeout_s, notify=self.notify)
        self.loop = DecisionLoop(self, policy, slot_s=self.cfg.slot_s)
        self.states: dict[str, JobState] = {}
        self.alloc: dict[str, Placement] = {}  # placements of live attempts of jobs in the view
        self.losses: dict[str, list[tuple[int, float]]] = {}
        self.loss_first: dict[str, float | None] = {}
        self.loss_last: dict[str, float | None] = {}
        self.counters: dict[str, dict] = {}
        self.interrupted: int | None = None  # the signal that ended the run early
        self.retry_at: dict[str, float] = {}  # job -> earliest time of its next launch (backoff)
        self.consecutive_faults: dict[str, int] = {}
        self._changed = False  # something the policy should hear of happened since the last decision
        self._woken = False  # a submission or release came while this decision waited for stops
        self._t0 = clock()
        self._offset = 0.0
        self.wall0 = time.perf_counter()
        for j in jobs:  # every job type starts from the CPU prior, refitted as steps are measured
            self.add_prior(j.model)

    # ------------------------------------------------------------------ parts, clock
    speed = property(lambda self: self.model.speed)
    fitted = property(lambda self: self.model.fitted)
    live = property(lambda self: self.attempts.live)
    by_job = property(lambda self: self.attempts.by_job)
    decisions = property(lambda self: self.loop.decisions)

    def add_prior(self, model: str) -> None:
        self.model.add_prior(model)

    def now(self) -> float:
        return self._offset + (self.clock() - self._t0)

    def resume_clock(self, at_s: float) -> None:
        """Recovery: the clock goes on from ``at_s``."""
        self._offset, self._t0 = at_s, self.clock()

    def ckpt_folder(self, job: str) -> Path:
        return self.journal.dir / "ckpt" / job

    # ------------------------------------------------------------------ setup
    def _setup(self) -> None:
        digest = jobs_digest(list(self.jobs.values()))
        order = sorted(self.jobs.values(), key=lambda j: (j.arrival_s, j.name))
        for n, j in enumerate(order):
            self.register(j, n)
        resuming = (online_check_journal(self.journal, self.cluster_spec) if self.commands is not None
                    else check_journal(self.journal, list(self.jobs.values()), self.cluster_spec))
        if not resuming:
            self.journal.set_meta(jobs_digest=ONLINE_DIGEST if self.commands is not None else digest,
                                  cluster=self.cluster_spec, backend=self.launcher.name, policy=self.policy.name,
                                  jobs_source=self.jobs_source, clock_s=0.0, created=time.time())
            for j in order:
                self.journal.add_job(j.name, j.to_dict())
        else:
            recover(self, self.journal.meta())
        for js in sorted(self.states.values(), key=lambda s: s.index):
            if js.status == "active":  # (admitted before the restart)
                self.roster.active[js.job_id] = js

    def _job_view(self, j: RunJob) -> tuple[Job, float]:
        """The job as policies see it, and its isolated time (as the simulator defines it)."""
        iso = isolated_run_s(j.to_job(1.0), self.cluster, self.speed)
        return j.to_job(iso), iso

    def register(self, j: RunJob, index: int) -> JobState:
        """A job's in-memory state (the batch's jobs at setup; online, each submission)."""
        job, iso = self._job_view(j)
        js = self.states[j.name] = JobState(job, index, iso)
        self.losses[j.name] = []
        self.loss_first[j.name] = self.loss_last[j.name] = None
        self.counters[j.name] = {"resizes": 0, "completions": 0, "last_workers": 0, "infra_faults": 0}
        return js

    # ------------------------------------------------------------------ the run
    def run(self) -> dict:
        self._setup()
        try:
            self.loop.run(self.now())
            if self.loop.idle_end:
                self._label_waiting(self.now())
        except (KeyboardInterrupt, signals.Interrupted) as e:
            # a KeyboardInterrupt re-raised on the way (not our Interrupted) lost its signal: the
            # handler's record says which one it was, as the exit code does (cli/errors.py)
            self.interrupted = getattr(e, "signum", None) or signals.received or signal.SIGINT
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
                ckpt_store.remove_temporaries(self.journal.dir / "ckpt")  # of workers killed mid-write
        return self.summary()

    def _label_waiting(self, t: float) -> None:
        """Nothing runs and nothing can change: the jobs left wait forever; say why."""
        for js in list(self.roster.active.values()):
            js.status = "waiting"
            js.reason = waiting_reason(js, self.policy.name)
            self.journal.event(t, js.job_id, "waiting", js.reason)
            self.notify(f"{js.job_id}: {js.reason}")

    def _stop_all(self) -> None:
        for att in list(self.live.values()):
            if att.state == "running":
                self.attempts.stop(att)
        self._wait_stopped()
        for js in self.states.values():
            if js.status not in TERMINAL:
                self._materialize(js, self.now())
                self.journal.update_job(js.job_id, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)

    def _wait_stopped(self) -> None:
        """Wait for the stopping attempts, taking users' commands meanwhile (a hold or a cancel
        is not kept waiting behind a checkpoint; a submission is decided on next)."""
        def tick() -> None:
            if self.commands is not None and apply_commands(self, self.commands.drain(), self.now()):
                self._woken = True
            if self.on_tick is not None:
                self.on_tick(self)

        self.attempts.wait_stopped(tick)

    def stop_job(self, job_id: str) -> None:
        """A user's cancel or hold: the job leaves the view; its workers checkpoint and stop."""
        self.alloc.pop(job_id, None)
        att = self.by_job.get(job_id)
        if att is not None and att.state == "running":
            self.attempts.stop(att)  # rank 0 checkpoints; the attempt ends "stopped"

    # ------------------------------------------------------------------ the World the loop sees
    def workload(self) -> list[Job]:
        return [js.job for js in self.states.values()]

    def nodes(self, t: float) -> Nodes:
        return Nodes(self.cluster, self.servers_up(), t, self.cfg.slot_s, self.speed, self.model.restart_estimate_s())

    def servers_up(self) -> np.ndarray:
        return np.ones(self.cluster.num_servers, dtype=bool)

    def gpus_used(self) -> np.ndarray:
        used = np.zeros(self.cluster.num_servers, dtype=np.int64)
        for p in self.alloc.values():
            np.add.at(used, list(p), 1)
        return used

    def _by_index(self, jobs) -> list[JobState]:
        return sorted(jobs, key=lambda s: s.index)

    def arrivals(self, t: float) -> list[JobState]:
        return self._by_index(js for js in self.states.values() if js.status == "pending" and js.job.arrival_s <= t)

    def admitted(self, js: JobState, t: float) -> None:
        self.journal.update_job(js.job_id, status="active")

    def rejected(self, js: JobState, t: float) -> None:
        self.journal.update_job(js.job_id, status="rejected", reason=js.reason)
        self.journal.event(t, js.job_id, "rejected", js.reason)
        self.notify(f"{js.job_id}: rejected: {js.reason}")

    def next_arrival_s(self) -> float | None:
        return min((js.job.arrival_s for js in self.states.values() if js.status == "pending"), default=None)

    def _backing_off(self, t: float) -> list[float]:
        return [r for jid, r in self.retry_at.items() if r > t and self.states[jid].status == "active"]

    def pending(self) -> bool:
        return bool(self.live) or self.next_arrival_s() is not None or (
            self.commands is not None and not self.commands.closed)

    def idle(self) -> bool:
        return (not self.live and self.commands is None and not self._backing_off(self.now())
                and self.next_arrival_s() is None)

    def next_event_s(self) -> float | None:
        t = self.now()
        cands = self._backing_off(t)
        if self.live or self.commands is not None:  # workers report, users submit: look again next slot
            cands.append(self.loop.boundary_past(t))
        return min(cands, default=None)

    def view(self) -> dict[str, JobState]:
        # a job retried after a fault waits out its backoff before the policy sees it again
        t = self.now()
        return {js.job_id: js for js in self._by_index(self.roster.active.values())
                if self.retry_at.get(js.job_id, 0.0) <= t}

    def fold(self, jobs, t: float) -> None:
        for js in jobs:
            self._materialize(js, t)
            self.journal.update_job(js.job_id, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)

    def record(self, t: float) -> None:
        self.journal.set_meta(clock_s=t)

    def advance(self, t: float, until_s: float, *, stop_at_first: bool = True) -> tuple[float, bool]:
        """Take workers' reports and users' commands until ``until_s`` (or, with
        ``stop_at_first``, the first that changes what the policy should decide)."""
        version = self.speed.version
        while True:
            self.attempts.pump(0.05)
            now = self.now()
            if self.commands is not None and apply_commands(self, self.commands.drain(), now):
                self._changed = True  # a submission or a release is decided on at once
            if self.on_tick is not None:
                self.on_tick(self)
            if (self._changed and stop_at_first) or now >= until_s:
                break
        self.attempts.refresh_model()
        expired = any(t < r <= now and self.states[jid].status == "active" for jid, r in self.retry_at.items())
        changed = self._changed or expired or self.speed.version != version
        self._changed = False
        return now, changed

    def apply(self, changes: list[Change], t: float) -> None:
        """Stop every changed job's attempt, wait until they are gone, start the new placements."""
        if not changes:
            return
        plan = dict(self.alloc)
        for jid, _, p in changes:
            if p:
                plan[jid] = p
            else:
                plan.pop(jid, None)
        self.journal.add_plan(t, plan)
        for jid, _, _ in changes:
            att = self.by_job.get(jid)
            if att is not None and att.state == "running":
                self.attempts.stop(att)
        self._wait_stopped()
        t = self.now()
        for jid, old, p in changes:
            js = self.states[jid]
            if js.status != "active" or jid in self.by_job:
                continue  # finished or failed meanwhile
            if p:
                self._launch(js, p, t)
            elif old:
                js.preemptions += 1
                self.journal.update_job(jid, preemptions=js.preemptions)
                self.journal.event(t, jid, "preempt", "")
                self.notify(f"{jid}: preempted")
        # what ended meanwhile was this decision's own doing; a submission or release was not
        self._changed, self._woken = self._woken, False

    # ------------------------------------------------------------------ progress and launches
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
        pred = self.model.predicted_step_s(j, p)
        counters = self.counters[js.job_id]
        prev_workers = counters["last_workers"]
        ran_before = js.first_start_s is not None
        if ran_before:
            js.restarts += 1
        else:
            js.first_start_s = t
        resized = ran_before and prev_workers and prev_workers != len(p)
        if resized:
            counters["resizes"] += 1
        counters["last_workers"] = len(p)
        choice = choose_checkpoint(self, js.job_id, self.journal.checkpoints(js.job_id), t)
        start_samples = choice.samples
        if start_samples < js.ckpt_samples:  # its newest checkpoint was corrupt: the work since is lost
            js.lost_samples += js.ckpt_samples - start_samples
            self.journal.update_job(js.job_id, lost_samples=js.lost_samples)
        js.done_samples = js.ckpt_samples = start_samples
        aid = self.journal.start_attempt(js.job_id, p, servers=shape[1], max_per_server=shape[2], local_bsz=j.local_bsz,
                                         model=j.model, started_s=t, start_samples=start_samples, predicted_step_s=pred,
                                         informed=j.model in self.fitted)
        slots = assign_slots(p, ((a.placement, a.slots) for a in self.attempts.live.values()), self.cluster.gpus)
        att = Attempt(aid, j, p, t, pred, start_samples, samples=start_samples, launched_mono=self.clock(),
                      resume_seq=choice.row["seq"] if choice.row else None, slots=slots)
        js.placement = p
        js.last_start_s = t
        js.mark_s = js.run_from_s = t
        js.rate_sps = len(p) * j.local_bsz / pred
        self.alloc[js.job_id] = p
        self.attempts.add(att)
        self.journal.update_job(js.job_id, restarts=js.restarts, first_start_s=js.first_start_s,
                                resizes=counters["resizes"], last_workers=len(p), done_samples=js.done_samples)
        what = (f"resize {prev_workers} -> {len(p)} workers" if resized else
                ("restart" if ran_before else "start") + f" on {len(p)} worker(s)")
        where = " ".join(map(str, p))
        self.journal.event(t, js.job_id, "resize" if resized else ("restart" if ran_before else "start"),
                           f"{what}, servers [{where}], predicted step {pred * 1e3:.1f} ms")
        self.notify(f"{js.job_id}: {what} on servers [{where}] (predicted step {pred * 1e3:.1f} ms)")
        self._start(att, j, choice)

    def _start(self, att: Attempt, j: RunJob, choice: ckpt_store.Choice) -> None:
        config = {"job": j.name, "attempt": att.id, "entry": j.entry, "paths": list(j.paths), "local_bsz": j.local_bsz,
                  "work_samples": j.work_samples, "seed": j.seed, "args": j.args, "placement": list(att.placement),
                  "slots": list(att.slots), "gpus_per_server": [int(g) for g in self.cluster.gpus],
                  "ckpt_dir": str(self.ckpt_folder(j.name)), "resume": choice.resume(),
                  "ckpt_every_s": self.cfg.ckpt_every_s,
                  "report_every_s": self.cfg.report_every_s, "timeout_s": self.cfg.worker_timeout_s,
                  "stop_timeout_s": self.cfg.stop_timeout_s,
                  "log_dir": str(self.journal.dir / "logs" / j.name)}
        try:
            self.launcher.start(att, config)
        except LauncherError:
            raise
        except Exception as e:  # noqa: BLE001 - a launch failure is an infrastructure failure of the attempt
            att.errors.append({"ev": "error", "kind": "launch", "error": f"{type(e).__name__}: {e}", "rank": -1})
            self.attempts.end(att)
            return
        if att.pids:
            self.journal.update_attempt(att.id, pids=att.pids, host=att.host)

    # ------------------------------------------------------------------ what attempts report
    def checkpointed(self, job_id: str, samples: float) -> None:
        self.states[job_id].ckpt_samples = samples

    def losses_reported(self, job_id: str, step: int, losses: list[float]) -> None:
        self.record_losses(job_id, [(step, float(np.mean(losses)))], float(np.mean(losses[:10])),
                           float(np.mean(losses[-10:])))

    def record_losses(self, job_id: str, points: list[tuple[int, float]], first: float | None,
                      last: float | None) -> None:
        """Keep and journal a job's loss points; ``first`` becomes its first loss if it has
        none, ``last`` (when known) its last one. Reports and adopted checkpoints
        (``recovery.adopt_losses``) both end here."""
        if self.loss_first[job_id] is None:
            self.loss_first[job_id] = first
        if last is not None:
            self.loss_last[job_id] = last
        self.losses[job_id].extend(points)
        self.journal.add_losses(job_id, points)
        self.journal.update_job(job_id, loss_first=self.loss_first[job_id], loss_last=self.loss_last[job_id])

    def attempt_ended(self, att: Attempt, end: faults.Ending, t: float) -> None:
        self._changed = True  # its GPUs are free
        outcomes.attempt_ended(self, att, end, t)

    def mark_completed(self, js: JobState, t: float, note: str = "") -> None:
        outcomes.mark_completed(self, js, t, note)

    # ------------------------------------------------------------------ report
    def summary(self) -> dict:
        from ringsched.backends.run_summary import summarize  # it reads the controller: imported late

        return summarize(self)
