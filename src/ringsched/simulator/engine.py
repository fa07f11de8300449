"""The trace-driven cluster simulator (design brief, section 7).

Time is cut into slots of ``slot_s`` seconds. At a slot boundary the policy decides (through
its one ``optimize`` method) the placement of every active job; inside a slot jobs progress
at the speed the performance model gives their placement, and a job that finishes inside a
slot finishes at its exact time (its GPUs are reused from the next boundary on).

The loop that decides when the policy is asked, admits jobs and checks answers is
``ringsched.loop.DecisionLoop``, shared with real execution; ``Simulator`` is its simulated
world. Why it is fast: progress is stored lazily per job (``JobState``), completions sit in a heap,
and when nothing can change the simulator jumps straight to the next boundary at which
something happens (an arrival, a completion, a failure or repair) instead of stepping
through idle slots. Policies marked ``periodic`` are asked at every boundary while jobs are
active.

Modelled costs and events:

* checkpoint-restart: a job whose placement changes (resize, migration, resume after a
  preemption or failure) makes no progress for ``restart_s`` seconds, holding its GPUs;
* failures: with ``mtbf_h``, every server fails after exponential times (mean ``mtbf_h``)
  and is repaired after exponential times (mean ``mttr_h``); jobs on it lose the work done
  since their last checkpoint (every ``checkpoint_s`` of running, and at every placement
  change) and go back to the queue;
* contention (optional): rings crossing the same NIC or rack uplink share it max-min fairly
  in the simulated world, while policies still plan with their own model.
"""

from __future__ import annotations

import heapq
import math
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ringsched.cluster.model import Cluster
from ringsched.job import Job
from ringsched.utility.energy import EnergyModel
from ringsched.perfmodel.speed import Placement, SpeedModel
from ringsched.loop import Change, DecisionLoop, Roster, isolated_run_s, waiting_reason
from ringsched.policies.base import JobState, Nodes, Policy
from ringsched.simulator.contention import fair_shares
from ringsched.simulator.rates import Rates
from ringsched.simulator.estimates import Estimates, estimates_from_text, reestimate
from ringsched.simulator.result import SimResult, build_result


@dataclass(frozen=True)
class SimConfig:
    slot_s: float = 300.0
    restart_s: float = 30.0
    checkpoint_s: float = 1800.0
    mtbf_h: float | None = None
    mttr_h: float = 2.0
    contention: bool = False
    seed: int = 0
    horizon_s: float | None = None
    # decide at arrivals and completions too, not only at slot boundaries (docs/metrics.md):
    # a job's JCT then does not include a wait for the next boundary. Off by default until the
    # tests of GADGET and of the objectives, stated in the slotted world, are restated; the
    # suite (experiment/suite.py) turns it on
    decide_at_events: bool = True
    # what policies know of each job's work (docs/metrics.md, "Duration knowledge"); a spec
    # text (exact | lognormal:SIGMA | user:FACTOR) is parsed
    estimates: Estimates | str = field(default_factory=Estimates)
    energy: EnergyModel = field(default_factory=EnergyModel)
    # stop_rule(job_state, now_s) -> True: the job is done early (objectives' convergence);
    # evaluated at every slot boundary while jobs run, before the policy decides
    stop_rule: Callable[[JobState, float], bool] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.estimates, str):
            object.__setattr__(self, "estimates", estimates_from_text(self.estimates))
        for name in ("slot_s", "checkpoint_s", "mttr_h"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v}")
        if not (math.isfinite(self.restart_s) and self.restart_s >= 0):
            raise ValueError(f"restart_s must be >= 0, got {self.restart_s}")
        if self.mtbf_h is not None and not (math.isfinite(self.mtbf_h) and self.mtbf_h > 0):
            raise ValueError(f"mtbf_h must be a positive number, got {self.mtbf_h}")


ProgressFn = Callable[[float, int, int], None]
"""progress(simulated_time_s, jobs_finished, jobs_total)."""


