"""Calibration: fit a step-time model to measured step times.

Both models (ours and Pollux's) are fitted by the same code: robust least squares
(scipy's trust-region reflective with a soft-L1 loss) on log step time, so the fit minimises
relative error and a few outlier measurements do not pull it. Where the data carry
``sync_time``, step time minus sync time is a direct measurement of compute time on every
row (not only single-GPU ones), and it is a second, lighter target: it separates compute from
communication, which step times alone leave ambiguous when few shapes are measured. Each fit
runs from a few deterministic starting points derived from the data and keeps the best, so
results are reproducible byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np
from scipy.optimize import least_squares

from ringsched.errors import InputError
from ringsched.perfmodel.data import PlacementTable
from ringsched.perfmodel.params_io import non_finite
from ringsched.perfmodel.pollux import PolluxParams, pollux_step_time_s
from ringsched.perfmodel.ring import RingParams, compute_time_s, overlapped_s, ring_time_s, step_time_s

LOSS_SCALE = 0.05  # soft-L1 turns quadratic -> linear beyond ~5% relative error
COMPUTE_WEIGHT = 0.3  # weight of the compute-time rows (step - sync) against step-time rows
KNOT_PRIOR = 0.1  # pulls each log batch-efficiency factor towards 0 (factor 1)
MAX_KNOTS = 24  # batch-efficiency knots: the distinct batch sizes, or this many quantiles


@dataclass(frozen=True)
class Problem:
    """One least-squares problem: bounds, starts, vector -> parameters, prior residuals."""

    lo: np.ndarray
    hi: np.ndarray
    starts: list[np.ndarray]
    make: Callable[[np.ndarray], object]
    prior: Callable[[np.ndarray], np.ndarray] = field(default=lambda theta: np.zeros(0))


class StepModel(Protocol):
    """A parametric step-time model that ``fit`` can calibrate."""

    name: str

    def problem(self, t: PlacementTable) -> Problem: ...
    def predict(self, params, t: PlacementTable) -> np.ndarray: ...
    def predict_both(self, params, t: PlacementTable) -> tuple[np.ndarray, np.ndarray]:
        """Step time and compute time of every row (the fit's two targets)."""
        ...
    def from_dict(self, d: dict): ...


def measured_compute_s(t: PlacementTable) -> np.ndarray:
    """step_time - sync_time per row; NaN where unknown, not positive, or where a multi-worker
    row reports no sync at all (a zero there means "not measured", not a free all-reduce)."""
    if t.step_time is None or t.sync_time is None:
        return np.full(len(t), np.nan)
    c = t.step_time - t.sync_time
    known = (c > 0) & ((t.sync_time > 0) | (t.num_replicas == 1))
    return np.where(known, c, np.nan)


def _compute_guess(t: PlacementTable) -> tuple[float, float]:
    """Intercept and slope of compute time vs batch: from measured compute, else single workers."""
    comp = measured_compute_s(t)
    one = t.num_replicas == 1
    if np.isfinite(comp).sum() >= 2:
        rows, y_all, halve = np.isfinite(comp), comp, False
    else:
        rows = one if one.sum() >= 2 else np.ones(len(t), dtype=bool)
        y_all, halve = t.step_time, not one.any()  # every row includes communication
    x, y = t.local_bsz[rows], y_all[rows]
    if np.ptp(x) > 0:
        slope, icpt = np.polyfit(x, y, 1)
    else:
        slope, icpt = 0.0, float(np.median(y))
    slope = max(float(slope), 1e-9)
    icpt = max(float(icpt), 0.05 * float(np.min(y)))
    if halve:  # attribute half to compute
        icpt, slope = 0.5 * icpt, 0.5 * slope
    return icpt, slope


def _comm_guess(t: PlacementTable, icpt: float, slope: float) -> float:
    multi = t.num_replicas > 1
    if not multi.any():
        return 1e-4
    extra = t.step_time[multi] - (icpt + slope * t.local_bsz[multi])
    return max(float(np.median(extra)), 1e-4 * float(np.median(t.step_time)))


def batch_knots(bsz: np.ndarray) -> np.ndarray:
    """Knots of the batch-efficiency curve: every distinct measured batch, or MAX_KNOTS of them
    evenly spaced by rank (so a file with a new batch size on every row stays a small fit)."""
    u = np.unique(np.asarray(bsz, dtype=float))
    if len(u) <= MAX_KNOTS:
        return u
    return u[np.unique(np.round(np.linspace(0, len(u) - 1, MAX_KNOTS)).astype(int))]


class RingModel:
    """ringsched's model (perfmodel.ring), fitted in its time form.

    The vector holds the intra-server latency and transfer time as fractions of the
    cross-server ones (bounded by 1): a link inside a server is never slower than the NIC
    share (``RingParams.from_physical`` takes min(b_in, beta)), and without single-server
    measurements the fit cannot wander off to an intra-server cost that no cluster has.
    rack_transfer_s and reduce_s are not identifiable from single-rack step times: reduce_s
    folds into the transfer terms, rack_transfer_s stays None (= inter). Batch-efficiency
    knots sit at the measured batch sizes, each pulled weakly towards 1.
    """

    name = "ring"
    # fitted vector: [compute_base_s, compute_per_sample_s, colocation_slowdown,
    #   latency_intra/latency_inter, latency_inter_s, intra/inter transfer, bus_share_exponent,
    #   inter_transfer_s, server_overhead_s, overlap_fraction, overlap_exponent,
    #   two_server_slowdown, host_staging, log knot factors...]
    N_FIXED = 13

    def problem(self, t: PlacementTable) -> Problem:
        knots = batch_knots(t.local_bsz)
        n = len(knots)
        lo = np.concatenate([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0.0, 0.0], np.full(n, -2.0)])
        hi = np.concatenate([[np.inf, np.inf, 2.0, 1.0, np.inf, 1.0, 1.0, np.inf, np.inf, 1.0, 32.0, 3.0, 1.0],
                             np.full(n, 2.0)])
        a, b = _compute_guess(t)
        c = _comm_guess(t, a, b)
        starts = [np.concatenate([[a, b, 0.02, 0.3, c / 100, 0.3, 0.5, c / 2, c / 50, phi, g, 0.0, 0.5], np.zeros(n)])
                  for phi, g in ((0.5, 2.0), (0.9, 6.0), (0.2, 1.5))]

        def make(theta: np.ndarray) -> RingParams:
            (cb, cs, col, lat_ratio, lat_inter, x_ratio, sigma, x_inter, srv, phi, g, two, staging) = map(
                float, theta[: self.N_FIXED])
            return RingParams(
                compute_base_s=cb, compute_per_sample_s=cs, colocation_slowdown=col,
                latency_intra_s=lat_ratio * lat_inter, latency_inter_s=lat_inter,
                intra_transfer_s=x_ratio * x_inter, bus_share_exponent=sigma, inter_transfer_s=x_inter,
                server_overhead_s=srv, overlap_fraction=phi, overlap_exponent=g, two_server_slowdown=two,
                host_staging=staging,
                compute_knots_bsz=tuple(knots), compute_knot_factors=tuple(np.exp(theta[self.N_FIXED:])))

        return Problem(lo, hi, starts, make, lambda theta: KNOT_PRIOR * theta[self.N_FIXED:])

    def predict(self, params, t):
        return step_time_s(params, t.local_bsz, t.num_replicas, t.num_nodes, t.max_per_node)

    def predict_both(self, params, t):
        comp = compute_time_s(params, t.local_bsz, t.max_per_node)
        ring = ring_time_s(params, t.num_replicas, t.num_nodes, t.max_per_node)
        return overlapped_s(params, comp, ring), comp

    def from_dict(self, d):
        return RingParams.from_dict(d)


