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
