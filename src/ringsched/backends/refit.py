"""Online refit of a job type's step-time model from measured iteration times.

A real run sees a handful of placement shapes per job type (one per attempt), far too few to
calibrate the thirteen parameters (and batch knots) of ``perfmodel.ring`` the way
``perfmodel.fit`` does from a profile. So the refit is small and anchored: four factors, in
log space, scale the prior's compute time, co-location slowdown, and intra- and inter-server
transfer times; the data pull them by robust least squares on log step time (soft-L1, the
same loss scale as ``perfmodel.fit``) and a weak penalty pulls each towards the prior, so a
single measured shape fixes the compute time without inventing a communication cost, and
each new shape refines the rest. Deterministic: one start (the prior), a fixed iteration limit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from ringsched.perfmodel.fit import LOSS_SCALE
from ringsched.perfmodel.ring import RingParams, step_time_s

# A generic prior for a small model on one CPU core per worker (local emulation): a few ms of
# compute per step, a ms-scale ring, and heavy co-location slowdown (workers share cores).
CPU_PRIOR = RingParams(compute_base_s=0.001, compute_per_sample_s=1.5e-4, colocation_slowdown=0.3,
                       latency_intra_s=5e-5, latency_inter_s=1e-4, intra_transfer_s=0.002,
                       inter_transfer_s=0.003, bus_share_exponent=0.0, server_overhead_s=0.0,
                       overlap_fraction=0.0, overlap_exponent=1.0)

PRIOR_WEIGHT = 0.3  # penalty per unit of log-distance from the prior (data rows weigh up to 1)
_COLOC_FLOOR = 0.02  # co-location slowdown is fitted as log(s + floor)


@dataclass(frozen=True)
class Measurement:
    """Median measured step time of one attempt: shape, batch, seconds, and how many steps."""

    workers: int
    servers: int
    max_per_server: int
    local_bsz: int
    step_s: float
    steps: int


def _apply(prior: RingParams, theta: np.ndarray) -> RingParams:
    c, s, xi, xo = theta
    f = float(np.exp(c))
    return replace(prior, compute_base_s=prior.compute_base_s * f, compute_per_sample_s=prior.compute_per_sample_s * f,
                   colocation_slowdown=float(min(2.0, max(0.0, np.exp(s) - _COLOC_FLOOR))),
                   intra_transfer_s=prior.intra_transfer_s * float(np.exp(xi)),
                   inter_transfer_s=prior.inter_transfer_s * float(np.exp(xo)))


def refit(prior: RingParams, data: list[Measurement]) -> RingParams:
    """Parameters that explain ``data`` (robustly), staying near ``prior`` where data say nothing."""
    data = [m for m in data if m.step_s > 0 and m.steps > 0 and m.workers > 0]
    if not data:
        return prior
    w = np.array([m.workers for m in data], dtype=float)
    k = np.array([m.servers for m in data], dtype=float)
    d = np.array([m.max_per_server for m in data], dtype=float)
    b = np.array([m.local_bsz for m in data], dtype=float)
    y = np.log(np.array([m.step_s for m in data]))
    weight = np.sqrt(np.array([m.steps for m in data], dtype=float) / np.array([m.steps + 20.0 for m in data]))
    theta0 = np.array([0.0, np.log(prior.colocation_slowdown + _COLOC_FLOOR), 0.0, 0.0])

    def residuals(theta):
        p = _apply(prior, theta)
        pred = step_time_s(p, b, w, k, d)
        fit = weight * (np.log(np.maximum(pred, 1e-12)) - y)
        return np.concatenate([fit, PRIOR_WEIGHT * (theta - theta0)])

    r = least_squares(residuals, theta0, loss="soft_l1", f_scale=LOSS_SCALE, max_nfev=200, x_scale=1.0,
                      bounds=(np.array([-12.0, -8.0, -12.0, -12.0]), np.array([12.0, np.log(2.0 + _COLOC_FLOOR), 12.0, 12.0])))
    return _apply(prior, r.x)


def median_abs_pct_error(pred: list[float], actual: list[float]) -> float | None:
    pairs = [(p, a) for p, a in zip(pred, actual) if p and a and p > 0 and a > 0]
    if not pairs:
        return None
    return float(np.median([abs(p / a - 1.0) for p, a in pairs]))
