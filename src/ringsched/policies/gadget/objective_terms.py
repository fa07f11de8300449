"""What the objectives (docs/objectives.md) change in GADGET's decisions, kept in one place.

* convergence (``GadgetParams.stop_converged``): a job's work is planned up to its estimated
  convergence point (``Job.converge_samples``), not the epochs its user typed; the world
  stops the job there (the objective's stop rule), so the plan's reservations match the work
  that will run."""

from __future__ import annotations

from ringsched.policies.base import JobState


def planned_remaining(js: JobState, now_s: float, stop_converged: bool) -> float:
    """The samples a plan for ``js`` must still provide: what is left to the job's estimated
    convergence point when GADGET takes the stop and the job has not passed it, else what is
    left of its work (the estimate the world shows)."""
    rem = js.remaining_at(now_s)
    c = js.job.converge_samples
    if not stop_converged or c is None:
        return rem
    left = min(c, js.job.work_samples) - js.done_at(now_s)
    return left if left > 0 else rem
