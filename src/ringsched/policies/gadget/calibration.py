"""GADGET's view of the jobs with their estimates scaled by the estimator's consistent bias
(``EstimateError.bias``, ``GadgetParams.calibrate_spread``; docs/theory.md section 10).

A world that shows every job's work padded (or cut) by one factor misleads every decision that
reads a duration: plans reserve the wrong time, the knee derived from the run moves with it, and
lending orders and triage follow. Once the finished jobs show the factor, GADGET decides with
each job's first estimate scaled by it, its run-derived utility stretched alike
(``Utility.stretched``), as the world would have shown the job under a right estimate. No
unfinished job's truth is read: the factor comes from jobs that completed.

A job that outlives its scaled estimate is re-estimated in the view as the world re-estimates
(doubled, until it exceeds the work done; the world's own estimate once that is reached), and
the policy is told as of a re-estimate (``reestimated``): otherwise its horizon and plan would
stay those of the smaller estimate."""

from __future__ import annotations

import copy
from typing import NamedTuple

from ringsched.job import REESTIMATE_FACTOR, Job
from ringsched.policies.base import JobState
from ringsched.policies.gadget.estimate_error import EstimateError


class _Scaled(NamedTuple):
    shown: Job  # the world's job it was made from
    work: float  # the view's work (the world's own estimate when the view is the world's job)
    job: Job  # the job GADGET decides with
    factor: float  # job's work / the world's


class Calibrated:
    """JobState views with scaled estimates; the world's states themselves are never changed."""

    def __init__(self, errors: EstimateError):
        self.errors = errors
        self._jobs: dict[str, _Scaled] = {}  # per job: its last view
        self.reestimated: list[str] = []  # jobs whose view was re-estimated at the last ``view``

    def view(self, jobs, now_s: float) -> list:
        """``jobs`` as GADGET decides with them at ``now_s`` (the same list without a bias)."""
        self.reestimated = []
        bias = self.errors.bias
        if bias == 1.0:
            return jobs
        return [self._scaled(js, bias, now_s) for js in jobs]

    def arriving(self, job):
        """A job at its arrival (nothing done; its estimate is its first) as GADGET decides with
        it: strict admission plans it on this view."""
        bias = self.errors.bias
        return job if bias == 1.0 else job.with_work_scaled(bias)

    def _scaled(self, js: JobState, bias: float, now_s: float) -> JobState:
        shown = js.job.work_samples
        work = base = self.errors.first_estimate(js.job_id, shown) * bias
        done = js.done_at(now_s)
        while work <= done:
            work *= REESTIMATE_FACTOR  # (outlived in the view: doubled, as the world re-estimates)
        world = work == shown or base < shown <= work  # (a cut estimate doubled up to the world's)
        hit = self._jobs.get(js.job_id)
        if work > base and hit is not None and hit.shown is js.job and hit.work < (shown if world else work):
            self.reestimated.append(js.job_id)  # (the world's own re-estimate tells the policy itself)
        if world:
            self._jobs[js.job_id] = _Scaled(js.job, shown, js.job, 1.0)
            return js
        if hit is None or hit.shown is not js.job or hit.work != work:
            factor = work / shown
            hit = self._jobs[js.job_id] = _Scaled(js.job, work, js.job.with_work_scaled(factor), factor)
        view = copy.copy(js)  # (its progress is the world's; only the estimate differs)
        view.job = hit.job
        view.isolated_s = js.isolated_s * hit.factor
        return view

    def forget(self, job_id: str) -> None:
        """Drop the job's scaled view (it left)."""
        self._jobs.pop(job_id, None)
