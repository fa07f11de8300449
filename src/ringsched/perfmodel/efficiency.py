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

and the factor the world applies to a constant configuration is the one that makes the job
finish exactly when it would by integrating r epoch by epoch over its remaining work
(``rate_factor``, a weighted harmonic mean). phi at a batch between two measured curves is
linear in the batch between the curves' values at the same epoch (clamped outside them), as
the Pollux simulator interpolates its curves; epoch e is the e-th equal share of the training
in M0-equivalent samples.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
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

    def rate_factor(self, user_batch: float, batches, done_fraction: float) -> np.ndarray:
        """Samples-at-``user_batch`` per sample run at each of ``batches``, over the job's
        remaining work (``done_fraction`` of it done): the exact constant factor."""
        b = np.atleast_1d(np.asarray(batches, dtype=float))
        eff = self.efficiency(np.concatenate(([float(user_batch)], b)))
        e_user, e_run = eff[0], eff[1:]
        share = 1.0 / e_user
        share = share / share.sum()  # fraction of the work (at the user's batch) in each epoch
        end = np.cumsum(share)
        left = np.clip(end - np.maximum(done_fraction, end - share), 0.0, None)
        if left.sum() <= 0:
            left = np.zeros_like(left)
            left[-1] = 1.0
        return left.sum() / ((left * e_user) / e_run).sum(axis=1)

    def epoch_ends(self, user_batch: float) -> np.ndarray:
        """Where each epoch ends, as a share of the work counted at ``user_batch``."""
        share = 1.0 / self.efficiency([user_batch])[0]
        return np.cumsum(share / share.sum())


@dataclass(frozen=True)
class AdaptiveRun:
    """An adaptive-batch job on one configuration: total batch ``batch`` at ``tput_sps``
    samples per second. Its progress (samples at ``user_batch``) runs at tput x r_e in epoch e,
    r_e = E_e(batch) / E_e(user_batch): piecewise constant, not constant. The world credits the
    constant ``rate_sps`` that finishes exactly (``rate_factor``) and folds progress in with
    ``done_after``, so that a run cut short is credited the epochs it ran, not the average of
    the rest (a restarted CIFAR-10 job beat its time alone by 10% when it was)."""

    ns: NoiseScale
    user_batch: float
    batch: float
    tput_sps: float
    work_samples: float

    def rate_sps(self, done_samples: float) -> float:
        """The constant rate that finishes the work left after ``done_samples`` when it does."""
        if self.batch == self.user_batch:
            return self.tput_sps
        f = self.ns.rate_factor(self.user_batch, [self.batch], done_samples / self.work_samples)[0]
        return self.tput_sps * float(f)

    def done_after(self, done_samples: float, run_s: float) -> float:
        """Samples done after running ``run_s`` seconds from ``done_samples`` (at most the work)."""
        if self.batch == self.user_batch:
            return min(self.work_samples, done_samples + run_s * self.tput_sps)
        eff = self.ns.efficiency([self.user_batch, self.batch])
        speed = self.tput_sps * eff[1] / eff[0] / self.work_samples  # share of the work per second
        ends = self.ns.epoch_ends(self.user_batch)
        x = done_samples / self.work_samples
        span = np.clip(ends - np.maximum(x, np.concatenate(([0.0], ends[:-1]))), 0.0, None)
        took = np.cumsum(span / speed)
        e = int(np.searchsorted(took, run_s, side="left"))
        if e >= len(ends):
            return self.work_samples
        start = x if e == 0 or ends[e - 1] < x else ends[e - 1]
        before = took[e - 1] if e > 0 else 0.0
        return min(self.work_samples, (max(start, x) + (run_s - before) * speed[e]) * self.work_samples)


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