class PolluxModel:
    """The Pollux (OSDI'21) throughput model, fitted by the same code.

    Pollux's own fit (adaptdl's ``fit_perf_params``) also uses a compute-only time next to
    the step time, so the compute target is as fair to it as to ours.
    """

    name = "pollux"
    param_names = ("alpha_c", "beta_c", "alpha_r", "beta_r", "alpha_n", "beta_n", "gamma")

    def problem(self, t: PlacementTable) -> Problem:
        lo = np.array([0, 0, 0, 0, 0, 0, 1.0])
        hi = np.array([np.inf] * 6 + [32.0])
        a, b = _compute_guess(t)
        c = _comm_guess(t, a, b)
        starts = [np.array([a, b, c / 10, c / 100, c, c / 20, g]) for g in (1.5, 3.0, 8.0)]
        return Problem(lo, hi, starts, lambda theta: PolluxParams(**dict(zip(self.param_names, map(float, theta)))))

    def predict(self, params, t):
        return pollux_step_time_s(params, t.local_bsz, t.num_replicas, t.num_nodes)

    def predict_both(self, params, t):
        return self.predict(params, t), params.alpha_c + params.beta_c * np.asarray(t.local_bsz, dtype=float)

    def from_dict(self, d):
        return PolluxParams.from_dict(d)


