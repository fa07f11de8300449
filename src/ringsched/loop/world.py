"""What the decision loop drives (a ``World``) and the per-job records it shares with it.

A world is where jobs run: the simulator's model of a cluster (``simulator.engine``) or a
real one (``backends.real_world``: a launcher, attempts, a journal). The loop decides *when*
the policy is asked and checks its answer; the world says what happens between decisions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from ringsched.cluster.model import Cluster
from ringsched.job import Job
from ringsched.perfmodel.alone import fastest_alone_sps
from ringsched.perfmodel.speed import Placement, SpeedModel
from ringsched.policies.base import JobState, Nodes, Policy

Change = tuple[str, Placement, Placement]  # (job, old placement, new placement)


class Roster:
    """The jobs in the policy's view (``active``, in the order they were admitted) and how
    many have left for good; a job that ends has its policy scratch state released once."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.active: dict[str, JobState] = {}
        self._ended: set[str] = set()

    @property
    def finished(self) -> int:
        """How many jobs have left for good."""
        return len(self._ended)

    def admit(self, js: JobState) -> None:
        js.status = "active"
        self.active[js.job_id] = js

    def end(self, js: JobState) -> None:
        """The job left for good (its status says how): out of the view, scratch released,
        once (a cancelled job whose workers finished its work while stopping ends again)."""
        if js.job_id in self._ended:
            return
        self._ended.add(js.job_id)
        self.active.pop(js.job_id, None)
        js.extra.clear()
        self.policy.on_finish(js.job_id)

    def leave(self, js: JobState) -> None:
        """The job leaves the view for a while (held by its user); it may be admitted again."""
        self.active.pop(js.job_id, None)


def isolated_run_s(job, cluster, speed: SpeedModel) -> float:
    """The job's fastest run alone on the empty cluster (Themis' isolated time): its work over
    the most samples/s of any worker count it may take (min_workers..max_workers, at most the
    cluster's GPUs), on any set of GPU types, spread evenly over any number of servers, an
    adaptive-batch job in each epoch at the fastest of them (``perfmodel.alone``). Written once,
    for both worlds."""
    hi = min(job.max_workers, cluster.total_gpus)
    lo = min(job.min_workers, hi)
    return job.work_samples / fastest_alone_sps(speed, job, lo, hi)


def waiting_reason(js: JobState, policy_name: str, *, interrupted: bool = False, stalled: bool = False,
                   at_horizon: bool = False) -> str:
    """Why a job admitted but unfinished when a run ended is still waiting."""
    if interrupted:
        return "interrupted"
    if stalled:
        return "simulated time stalled"
    if at_horizon:
        return "unfinished at the horizon"
    if js.first_start_s is None:
        return f"never scheduled by {policy_name}"
    return f"stopped and never resumed by {policy_name}"


class World(Protocol):
    """Where jobs run, as the decision loop sees it. Times are the world's clock in seconds."""

    cluster: Cluster
    speed: SpeedModel
    roster: Roster
    alloc: Mapping[str, Placement]  # the placements running now (of jobs in the view)

    def workload(self) -> Sequence[Job]:
        """The jobs known before the run (what ``Policy.prepare`` is shown)."""

    def nodes(self, t: float) -> Nodes:
        """The policy's view of the cluster at ``t`` (servers up, clock, slot, speed model)."""

    def gpus_used(self) -> np.ndarray:
        """GPUs in use per server by ``alloc``."""

    def servers_up(self) -> np.ndarray:
        """Bool per server: in service."""

    def arrivals(self, t: float) -> list[JobState]:
        """Jobs that arrived by ``t`` and wait for admission, in arrival order."""

    def admitted(self, js: JobState, t: float) -> None:
        """The policy admitted the job (the loop put it in the view)."""

    def rejected(self, js: JobState, t: float) -> None:
        """The policy rejected the job for good (``js.reason`` says why)."""

    def next_arrival_s(self) -> float | None:
        """When the next known job arrives (None: none is known)."""

    def pending(self) -> bool:
        """Whether anything may still come without the policy (arrivals, ending attempts)."""

    def idle(self) -> bool:
        """Nothing runs and nothing will happen unless the policy acts (then the loop asks
        ``wakeup_s`` and stops without one)."""

    def next_event_s(self) -> float | None:
        """When the world next wants a decision considered (a completion, a failure, a poll)."""

    def view(self) -> Mapping[str, JobState]:
        """The active jobs the policy decides on now (by id, in arrival order)."""

    def fold(self, jobs: Sequence[JobState], t: float) -> None:
        """Bring the jobs' progress up to ``t`` before a decision (a lazy world does nothing)."""

    def apply(self, changes: list[Change], t: float) -> None:
        """Carry out a validated decision: stop, move and start jobs."""

    def stop_early(self, jobs: list[JobState], t: float) -> None:
        """Complete these jobs now (the stop rule said they are done). Called only in a loop
        with a stop rule (the simulator's objectives); a world run without one needs none."""

    def advance(self, t: float, until_s: float, *, stop_at_first: bool = True) -> tuple[float, bool]:
        """Let time pass from ``t`` to ``until_s``, or to the first event that asks for a
        decision when ``stop_at_first``: (the time reached, whether anything happened)."""

    def record(self, t: float) -> None:
        """After a decision point: the world's timeline, progress reports, journal."""
