"""How fast each running job progresses, and how far it has got: the simulator's bookkeeping of
rates (engine.py asks; docs/model.md, "Work and progress").

A job's progress is lazy: ``JobState`` holds what was done at a mark and a constant rate since.
That is exact for a rigid-batch job. An adaptive-batch job's goodput differs by epoch, so its
run (``AdaptiveRun``, over its *true* work: the epochs are the real training's, whatever the
estimate a policy sees) is kept here; its state shows the constant rate that finishes the work
the policy is shown, and its progress is integrated epoch by epoch whenever it is folded in."""

from __future__ import annotations

import dataclasses

from ringsched.perfmodel.efficiency import AdaptiveRun
from ringsched.perfmodel.speed import Placement, SpeedModel
from ringsched.policies.base import JobState


class Rates:
    """The rates of the running jobs of one simulation, ``true_work`` by job index."""

    def __init__(self, speed: SpeedModel, true_work: list[float]):
        self.speed = speed
        self._work = true_work
        self._runs: dict[int, AdaptiveRun] = {}  # running adaptive-batch jobs

    def rate(self, js: JobState, placement: Placement, inter_Bps: float | None = None
             ) -> tuple[float, AdaptiveRun | None]:
        """The rate ``js`` would be shown on ``placement`` from its progress now, and its run
        when it is an adaptive-batch job."""
        # (only an adaptive job asks: other worlds' speed models, the optimum check's, have no runs)
        run = self.speed.adaptive_run(js.job, placement, inter_Bps) if js.job.adaptive_batch else None
        if run is None:
            return self.speed.progress_sps(js.job, js.done_samples, placement, inter_Bps), None
        run = dataclasses.replace(run, work_samples=self._work[js.index])
        return run.rate_sps(js.done_samples, js.job.work_samples), run

    def start(self, js: JobState, rate: float, run: AdaptiveRun | None) -> None:
        """``js`` runs from now at ``rate``, or on ``run`` (as ``rate`` gave them; the rate
        shown is then taken from its progress now)."""
        if run is None:
            self._runs.pop(js.index, None)
            js.rate_sps = rate
        else:
            self._runs[js.index] = run
            self._show(js, run)

    @staticmethod
    def _show(js: JobState, run: AdaptiveRun) -> None:
        """The rate ``js`` shows: the constant one that finishes the work the policy sees."""
        js.rate_sps = run.rate_sps(js.done_samples, js.job.work_samples)

    def _running(self, js: JobState) -> AdaptiveRun | None:
        return self._runs.get(js.index) if js.rate_sps > 0 else None

    def done_at(self, js: JobState, t: float) -> float:
        """The samples ``js`` has done at ``t``: exact also for an adaptive-batch job, whose
        constant shown rate is right only at its completion."""
        run = self._running(js)
        if run is None:
            return js.done_at(t)
        return min(js.job.work_samples, run.done_after(js.done_samples, max(0.0, t - js.run_from_s)))

    def fold(self, js: JobState, t: float) -> None:
        """Fold ``js``'s progress up to ``t`` into its state; an adaptive job's shown rate is
        taken again from there (its completion time does not move)."""
        js.done_samples = self.done_at(js, t)
        run = self._running(js)
        if run is not None:
            self._show(js, run)

    def seconds_to(self, js: JobState, until: float) -> float:
        """Seconds of running from ``js``'s progress now until it has done ``until`` samples."""
        run = self._runs.get(js.index)
        if run is None:
            return (until - js.done_samples) / js.rate_sps
        return run.time_to(js.done_samples, until)

    def reestimated(self, js: JobState) -> None:
        """``js`` now carries a new estimate: the rate shown finishes that one instead."""
        run = self._runs.get(js.index)
        if run is not None:
            self._show(js, run)

    def end(self, js: JobState) -> None:
        """``js`` completed: nothing of it is kept."""
        self._runs.pop(js.index, None)

    def adaptive_running(self, states: list[JobState]) -> list[JobState]:
        """The running adaptive-batch jobs (their progress drifts from the shown rate's)."""
        return [js for i in self._runs if (js := states[i]).status == "active" and js.rate_sps > 0]