class Simulator:
    """One simulation of ``jobs`` on ``cluster`` under ``policy``: the simulated ``World`` of a
    ``DecisionLoop``. Call ``run()`` once.

    The loop's stall guard (``DecisionLoop.stall_limit``) ends a run whose simulated time stops
    advancing; ``stalled_at_s`` says when, and every job is kept as it stood (docs/metrics.md)."""

    def __init__(self, jobs: Sequence[Job], cluster: Cluster, policy: Policy,
                 config: SimConfig | None = None, *, progress: ProgressFn | None = None,
                 speed: SpeedModel | None = None):
        self.cluster = cluster
        self.policy = policy
        self.cfg = config or SimConfig()
        self.speed = speed or SpeedModel(cluster)
        self.progress = progress
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, jobs[i].job_id))
        true_jobs = [jobs[i] for i in order]
        # The world's truth, kept here and never on anything a policy is shown: the work each
        # job really needs, its isolated time and its utility (the run is judged by it).
        # Policies see Jobs carrying the estimate.
        self._work = [j.work_samples for j in true_jobs]
        self._isolated = [self._isolated_s(j) for j in true_jobs]
        self._utility = [j.utility for j in true_jobs]
        shown = self.cfg.estimates.apply(true_jobs, self.cfg.seed)
        self.first_estimate = [j.work_samples for j in shown]
        self.states = [JobState(j, n, self._isolated_s(j)) for n, j in enumerate(shown)]
        self.reestimates = [0] * len(shown)
        self.rates = Rates(self.speed, self._work)  # running jobs' rates and progress
        ids = [js.job_id for js in self.states]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        n = cluster.num_servers
        self.up = np.ones(n, dtype=bool)
        self.used = np.zeros(n, dtype=np.int64)
        self.busy = 0  # GPUs in use (= used.sum())
        self.roster = Roster(policy)
        self.active = self.roster.active  # in arrival order
        self.alloc: dict[str, Placement] = {}
        self.loop = DecisionLoop(self, policy, slot_s=self.cfg.slot_s, decide_at_events=self.cfg.decide_at_events,
                                 horizon_s=self.cfg.horizon_s, stop_rule=self.cfg.stop_rule)
        self._next = 0  # next arrival (index into states)
        self._done_heap: list[tuple[float, int, int]] = []
        self._fail_heap: list[tuple[float, int, str]] = []
        self._rng = np.random.default_rng(self.cfg.seed)
        self._last_acc_s = 0.0
        self._last_report = 0.0
        self.last_busy_s: float | None = None  # the last time any GPU was held
        self.busy_gpu_s = 0.0
        # (time, busy_gpu_s) at every accumulation: GPUs held change only there, so the curve
        # between two points is a line and held_gpu_s_until reads it exactly
        self._held_t_s, self._held_gpu_s = array("d"), array("d")
        self.powered_server_s = 0.0
        self.powered_gpu_s = 0.0
        self.timeline: list[tuple] = []
        self.changes: list[tuple] = []
        self.interrupted = False
        self.server_failures = 0

    @property
    def finished(self) -> int:
        return self.roster.finished

    @property
    def decisions(self) -> int:
        return self.loop.decisions

    @property
    def decision_wall_s(self) -> float:
        return self.loop.decision_wall_s

    @property
    def stalled_at_s(self) -> float | None:
        return self.loop.stalled_at_s

    # ---------------------------------------------------------------- helpers
    def _isolated_s(self, job: Job) -> float:
        return isolated_run_s(job, self.cluster, self.speed)

    def _accumulate(self, t: float) -> None:
        dt = t - self._last_acc_s
        if dt > 0:
            busy = self.busy
            powered = self.used > 0
            self.busy_gpu_s += busy * dt
            self.powered_server_s += int(powered.sum()) * dt
            self.powered_gpu_s += int(self.cluster.gpus[powered].sum()) * dt
            if busy:
                self.last_busy_s = t
            self._last_acc_s = t
            self._held_t_s.append(t)
            self._held_gpu_s.append(self.busy_gpu_s)

    def held_gpu_s_until(self, t: float) -> float:
        """GPU-seconds held from the start of the run to ``t`` (the busy period's integral)."""
        if not self._held_t_s:
            return 0.0
        return float(np.interp(t, self._held_t_s, self._held_gpu_s, left=0.0))

    def _materialize(self, js: JobState, t: float) -> None:
        """Fold progress and attained service up to ``t`` into the stored values."""
        if self.cfg.mtbf_h is not None and js.rate_sps > 0:
            self._roll_checkpoint(js, t)
        self.rates.fold(js, t)
        js.attained_gpu_s = js.attained_at(t)
        js.mark_s = t
        js.run_from_s = max(js.run_from_s, t)

    def _roll_checkpoint(self, js: JobState, t: float) -> None:
        ck = self.cfg.checkpoint_s
        n = math.floor((t - js.ckpt_anchor_s) / ck) if t > js.ckpt_anchor_s else 0
        if n > 0:
            at = js.ckpt_anchor_s + n * ck
            js.ckpt_samples = self.rates.done_at(js, at)
            js.ckpt_anchor_s = at

    def _push_completion(self, js: JobState) -> None:
        """The job's next event: completion, or reaching its estimate first (re-estimation)."""
        js.version += 1
        if js.rate_sps > 0:
            until = min(js.job.work_samples, self._work[js.index])
            c = js.run_from_s + self.rates.seconds_to(js, until)
            heapq.heappush(self._done_heap, (c, js.index, js.version))

    def _release(self, placement: Placement) -> None:
        used = self.used
        for s in placement:
            used[s] -= 1
        self.busy -= len(placement)

    def _take(self, placement: Placement) -> None:
        used = self.used
        for s in placement:
            used[s] += 1
        self.busy += len(placement)

    # ---------------------------------------------------------------- the World the loop sees
    def workload(self) -> list[Job]:
        return [js.job for js in self.states]

    def nodes(self, t: float) -> Nodes:
        return Nodes(self.cluster, self.up.copy(), t, self.cfg.slot_s, self.speed, self.cfg.restart_s)

    def servers_up(self):
        return self.up

    def gpus_used(self):
        return self.used

    def view(self):
        return self.active

    def fold(self, jobs, t: float) -> None:
        """Progress is lazy here: a job state reads exactly at any time, but for a running
        adaptive-batch job, whose rate differs by epoch: its progress is folded in now."""
        for js in self.rates.adaptive_running(self.states):
            self._materialize(js, t)

    def arrivals(self, t: float) -> list[JobState]:
        states, nxt = self.states, self._next
        while nxt < len(states) and states[nxt].job.arrival_s <= t:
            nxt += 1
        out, self._next = states[self._next:nxt], nxt
        return out

    def admitted(self, js: JobState, t: float) -> None:
        pass  # (nothing to record: the per-job table is built from the job states at the end)

    def rejected(self, js: JobState, t: float) -> None:
        pass

    def next_arrival_s(self) -> float | None:
        return self.states[self._next].job.arrival_s if self._next < len(self.states) else None

    def pending(self) -> bool:
        return self._next < len(self.states)

    def idle(self) -> bool:
        return not self.alloc and self._next >= len(self.states) and bool(self.up.all())

    def next_event_s(self) -> float | None:
        ev = self._next_event()
        return None if ev is None else ev[0]

    def record(self, t: float) -> None:
        self.timeline.append((t, self.busy, len(self.alloc), len(self.active) - len(self.alloc), int(self.up.sum())))
        if self.progress is not None:
            w = time.perf_counter()
            if w - self._last_report > 0.1:
                self._last_report = w
                self.progress(t, self.finished, len(self.states))

    def apply(self, changes: list[Change], t: float) -> None:
        for _, old, _p in changes:  # free first, so moves between servers never over-count
            if old:
                self._release(old)
        for jid, old, p in changes:
            js = self.active[jid]
            self._materialize(js, t)
            if old:
                js.last_stop_s = t
                if not p:
                    js.preemptions += 1
            if p:
                ran_before = js.first_start_s is not None
                if ran_before:
                    js.restarts += 1
                else:
                    js.first_start_s = t
                js.last_start_s = t
                js.run_from_s = t + (self.cfg.restart_s if ran_before else 0.0)
                js.ckpt_samples, js.ckpt_anchor_s = js.done_samples, js.run_from_s
                self._take(p)
                self.alloc[jid] = p
                self.rates.start(js, *self.rates.rate(js, p))
            else:
                self.alloc.pop(jid, None)
                js.rate_sps = 0.0
            js.placement = p
            self.changes.append((t, jid, " ".join(map(str, p))))
            self._push_completion(js)
        if changes and self.cfg.contention:
            self._rerate(t)

    def _rerate(self, t: float) -> None:
        """Contention world: re-share NICs and uplinks among cross-server rings."""
        rings = {jid: p for jid, p in self.alloc.items() if p[0] != p[-1]}
        if not rings:
            return
        shares = fair_shares(rings, self.cluster)
        for jid, share in shares.items():
            js = self.active[jid]
            bw = float(f"{share:.3g}")
            rate, run = self.rates.rate(js, js.placement, bw)
            if rate != js.rate_sps:
                self._materialize(js, t)
                self.rates.start(js, rate, run)
                self._push_completion(js)

    def stop_early(self, jobs: list[JobState], t: float) -> None:
        """Complete, as of ``t``, the started jobs the stop rule says are done."""
        for js in jobs:
            self._materialize(js, t)
            if js.placement:
                self._release(js.placement)
                self.alloc.pop(js.job_id, None)
                self.changes.append((t, js.job_id, ""))
            js.placement = ()
            js.rate_sps = 0.0
            js.version += 1
            js.status = "completed"
            self.rates.end(js)
            js.finish_s = t
            js.stopped_early = True
            self.roster.end(js)
        if self.cfg.contention:
            self._rerate(t)

    # ---------------------------------------------------------------- events
    def _next_event(self) -> tuple[float, str] | None:
        while self._done_heap:
            c, idx, ver = self._done_heap[0]
            js = self.states[idx]
            if js.version == ver and js.status == "active":
                break
            heapq.heappop(self._done_heap)
        best = None
        if self._done_heap:
            best = (self._done_heap[0][0], "done")
        if self._fail_heap and (best is None or self._fail_heap[0][0] < best[0]):
            best = (self._fail_heap[0][0], "fail")
        return best

    def _complete(self) -> None:
        c, idx, _ = heapq.heappop(self._done_heap)
        js = self.states[idx]
        self._accumulate(c)
        self._materialize(js, c)
        if js.job.work_samples < self._work[idx]:  # outlived its estimate: not done yet
            js.done_samples = js.job.work_samples
            js.job = reestimate(js.job)
            self.rates.reestimated(js)
            js.isolated_s = self._isolated_s(js.job)
            self.reestimates[idx] += 1
            self._push_completion(js)
            self.policy.on_reestimate(js.job_id)
            return
        js.done_samples = self._work[idx]
        self._release(js.placement)
        self.alloc.pop(js.job_id, None)
        self.changes.append((c, js.job_id, ""))
        js.placement = ()
        js.rate_sps = 0.0
        js.status = "completed"
        self.rates.end(js)
        js.finish_s = c
        self.roster.end(js)
        if self.cfg.contention:
            self._rerate(c)

    def _server_event(self) -> None:
        tf, s, kind = heapq.heappop(self._fail_heap)
        self._accumulate(tf)
        mtbf_s, mttr_s = self.cfg.mtbf_h * 3600.0, self.cfg.mttr_h * 3600.0
        if kind == "repair":
            self.up[s] = True
            heapq.heappush(self._fail_heap, (tf + self._rng.exponential(mtbf_s), s, "fail"))
            return
        self.up[s] = False
        self.server_failures += 1
        heapq.heappush(self._fail_heap, (tf + self._rng.exponential(mttr_s), s, "repair"))
        for jid in [jid for jid, p in self.alloc.items() if s in p]:
            js = self.active[jid]
            self._materialize(js, tf)
            self._roll_checkpoint(js, tf)
            js.lost_samples += js.done_samples - js.ckpt_samples
            js.done_samples = js.ckpt_samples
            self._release(js.placement)
            del self.alloc[jid]
            self.changes.append((tf, jid, ""))
            js.placement = ()
            js.rate_sps = 0.0
            js.failures += 1
            js.last_stop_s = tf
            js.version += 1
        if self.cfg.contention:
            self._rerate(tf)

    def advance(self, t: float, until_s: float, *, stop_at_first: bool = True) -> tuple[float, bool]:
        """Process completions, re-estimations, failures and repairs up to ``until_s``: (the
        time of the next decision, ``until_s`` or earlier when an event asks for one; whether
        any happened). ``stop_at_first=False`` processes every event up to ``until_s``."""
        b = until_s
        ev = self._next_event()
        happened = False
        while ev is not None and ev[0] <= b:
            happened = True
            if ev[1] == "done":
                self._complete()
            else:
                self._server_event()
            if stop_at_first:
                b = min(b, self.loop.decision_at(t, ev[0]))
            ev = self._next_event()
            if not self.active and self._next >= len(self.states):
                break
        self._accumulate(b)
        return b, happened

    # ---------------------------------------------------------------- the run
    def run(self) -> SimResult:
        wall0 = time.perf_counter()
        states = self.states
        t0 = self.loop.first_time(states[0].job.arrival_s if states else 0.0)
        self._last_acc_s = t0
        self._held_t_s.append(t0)
        self._held_gpu_s.append(0.0)
        if self.cfg.mtbf_h is not None:
            for s in range(self.cluster.num_servers):
                self._fail_heap.append((t0 + self._rng.exponential(self.cfg.mtbf_h * 3600.0), s, "fail"))
            heapq.heapify(self._fail_heap)
        try:
            t = self.loop.run(t0)
        except KeyboardInterrupt:
            self.interrupted = True
            t = self.loop.t
        return self._finish(t, wall0)

    def _finish(self, end_s: float, wall0: float) -> SimResult:
        """Label the jobs left over with why, and build the result."""
        horizon = self.loop.horizon_s
        for js in self.active.values():
            self._materialize(js, max(end_s, js.mark_s))
            js.status = "waiting"
            js.reason = waiting_reason(js, self.policy.name, interrupted=self.interrupted,
                                       stalled=self.stalled_at_s is not None, at_horizon=end_s >= horizon)
        for js in self.states[self._next:]:
            js.status, js.reason = "waiting", "not yet arrived when the run stopped"
        if self.progress is not None:
            self.progress(end_s, self.finished, len(self.states))
        return build_result(self, end_s, time.perf_counter() - wall0)
