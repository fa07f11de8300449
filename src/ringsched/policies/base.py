"""The one interface every scheduling policy implements, and what policies are shown.

Policies are called the same way by the simulator and the real backends (design brief,
section 8), as in Pollux's simulator: a single ``optimize(jobs, nodes, previous_allocations)``
that returns the placement of every active job for the next slot. Following Blox (EuroSys'24)
a policy is three decisions, and the base class keeps them apart:

* admission (``admit``): may the job enter at all? (a reason string rejects it for good);
* scheduling: which jobs run, and with how many workers (each policy's own logic);
* placement: where their rings go (``ringsched.embedding``).

Policies read ``JobState`` objects and must not change them; the caller owns them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ringsched.cluster.model import Cluster
from ringsched.job import Job
from ringsched.perfmodel.speed import Placement, SpeedModel, consolidated_shape


class JobState:
    """A job as the scheduler sees it while it is active: static facts plus progress so far.

    Under estimated durations (``SimConfig.estimates``) ``job.work_samples`` is the world's
    estimate, not the truth, and so are ``remaining_at`` and ``isolated_s``: the simulator
    keeps the true work to itself and re-estimates a job that reaches its estimate unfinished.

    Progress is stored lazily: ``done_samples`` at time ``mark_s``, then ``rate_sps`` samples
    per second from ``run_from_s`` (after any restart delay), so nothing needs updating while
    a job runs undisturbed. Use the ``*_at(now_s)`` methods to read current values.
    """

    __slots__ = ("job", "job_id", "index", "placement", "done_samples", "mark_s", "rate_sps", "run_from_s",
                 "attained_gpu_s", "first_start_s", "last_start_s", "last_stop_s", "preemptions",
                 "restarts", "failures", "finish_s", "status", "reason", "ckpt_samples",
                 "ckpt_anchor_s", "version", "isolated_s", "lost_samples", "stopped_early", "extra")

    def __init__(self, job: Job, index: int, isolated_s: float):
        self.job = job
        self.job_id = job.job_id  # (an attribute, not a property: read millions of times a run)
        self.index = index
        self.placement: Placement = ()
        self.done_samples = 0.0
        self.mark_s = job.arrival_s
        self.rate_sps = 0.0
        self.run_from_s = job.arrival_s
        self.attained_gpu_s = 0.0
        self.first_start_s: float | None = None
        self.last_start_s: float | None = None
        self.last_stop_s: float = job.arrival_s
        self.preemptions = 0
        self.restarts = 0
        self.failures = 0
        self.finish_s: float | None = None
        self.status = "pending"  # pending -> active -> completed | rejected | waiting (at the end)
        self.reason = ""
        self.ckpt_samples = 0.0
        self.ckpt_anchor_s = job.arrival_s
        self.version = 0
        self.isolated_s = isolated_s  # fastest run alone on the empty cluster, of the work shown (Themis' rho)
        self.lost_samples = 0.0
        self.stopped_early = False  # completed by the world's stop rule (objectives' convergence)
        # scratch space a policy may keep per job (e.g. Tiresias' queue); the caller empties it
        # when the job ends (with ``Policy.on_finish``), so nothing a policy cached outlives it
        self.extra: dict = {}

    @property
    def workers(self) -> int:
        return len(self.placement)

    def done_at(self, now_s: float) -> float:
        return min(self.job.work_samples, self.done_samples + self.rate_sps * max(0.0, now_s - self.run_from_s))

    def remaining_at(self, now_s: float) -> float:
        return max(0.0, self.job.work_samples - self.done_at(now_s))

    def attained_at(self, now_s: float) -> float:
        """GPU-seconds this job has held so far (Tiresias' attained service)."""
        return self.attained_gpu_s + len(self.placement) * max(0.0, now_s - self.mark_s)

    def __repr__(self) -> str:
        return f"JobState({self.job.job_id}, {self.status}, workers={len(self.placement)})"


@dataclass
class Nodes:
    """The cluster as a policy sees it at a decision: capacity in service now, the clock, the
    slot length, and the speed model the policy may plan with (and its version: a policy that
    caches speeds keys them on ``speed_version``, which changes when the model is refitted)."""

    cluster: Cluster
    up: np.ndarray  # bool per server: in service (not failed)
    now_s: float
    slot_s: float
    speed: SpeedModel
    restart_s: float = 30.0  # what a placement change costs in this world (checkpoint, stop, restart)

    @property
    def speed_version(self) -> int:
        """The speed model's version: it changes whenever its parameters do (an online refit)."""
        return self.speed.version

    @property
    def capacity(self) -> np.ndarray:
        """GPUs per server usable now (0 on failed servers). Computed once per decision: do not
        modify it."""
        cap = self.__dict__.get("_capacity")
        if cap is None:
            cap = self.__dict__["_capacity"] = np.where(self.up, self.cluster.gpus, 0)
        return cap

    @property
    def gpus_per_server(self) -> int:
        gps = self.__dict__.get("_gps")
        if gps is None:
            gps = self.__dict__["_gps"] = int(self.cluster.gpus.max())
        return gps

    def throughput_sps(self, js: JobState, workers: int) -> float:
        """The job's samples/s at ``workers`` on a consolidated placement (planning estimate)."""
        j = js.job
        return self.speed.throughput_sps(j.model, j.local_bsz, consolidated_shape(workers, self.gpus_per_server))


Allocations = dict[str, Placement]


class Policy(ABC):
    """Base of every policy. Subclasses set ``name`` and implement ``optimize``.

    ``periodic = True`` asks to be called at every slot boundary while jobs are active (for
    policies whose decisions change with time alone, e.g. Tiresias' aging); otherwise the
    caller only asks again after something happened (arrival, completion, failure, repair).
    ``rigid = True`` runs every job at its requested GPU count.
    """

    name: ClassVar[str] = ""
    periodic: ClassVar[bool] = False
    rigid: ClassVar[bool] = True

    def prepare(self, jobs: Sequence[Job], cluster: Cluster, speed: SpeedModel | None = None) -> None:
        """Called once before a run with the workload (policies that need bounds on it, such as
        GADGET's price range, read them here; the default ignores it)."""

    def admit(self, job: Job, nodes: Nodes) -> str | None:
        """None admits the job; a string rejects it for good, with that reason."""
        need = job.requested_gpus if self.rigid else job.min_workers
        total = nodes.cluster.total_gpus
        if need > total:
            return f"needs {need} GPUs, the cluster has {total}"
        return None

    @abstractmethod
    def optimize(self, jobs: Collection[JobState], nodes: Nodes,
                 previous_allocations: Mapping[str, Placement]) -> Allocations:
        """Placement of every job for the next slot; jobs left out (or given ()) do not run.

        ``jobs`` are the active jobs (admitted, not finished) in arrival order; it is a live,
        read-only view, so copy it (``list(jobs)``) before the call returns if it is kept."""

    def wakeup_s(self, now_s: float, slot_s: float) -> float | None:
        """When nothing runs and nothing happens, the caller stops unless the policy names a
        later time at which it will act (e.g. a plan that starts then). Default: none."""
        return None

    def on_finish(self, job_id: str) -> None:
        """The job left for good (completed, failed, cancelled, rejected): release whatever the
        policy keeps for it. Its ``JobState.extra`` is emptied by the caller. Default: nothing."""

    def on_reestimate(self, job_id: str) -> None:
        """The job outlived its estimate and now carries a new one (``js.job.work_samples``);
        a policy that planned with the old one re-plans here. Default: nothing to do."""

    def stats(self) -> dict[str, float]:
        """Optional figures of the policy's own (e.g. the share of GPU-time under committed
        plans); the simulator puts them in the summary under ``policy_stats``. Default: none."""
        return {}

    def demand(self, js: JobState) -> int:
        """Workers a rigid policy gives a job."""
        return js.job.requested_gpus if self.rigid else js.job.max_workers
