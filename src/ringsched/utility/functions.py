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


@dataclass(frozen=True)
class SigmoidUtility:
    """value / (1 + exp(steepness_per_s * (JCT - target_jct_s))): the brief's JCT utility."""

    value: float
    target_jct_s: float
    steepness_per_s: float

    def __post_init__(self) -> None:
        _check("value", self.value)
        _check("target_jct_s", self.target_jct_s)
        _check("steepness_per_s", self.steepness_per_s)

    @functools.cached_property
    def max_value(self) -> float:  # cached: the online algorithm asks for it at every offer
        return float(self(0.0))

    def scaled(self, factor: float) -> "SigmoidUtility":
        """The same shape, worth ``factor`` times as much."""
        return replace(self, value=self.value * factor)

    def jct_at_value(self, v: float) -> float:
        """The JCT at which the utility has fallen to ``v`` (0 < v < value; inf if it never does)."""
        if self.steepness_per_s <= 0 or v <= 0:
            return float("inf")
        if v >= self.value:
            return 0.0
        return max(0.0, self.target_jct_s + float(np.log(self.value / v - 1.0)) / self.steepness_per_s)

    def __call__(self, jct_s):
        # (np.minimum/np.maximum: np.clip's result, at half its call overhead; this runs at every plan search)
        x = np.minimum(np.maximum(self.steepness_per_s * (np.asarray(jct_s, dtype=float) - self.target_jct_s), -700.0),
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

    def __post_init__(self) -> None:
        _check("value", self.value)
        _check("deadline_s", self.deadline_s)
        _check("decay_per_s", self.decay_per_s)

    @property
    def max_value(self) -> float:
        return self.value

    def scaled(self, factor: float) -> "DeadlineUtility":
        """The same deadline, worth ``factor`` times as much."""
        return replace(self, value=self.value * factor)

    def __call__(self, jct_s):
        t = np.asarray(jct_s, dtype=float)
        late = np.maximum(t - self.deadline_s, 0.0)
        after = self.value * np.exp(-self.decay_per_s * late) if self.decay_per_s > 0 else 0.0
        return np.where(t <= self.deadline_s + self.ON_TIME_S, self.value, after)


Utility = SigmoidUtility | LinearUtility | DeadlineUtility
