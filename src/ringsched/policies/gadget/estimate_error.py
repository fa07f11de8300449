"""What GADGET learns about its duration estimates as jobs finish (issue 15).

A job that completes has run all its work, so its samples done then are its true work: the
policy observes it, as a real scheduler sees how long a job it predicted really trained. The
ratio true work / first estimate over the jobs finished so far is the estimates' error seen
online; no policy is told the error of the world's estimator, and no unfinished job's truth is
read. Triage in lending (``lending.py``) asks whether a job can still keep its share of utility
with its remaining work scaled by a low quantile of that ratio: a job is given up only when it
would be too late even if its estimate errs on the high side as often as the finished jobs'
did. Backfilling takes the opposite quantile: a ring lent ahead of a commitment must end before
it unless the job outruns its estimate further than nine finished jobs in ten did (at the
default quantile). When the ratios agree (``GadgetParams.calibrate_spread``: a consistent
factor, such as users who pad every request alike), their median is the estimator's bias and
``calibration.py`` scales every estimate by it; the quantiles are then taken of the ratios to
the scaled estimates. Under exact estimates every ratio is 1 and nothing changes."""

from __future__ import annotations

import numpy as np

from ringsched.policies.base import JobState


MIN_FINISHED = 10  # finished jobs before a bias is taken from their ratios
MIN_BIAS = 0.05  # a median ratio within this of 1 is no bias, and a bias moves only by more (no churn)


class EstimateError:
    """The ratios true work / first estimate of the jobs finished so far, their quantile, and
    the estimator's consistent bias (``bias``; 1: none)."""

    def __init__(self, quantile: float, spread: float = 0.0):
        self.quantile = quantile
        self.spread = spread
        self.bias = 1.0
        self.bias_version = 0  # counts the changes of ``bias`` (what was cached from estimates is stale)
        self._first: dict[str, float] = {}  # per job: the work it was first shown with
        self._states: dict[str, JobState] = {}  # per job: its live JobState (read when it finishes)
        self.ratios: list[float] = []
        self._quantiles: dict[float, float] = {}  # cached per quantile until the next job finishes

    def see(self, jobs) -> None:
        """Remember the first estimate of every job not seen before."""
        first = self._first
        for js in jobs:
            if js.job_id not in first:
                first[js.job_id] = float(js.job.work_samples)
                self._states[js.job_id] = js

    def first_estimate(self, job_id: str, default: float) -> float:
        """The work the job was first shown with (``default`` for a job not seen yet)."""
        return self._first.get(job_id, default)

    def finished(self, job_id: str) -> None:
        """The job left: a completed one (not stopped early by an objective's rule) adds its ratio."""
        js = self._states.pop(job_id, None)
        first = self._first.pop(job_id, None)
        if js is None or not first or js.status != "completed" or js.stopped_early:
            return
        self.ratios.append(float(js.done_samples) / first)
        self._quantiles.clear()
        self._update_bias()

    def _update_bias(self) -> None:
        """The median ratio once ``MIN_FINISHED`` jobs finished and their 10% and 90% quantiles
        lie within ``spread`` of each other, else 1. Noisy ratios are not a bias to correct: the
        short ones finish first, so their median leans short."""
        if self.spread <= 0 or len(self.ratios) < MIN_FINISHED:
            return
        lo, mid, hi = np.quantile(self.ratios, [0.1, 0.5, 0.9])
        bias = float(mid) if hi <= self.spread * lo and abs(mid - 1.0) >= MIN_BIAS else 1.0
        if abs(bias / self.bias - 1.0) >= MIN_BIAS:
            self.bias = bias
            self.bias_version += 1

    def _quantile(self, q: float) -> float:
        """The ``q`` quantile of the ratios seen, to the estimates as scaled by ``bias`` (1
        before any job finished)."""
        if q not in self._quantiles:
            self._quantiles[q] = float(np.quantile(self.ratios, q)) / self.bias if self.ratios else 1.0
        return self._quantiles[q]

    def optimistic(self) -> float:
        """The ``quantile`` of the ratios seen, at most 1 (1 before any job finished): the factor
        on a job's estimated remaining work that the triage test uses."""
        return min(1.0, self._quantile(self.quantile))

    def pessimistic(self) -> float:
        """The 1 - ``quantile`` quantile of the ratios seen, at least 1 (1 before any job
        finished): the factor on a job's estimated remaining work that backfilling uses, so a
        ring lent ahead of a commitment ends before it as often as the finished jobs' did."""
        return max(1.0, self._quantile(1.0 - self.quantile))
