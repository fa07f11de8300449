"""Statistical efficiency: how much a sample at total batch M is worth (Pollux, OSDI'21 §3.1).

A larger batch averages more samples into each step, but past the gradient noise scale phi
the extra samples mostly remove noise that was no longer limiting, so the job needs more
samples to reach the same model. Pollux measures it as

    E(M) = (phi + M0) / (phi + M)       samples at M0 that one sample at M is worth

(M0 the application's initial batch, phi = M0 * grad_var / grad_sqr, the noise scale in
samples, measured per epoch along training: ``noise_scale.json``, derived from Pollux's
convergence curves by scripts/derive_efficiency.py; docs/model.md). phi grows as training
converges, so large batches waste less late in training.

ringsched counts a job's work in samples **at its own batch** M_u (requested GPUs x local
batch), so a job that keeps its batch progresses at its throughput exactly as before
(efficiency 1 at the user's batch). At another total batch M its samples count

    r(M) = E_e(M) / E_e(M_u)            in epoch e of its training

and an adaptive job re-tunes its batch at every epoch (as Pollux's simulator does between
epochs), so its progress rate is piecewise constant; the world shows the constant rate that
finishes its remaining work exactly (``constant_rate``, a weighted harmonic mean) and
integrates the pieces when a run ends early (``AdaptiveRun``). phi at a batch between two
measured curves is linear in the batch between the curves' values at the same epoch (clamped outside them), as
the Pollux simulator interpolates its curves; epoch e is the e-th equal share of the training
in M0-equivalent samples.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

_FILE = Path(__file__).with_name("noise_scale.json")


@dataclass(frozen=True, eq=False)
class NoiseScale:
    """Gradient noise scale of one model along its training, from runs at several batches."""

    model: str
    ref_batch: int  # M0: the smallest measured batch, the unit of Pollux's progress
    max_batch: int  # the largest measured batch: adaptive jobs do not go beyond it
    min_local_bsz: int  # the smallest measured per-GPU batch
    batches: tuple[int, ...]  # the curves' total batches, increasing
    phi: np.ndarray  # (len(batches), epochs) noise scale, samples
    source: str

    @property
    def epochs(self) -> int:
        return self.phi.shape[1]

    def phi_at(self, batch) -> np.ndarray:
        """phi at total batch(es) ``batch`` for every epoch: shape (len(batch), epochs)."""
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        xs = np.asarray(self.batches, dtype=float)
        pos = np.clip(np.searchsorted(xs, b, side="right") - 1, 0, len(xs) - 1)
        nxt = np.minimum(pos + 1, len(xs) - 1)
        span = xs[nxt] - xs[pos]
        t = np.where(span > 0, np.clip((b - xs[pos]) / np.where(span > 0, span, 1.0), 0.0, 1.0), 0.0)
        return self.phi[pos] * (1.0 - t)[:, None] + self.phi[nxt] * t[:, None]

    def efficiency(self, batch) -> np.ndarray:
        """E_e(M) = (phi + M0) / (phi + M) for every epoch: shape (len(batch), epochs)."""
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        phi = self.phi_at(b)
        return (phi + self.ref_batch) / (phi + b[:, None])

    def samples_at(self, ref_samples: float, batch: float) -> float:
        """Samples at total batch ``batch`` worth ``ref_samples`` samples at M0 (spread evenly
        over the epochs): how a Pollux work figure becomes a work figure at a job's batch."""
        return float(ref_samples * np.mean(1.0 / self.efficiency([batch])[0]))

    def gains(self, user_batch: float, batches) -> np.ndarray:
        """r_e(M) = E_e(M) / E_e(user_batch): samples at the user's batch one sample run at each
        of ``batches`` is worth, per epoch: shape (len(batches), epochs)."""
        b = np.atleast_1d(np.asarray(batches, dtype=float))
        eff = self.efficiency(np.concatenate(([float(user_batch)], b)))
        return eff[1:] / eff[0]

    @lru_cache(maxsize=256)
    def epoch_ends(self, user_batch: float) -> np.ndarray:
        """Where each epoch ends, as a share of the work counted at ``user_batch`` (epoch e holds
        a share proportional to 1 / E_e(user_batch)); read-only, computed once per batch."""
        share = 1.0 / self.efficiency([user_batch])[0]
        ends = np.cumsum(share / share.sum())
        ends.setflags(write=False)
        return ends

    def left(self, user_batch: float, done_fraction: float) -> np.ndarray:
        """The share of the work in each epoch still to run after ``done_fraction``."""
        return left_after(self.epoch_ends(user_batch), done_fraction)


