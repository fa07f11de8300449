"""Utility of a job as a non-increasing function of its job completion time (JCT).

Every utility is a small frozen dataclass with a vectorised ``__call__(jct_s)`` and a
``max_value`` (its utility at JCT 0), which the online algorithm needs for its price bounds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np


def _check(name: str, v: float, *, positive: bool = False) -> None:
    if not np.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be a finite {'positive' if positive else 'non-negative'} number, got {v}")


def _run_value(u, factor: float) -> float:
    """``u``'s value for a run ``factor`` times as long: scaled when it is the run's GPU-hours
    (``value_from_run``), else kept (what its owner or an objective's weighing made it). An
    estimate that stretched the knee but showed the true GPU-hours would tell the true work: the
    value over the GPU count is the run alone."""
    return u.value * factor if u.value_from_run else u.value


@dataclass(frozen=True)
class SigmoidUtility:
    """value / (1 + exp(steepness_per_s * (JCT - knee_s))): the brief's JCT utility, its knee
    ``knee_s`` = max(target_jct_s, floor_s). With ``from_run`` the knee was derived from the
    job's duration (``target_jct_s`` a multiple of its run alone; ``floor_s`` a wait every job
    may have for free), so ``stretched`` scales the one and keeps the other; with
    ``value_from_run`` the value was too (the job's GPU-hours), and ``stretched`` scales it
    alike. A utility given as numbers is its owner's and stays as it is."""

    value: float
    target_jct_s: float
    steepness_per_s: float
    floor_s: float = 0.0
    from_run: bool = False
    value_from_run: bool = False

    def __post_init__(self) -> None:
        _check("value", self.value)
        _check("target_jct_s", self.target_jct_s)
        _check("steepness_per_s", self.steepness_per_s)
        _check("floor_s", self.floor_s)

    @functools.cached_property
    def knee_s(self) -> float:
        return max(self.target_jct_s, self.floor_s)

    @functools.cached_property
    def max_value(self) -> float:  # cached: the online algorithm asks for it at every offer
        return float(self(0.0))

    def scaled(self, factor: float) -> "SigmoidUtility":
        """The same shape, worth ``factor`` times as much: a value set apart from the run (an
        objective's weighing), which an estimate no longer scales (``value_from_run`` off)."""
        return replace(self, value=self.value * factor, value_from_run=False)

    def stretched(self, factor: float) -> "SigmoidUtility":
        """The utility of the same job were its duration ``factor`` times as long: the knee's
        duration part scaled, the floor kept, the fall as steep relative to the knee, and the
        value scaled when it is the run's (``value_from_run``; itself when not ``from_run``)."""
        if not self.from_run:
            return self
        out = replace(self, target_jct_s=self.target_jct_s * factor, value=_run_value(self, factor))
        return replace(out, steepness_per_s=self.steepness_per_s * self.knee_s / out.knee_s) if out.knee_s > 0 else out

    def jct_at_value(self, v: float) -> float:
        """The JCT at which the utility has fallen to ``v`` (0 < v < value; inf if it never does)."""
        if self.steepness_per_s <= 0 or v <= 0:
            return float("inf")
        if v >= self.value:
            return 0.0
        return max(0.0, self.knee_s + float(np.log(self.value / v - 1.0)) / self.steepness_per_s)

    def __call__(self, jct_s):
        # (np.minimum/np.maximum: np.clip's result, at half its call overhead; this runs at every plan search)
        x = np.minimum(np.maximum(self.steepness_per_s * (np.asarray(jct_s, dtype=float) - self.knee_s), -700.0),
                       700.0)
        return self.value / (1.0 + np.exp(x))


@dataclass(frozen=True)
class LinearUtility:
    """max(0, value - slope_per_s * JCT)."""

    value: float
    slope_per_s: float

    def __post_init__(self) -> None:
        _check("value", self.value)
        _check("slope_per_s", self.slope_per_s)

    @property
    def max_value(self) -> float:
        return self.value

    def __call__(self, jct_s):
        return np.maximum(0.0, self.value - self.slope_per_s * np.asarray(jct_s, dtype=float))

    def scaled(self, factor: float) -> "LinearUtility":
        """Worth ``factor`` times as much, reaching 0 at the same JCT."""
        return replace(self, value=self.value * factor, slope_per_s=self.slope_per_s * factor)

    def stretched(self, factor: float) -> "LinearUtility":
        """Itself: a linear utility is given as numbers (its owner's), not derived from a run."""
        return self


@dataclass(frozen=True)
class DeadlineUtility:
    """Full value by the deadline, then decaying exponentially (decay 0 = nothing after it).

    A job that ends within ``ON_TIME_S`` of its deadline is on time: a job run alone at its
    fastest finishes at its isolated time up to rounding, and a deadline of exactly that time
    must count it as met."""

    ON_TIME_S: ClassVar[float] = 1e-9

    value: float
    deadline_s: float
    decay_per_s: float = 0.0
    floor_s: float = 0.0  # the deadline is never earlier (kept by ``stretched``, as the sigmoid's)
    from_run: bool = False  # ``deadline_s`` derived from the job's duration (``stretched`` scales it)
    value_from_run: bool = False  # ``value`` too (the job's GPU-hours: ``stretched`` scales it as well)

    def __post_init__(self) -> None:
        _check("value", self.value)
        _check("deadline_s", self.deadline_s)
        _check("decay_per_s", self.decay_per_s)
        _check("floor_s", self.floor_s)

    @property
    def max_value(self) -> float:
        return self.value

    @functools.cached_property
    def due_s(self) -> float:
        """The deadline in force: max(deadline_s, floor_s)."""
        return max(self.deadline_s, self.floor_s)

    def scaled(self, factor: float) -> "DeadlineUtility":
        """The same deadline, worth ``factor`` times as much (a value set apart from the run, as
        the sigmoid's)."""
        return replace(self, value=self.value * factor, value_from_run=False)

    def stretched(self, factor: float) -> "DeadlineUtility":
        """The deadline of the same job were its duration ``factor`` times as long, and its value
        when that is the run's (itself when not ``from_run``: a deadline given as numbers is its
        owner's)."""
        if not self.from_run:
            return self
        return replace(self, deadline_s=self.deadline_s * factor, decay_per_s=self.decay_per_s / factor,
                       value=_run_value(self, factor))

    def __call__(self, jct_s):
        t = np.asarray(jct_s, dtype=float)
        late = np.maximum(t - self.due_s, 0.0)
        after = self.value * np.exp(-self.decay_per_s * late) if self.decay_per_s > 0 else 0.0
        return np.where(t <= self.due_s + self.ON_TIME_S, self.value, after)


Utility = SigmoidUtility | LinearUtility | DeadlineUtility
