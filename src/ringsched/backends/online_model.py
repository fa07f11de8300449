"""The speed model of a real run, refitted online from the step times its attempts measure.

Every job type starts from the CPU prior (``refit.CPU_PRIOR``); each attempt that ran at
least ``MIN_STEPS`` steps adds a measurement (its median step time at its shape), and running
attempts' medians so far count at each refresh too (they are the freshest). A refit changes
the model's ``version``, which policies are shown (``Nodes.speed_version``).
"""

from __future__ import annotations

import statistics

from ringsched.backends.jobs_file import RunJob
from ringsched.backends.launcher import Attempt
from ringsched.backends.refit import CPU_PRIOR, Measurement, refit
from ringsched.cluster.model import Cluster
from ringsched.perfmodel.ring import RingParams
from ringsched.perfmodel.speed import Placement, SpeedModel


class OnlineModel:
    """Priors, measurements and the refitted ``speed`` model of one run."""

    def __init__(self, cluster: Cluster, restart_prior_s: float):
        self.speed = SpeedModel(cluster)
        self.priors: dict[str, RingParams] = {}
        self.measurements: dict[str, list[Measurement]] = {}
        self.fitted: set[str] = set()  # models refitted on measurements at least once
        self._dirty: set[str] = set()
        self.restart_prior_s = restart_prior_s
        self.startup_s: list[float] = []  # measured: launch -> gloo group formed
        self.stop_s: list[float] = []  # measured: stop asked -> all ranks exited

    def add_prior(self, model: str) -> None:
        if model not in self.priors:
            self.priors[model] = CPU_PRIOR
            self.speed.set_params(model, CPU_PRIOR)

    def add(self, model: str, m: Measurement) -> None:
        self.measurements.setdefault(model, []).append(m)
        self._dirty.add(model)

    def measurement(self, att: Attempt) -> Measurement | None:
        """The attempt's median step time so far at its shape (None: too few steps)."""
        m = att.measured_step_s()
        if m is None:
            return None
        _, k, d, _ = self.speed.shape(att.placement)
        return Measurement(att.world, k, d, att.job.local_bsz, m, len(att.times))

    def refit(self, running: dict[str, list[Measurement]] | None = None) -> None:
        """Refit every model with new measurements (those of ``running`` attempts included)."""
        models = set(self._dirty) | set(running or {})
        for model in sorted(models):
            data = list(self.measurements.get(model, [])) + list((running or {}).get(model, []))
            if model in self.priors and data:
                self.speed.set_params(model, refit(self.priors[model], data))
                self.fitted.add(model)
        self._dirty.clear()

    def predicted_step_s(self, job: RunJob, placement: Placement) -> float:
        return self.speed.step_time_s(job.model, job.local_bsz, self.speed.shape(placement))

    def restart_estimate_s(self) -> float:
        """What a placement change costs here: the median measured stop plus start (half the
        configured prior for a part not yet measured), told to policies as ``Nodes.restart_s``."""
        half = self.restart_prior_s / 2
        stop = statistics.median(self.stop_s[-20:]) if self.stop_s else half
        start = statistics.median(self.startup_s[-20:]) if self.startup_s else half
        return float(stop + start)