def _starts(ends: np.ndarray) -> np.ndarray:
    return np.concatenate(([0.0], ends[:-1]))


def spans(ends: np.ndarray, start: float, stop: float | None = None) -> np.ndarray:
    """The share of the work in each epoch (ending at ``ends``) between shares ``start`` and
    ``stop`` (None: the end)."""
    top = ends if stop is None else np.minimum(ends, stop)
    return np.clip(top - np.maximum(start, _starts(ends)), 0.0, None)


def left_after(ends: np.ndarray, done_fraction: float) -> np.ndarray:
    """The share of the work in each epoch (ending at ``ends``) still to run after
    ``done_fraction`` (past the end: the last epoch's, so that a rate is still defined)."""
    left = spans(ends, done_fraction)
    if left.sum() <= 0:
        left = np.zeros_like(left)
        left[-1] = 1.0
    return left


def constant_rate(left: np.ndarray, rates) -> np.ndarray:
    """The constant rate that does the work ``left`` (per epoch) in the time the per-epoch
    ``rates`` (last axis: epochs) take: their harmonic mean weighted by the work."""
    r = np.asarray(rates, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):  # (a rate of 0 where work is left: no rate)
        took = np.where(left > 0, left / r, 0.0).sum(axis=-1)
    return np.where(took > 0, left.sum() / np.where(took > 0, took, 1.0), 0.0)


@dataclass(frozen=True, eq=False)
class AdaptiveRun:
    """An adaptive-batch job on one placement. In epoch e it runs the batch with the highest
    goodput there and progresses at ``epoch_sps[e]`` samples (at its user's batch) per second:
    piecewise constant, not constant. The world shows the constant ``rate_sps`` that finishes
    exactly (``constant_rate``) and folds progress in with ``done_after``, so that a run cut
    short is credited the epochs it ran, not the average of the rest (a restarted yolov3 job
    beat its time alone by 19% when it was)."""

    ends: np.ndarray  # (epochs,) where each epoch ends, share of the work
    epoch_sps: np.ndarray  # (epochs,) progress per second in each epoch
    work_samples: float

    def rate_sps(self, done_samples: float, work_samples: float | None = None) -> float:
        """The constant rate that finishes the work left after ``done_samples`` when it does, of
        this run's work or, shown to a policy, of ``work_samples`` (an estimate)."""
        work = self.work_samples if work_samples is None else work_samples
        return float(constant_rate(left_after(self.ends, done_samples / work), self.epoch_sps))

    def time_to(self, done_samples: float, target_samples: float) -> float:
        """Seconds from ``done_samples`` to ``target_samples`` (at most the work), epoch by epoch."""
        span = spans(self.ends, done_samples / self.work_samples, target_samples / self.work_samples)
        return float((span * self.work_samples / self.epoch_sps).sum())

    def done_after(self, done_samples: float, run_s: float) -> float:
        """Samples done after running ``run_s`` >= 0 seconds from ``done_samples`` (at most the
        work)."""
        speed = self.epoch_sps / self.work_samples  # share of the work per second
        x = done_samples / self.work_samples
        took = np.cumsum(spans(self.ends, x) / speed)
        e = int(np.searchsorted(took, run_s, side="left"))
        if e >= len(self.ends):
            return self.work_samples
        before = took[e - 1] if e > 0 else 0.0
        return min(self.work_samples, (max(_starts(self.ends)[e], x) + (run_s - before) * speed[e]) * self.work_samples)


@cache
def noise_scales() -> dict[str, NoiseScale]:
    """The built-in noise scales by catalogue model name (``noise_scale.json``)."""
    doc = json.loads(_FILE.read_text())
    out = {}
    for model, e in doc.items():
        batches = tuple(sorted(int(b) for b in e["phi"]))
        phi = np.array([e["phi"][str(b)] for b in batches], dtype=float)
        phi.setflags(write=False)
        out[model] = NoiseScale(model, int(e["ref_batch"]), int(e["max_batch"]), int(e["min_local_bsz"]),
                                batches, phi, e["source"])
    return out


def noise_scale(model: str) -> NoiseScale | None:
    """The model's noise scale, or None when none was measured (its efficiency is then 1)."""
    return noise_scales().get(model)