MODELS: dict[str, StepModel] = {m.name: m for m in (RingModel(), PolluxModel())}


@dataclass(frozen=True)
class FitResult:
    model: str
    params: object
    rows: int
    median_ape: float
    p90_ape: float

    def to_json(self) -> dict:
        return {"format": "ringsched-step-model/1", "model": self.model, "params": self.params.to_dict(),
                "fit": {"rows": self.rows, "median_ape": self.median_ape, "p90_ape": self.p90_ape}}

    def checked_json(self, source: str) -> dict:
        """``to_json()``, or InputError naming ``source`` when the fit is not finite (a parameter
        file never holds NaN or Infinity)."""
        bad = non_finite(self.params)
        bad += [k for k in ("median_ape", "p90_ape") if not math.isfinite(getattr(self, k))]
        if bad:
            raise InputError(f"the {self.model} model has no finite fit to these step times ({', '.join(bad)} "
                             "not finite); check the step_time column's units and range", file=source,
                             field="step_time")
        return self.to_json()


def abs_pct_error(pred: np.ndarray, actual: np.ndarray) -> np.ndarray:
    return np.abs(pred / actual - 1.0)


def _strictly_inside(x0: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """least_squares needs a start strictly inside finite bounds."""
    upper = np.where(np.isfinite(hi), hi - 1e-9 * (1.0 + np.abs(np.where(np.isfinite(hi), hi, 0.0))), np.inf)
    return np.clip(x0, lo + 1e-12 * (1.0 + np.abs(lo)), upper)


def fit(model: StepModel, t: PlacementTable) -> FitResult:
    """Calibrate ``model`` on the rows of ``t`` (which must carry step_time)."""
    if t.step_time is None or len(t) == 0:
        raise ValueError("fit needs rows with step_time")
    prob = model.problem(t)
    lo, hi = prob.lo, prob.hi
    log_y = np.log(t.step_time)
    comp = measured_compute_s(t)
    has_comp = np.isfinite(comp)
    log_c = np.log(comp[has_comp])

    def residuals(theta: np.ndarray) -> np.ndarray:
        theta = np.clip(theta, lo, hi)
        params = prob.make(theta)
        step, pc = model.predict_both(params, t)
        parts = [np.log(np.maximum(step, 1e-12)) - log_y]
        if has_comp.any():
            parts.append(COMPUTE_WEIGHT * (np.log(np.maximum(pc[has_comp], 1e-12)) - log_c))
        parts.append(prob.prior(theta))
        return np.concatenate(parts)

    best = None
    for x0 in prob.starts:
        x0 = _strictly_inside(x0, lo, hi)
        r = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=LOSS_SCALE,
                          x_scale="jac", max_nfev=400)
        if best is None or r.cost < best.cost:
            best = r
    params = prob.make(np.clip(best.x, lo, hi))
    ape = abs_pct_error(model.predict(params, t), t.step_time)
    return FitResult(model.name, params, len(t), float(np.median(ape)), float(np.percentile(ape, 90)))


def load_fitted(d: dict) -> tuple[StepModel, object]:
    """The model and parameters of a ``FitResult.to_json()`` document."""
    if not isinstance(d, dict) or d.get("format") != "ringsched-step-model/1":
        raise ValueError("not a ringsched parameter file (missing format 'ringsched-step-model/1')")
    name = d.get("model")
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    model = MODELS[name]
    return model, model.from_dict(d.get("params", {}))

