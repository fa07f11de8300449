"""A ring-all-reduce training job, as schedulers see it."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ringsched.utility.functions import Utility

# a job that outlives its estimate is re-estimated this many times larger (as users resubmit with a
# doubled limit): the world's rule (``simulator.estimates.reestimate``) and GADGET's for its
# bias-scaled views (``policies/gadget/calibration.py``)
REESTIMATE_FACTOR = 2.0


@dataclass(frozen=True)
class Job:
    """One job: when it arrives, what it trains, how much work it needs, how it may scale.

    ``work_samples`` is the training work in samples (iterations x global batch). A rigid job
    has ``min_workers == max_workers`` (its requested GPUs) and is only ever run at that size;
    an elastic one may run anywhere in [min_workers, max_workers].
    """

    job_id: str
    arrival_s: float
    model: str
    local_bsz: int
    work_samples: float
    min_workers: int
    max_workers: int
    utility: Utility
    requested_gpus: int | None = None
    tenant: str = ""  # virtual cluster / user, for fair-share policies; "" when unknown
    # True: the job re-tunes its per-GPU batch for goodput at every epoch, as AdaptDL jobs do
    # under Pollux (perfmodel/goodput.py); False: it runs ``local_bsz`` (rigid batch)
    adaptive_batch: bool = False
    # Slurm's job priority: among jobs competing for GPUs a higher one is offered them first
    # (policies/common.queue_key; docs/policies.md, "Priority"); 0 unless submitted with one
    priority: int = 0
    # samples after which the job's learning curve is estimated to flatten (set by the
    # convergence objective for every policy alike, docs/objectives.md); None: not estimated
    converge_samples: float | None = None

    def __post_init__(self) -> None:
        if not np.isfinite(self.arrival_s) or self.arrival_s < 0:
            raise ValueError(f"job {self.job_id}: arrival_s must be >= 0, got {self.arrival_s}")
        if self.local_bsz < 1:
            raise ValueError(f"job {self.job_id}: local_bsz must be >= 1, got {self.local_bsz}")
        if not np.isfinite(self.work_samples) or self.work_samples <= 0:
            raise ValueError(f"job {self.job_id}: work_samples must be > 0, got {self.work_samples}")
        if not 1 <= self.min_workers <= self.max_workers:
            raise ValueError(f"job {self.job_id}: need 1 <= min_workers <= max_workers, "
                             f"got {self.min_workers}..{self.max_workers}")
        if self.requested_gpus is None:
            object.__setattr__(self, "requested_gpus", self.max_workers)

    @property
    def rigid(self) -> bool:
        return self.min_workers == self.max_workers

    def iterations(self) -> float:
        """Iterations needed at the requested size (work / (requested workers x batch))."""
        return self.work_samples / (self.requested_gpus * self.local_bsz)

    def with_work_scaled(self, factor: float) -> "Job":
        """The same job with its work, and its run-derived utility's duration part
        (``Utility.stretched``), ``factor`` times as large: how an estimate shows it (the
        world's ``simulator.estimates``) and how GADGET corrects a biased one
        (``policies/gadget/calibration.py``)."""
        return replace(self, work_samples=float(self.work_samples * factor), utility=self.utility.stretched(factor))
