"""Duration knowledge as a setting of the simulated world (``--estimates``, docs/metrics.md).

Real clusters do not know how long a job will train (Tiresias exists because of this), so the
world may show policies an estimate of each job's work instead of the truth:

* ``exact``: the estimate is the true work (an oracle; the default);
* ``lognormal:SIGMA``: true work x exp(SIGMA x Z), Z standard normal, one draw per job in
  arrival order from a generator seeded by the run's seed (median-unbiased; SIGMA = 1 is the
  error of published duration predictors);
* ``user:FACTOR``: true work x FACTOR for every job (users who pad their requests, FACTOR > 1,
  or who under-ask, FACTOR < 1).

The simulator keeps the true work to itself (``engine.Simulator``): the ``Job`` a policy sees
carries the estimate, and its utility as the estimate describes it. A utility's knee (or
deadline) is a multiple of the job's run alone, so the true one would tell the true work: it is
stretched by the same factor as the work (``Utility.stretched``; the floor every job gets is
kept), and the run is judged with the true utility. A job whose progress reaches its estimate
before it is done is re-estimated by ``reestimate`` (doubling, as users resubmit with doubled
limits) and the policy is told through ``Policy.on_reestimate``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ringsched.errors import InputError
from ringsched.job import REESTIMATE_FACTOR, Job

_SEED_SALT = 0x5EED_E571  # keeps the estimates' draws apart from the failures' generator


@dataclass(frozen=True)
class Estimates:
    """How the world estimates work: ``kind`` exact | lognormal | user, with its parameter."""

    kind: str = "exact"
    sigma: float = 0.0  # lognormal
    factor: float = 1.0  # user

    def __post_init__(self) -> None:
        if self.kind not in ("exact", "lognormal", "user"):
            raise ValueError(f"estimates must be exact, lognormal:SIGMA or user:FACTOR, got {self.kind!r}")
        if not (math.isfinite(self.sigma) and 0 <= self.sigma <= 10):
            raise ValueError(f"lognormal sigma must be in [0, 10], got {self.sigma}")
        if not (math.isfinite(self.factor) and 1e-3 <= self.factor <= 1e3):
            raise ValueError(f"user factor must be in [0.001, 1000], got {self.factor}")

    def spec(self) -> str:
        if self.kind == "lognormal":
            return f"lognormal:{self.sigma:g}"
        if self.kind == "user":
            return f"user:{self.factor:g}"
        return "exact"

    def multipliers(self, n: int, seed: int) -> np.ndarray:
        """Estimate / truth for ``n`` jobs in arrival order."""
        if self.kind == "lognormal":
            z = np.random.default_rng([int(seed), _SEED_SALT]).standard_normal(n)
            return np.exp(self.sigma * z)
        return np.full(n, self.factor if self.kind == "user" else 1.0)

    def apply(self, jobs: Sequence[Job], seed: int) -> list[Job]:
        """The jobs as policies see them: each one's work replaced by its estimate."""
        if self.kind == "exact":
            return list(jobs)
        mult = self.multipliers(len(jobs), seed)
        return [j.with_work_scaled(float(m)) for j, m in zip(jobs, mult)]


def reestimate(job: Job) -> Job:
    """The job re-estimated when its progress reached its estimate: the estimate (and the knee
    it implies) doubled."""
    return job.with_work_scaled(REESTIMATE_FACTOR)


def estimates_from_text(text: str | None) -> Estimates:
    """``exact`` | ``lognormal:SIGMA`` | ``user:FACTOR`` -> Estimates (ValueError if not)."""
    text = (text or "exact").strip()
    kind, sep, arg = text.partition(":")
    kind = kind.strip().lower()
    if kind == "exact" and not sep:
        return Estimates()
    if kind in ("lognormal", "user") and arg.strip():
        try:
            v = float(arg)
        except ValueError:
            what = "SIGMA" if kind == "lognormal" else "FACTOR (every job's true work x FACTOR)"
            raise ValueError(f"{text!r}: {kind}:{what} takes a number, not {arg.strip()!r}") from None
        return Estimates(kind, sigma=v) if kind == "lognormal" else Estimates(kind, factor=v)
    raise ValueError(f"expected exact, lognormal:SIGMA or user:FACTOR, got {text!r}")


def parse_estimates(text: str | None) -> Estimates:
    """``estimates_from_text`` for user input: an InputError (one line) for anything wrong."""
    try:
        return estimates_from_text(text)
    except ValueError as e:
        raise InputError(f"estimates: {e}", field="estimates") from None
