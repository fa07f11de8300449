"""The launcher contract: what a backend (local processes, Ray) provides to the controller.

An attempt is one launch of a job on a placement (one gloo group). A launcher starts its
workers, asks them to checkpoint and stop, kills them, and reports their events; everything
else (when to start what, what an ending means) is the controller's.
"""

from __future__ import annotations

import statistics
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ringsched.backends.jobs_file import RunJob
from ringsched.perfmodel.speed import Placement

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
    slots: tuple[int, ...] = ()  # rank -> GPU slot on its server (``gpu_slots.assign_slots``)

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
        world, rendezvous address and GPU numbering (the launcher adds them: ``gpu_numbering``
        says whether the servers' GPUs are this machine's, ``gpu_slots.MACHINE``, or each
        node's own, ``gpu_slots.NODE``)."""

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
        """Release everything: workers of unfinished attempts are killed. The local launcher
        returns once they are gone (none can still write a checkpoint); Ray's kill is
        asynchronous, so a remote straggler may still leave a temporary file, which the next
        start's recovery removes."""
