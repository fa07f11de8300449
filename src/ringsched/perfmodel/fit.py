"""Calibration: fit a step-time model to measured step times.

Both models (ours and Pollux's) are fitted by the same code: robust least squares
(scipy's trust-region reflective with a soft-L1 loss) on log step time, so the fit minimises
relative error and a few outlier measurements do not pull it. Each fit runs from a few
deterministic starting points derived from the data and keeps the best, so results are
reproducible byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.optimize import least_squares

from ringsched.perfmodel.data import PlacementTable
from ringsched.perfmodel.pollux import PolluxParams, pollux_step_time_s
from ringsched.perfmodel.ring import RingParams, step_time_s

LOSS_SCALE = 0.05  # soft-L1 turns quadratic -> linear beyond ~5% relative error


class StepModel(Protocol):
    """A parametric step-time model that ``fit`` can calibrate."""

    name: str
    param_names: tuple[str, ...]

    def bounds(self) -> tuple[np.ndarray, np.ndarray]: ...
    def starts(self, t: PlacementTable) -> list[np.ndarray]: ...
    def make(self, theta: np.ndarray): ...
    def predict(self, params, t: PlacementTable) -> np.ndarray: ...
    def from_dict(self, d: dict): ...


def _compute_guess(t: PlacementTable) -> tuple[float, float]:
    """Intercept and slope of compute time vs batch, from single-worker rows if any."""
    one = t.num_replicas == 1
    rows = one if one.sum() >= 2 else np.ones(len(t), dtype=bool)
    x, y = t.local_bsz[rows], t.step_time[rows]
    if np.ptp(x) > 0:
        slope, icpt = np.polyfit(x, y, 1)
    else:
        slope, icpt = 0.0, float(np.median(y))
    slope = max(float(slope), 1e-9)
    icpt = max(float(icpt), 0.05 * float(np.min(y)))
    if not one.any():  # every row includes communication: attribute half to compute
        icpt, slope = 0.5 * icpt, 0.5 * slope
    return icpt, slope


def _comm_guess(t: PlacementTable, icpt: float, slope: float) -> float:
    multi = t.num_replicas > 1
    if not multi.any():
        return 1e-4
    extra = t.step_time[multi] - (icpt + slope * t.local_bsz[multi])
    return max(float(np.median(extra)), 1e-4 * float(np.median(t.step_time)))


class _ParamsModel:
    """Shared plumbing: a parameter vector <-> the model's parameter dataclass."""

    params_cls: type
    param_names: tuple[str, ...]

    def make(self, theta):
        return self.params_cls(**dict(zip(self.param_names, map(float, theta))))

    def from_dict(self, d):
        return self.params_cls.from_dict(d)


class RingModel(_ParamsModel):
    """ringsched's model (perfmodel.ring), fitted in its time form."""

    name = "ring"
    params_cls = RingParams
    # rack_transfer_s and reduce_s are not identifiable from single-rack step times:
    # reduce_s folds into the transfer terms, rack_transfer_s stays None (= inter).
    param_names = ("compute_base_s", "compute_per_sample_s", "colocation_slowdown",
                   "latency_intra_s", "latency_inter_s", "intra_transfer_s", "bus_share_exponent",
                   "inter_transfer_s", "server_overhead_s", "overlap_fraction", "overlap_exponent")

    def bounds(self):
        lo = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0])
        hi = np.array([np.inf, np.inf, 2.0, np.inf, np.inf, np.inf, 1.0, np.inf, np.inf, 1.0, 32.0])
        return lo, hi

    def starts(self, t):
        a, b = _compute_guess(t)
        c = _comm_guess(t, a, b)
        out = []
        for phi, g in ((0.5, 2.0), (0.9, 6.0), (0.2, 1.5)):
            out.append(np.array([a, b, 0.02, c / 200, c / 100, c / 20, 0.5, c / 2, c / 50, phi, g]))
        return out

    def predict(self, params, t):
        return step_time_s(params, t.local_bsz, t.num_replicas, t.num_nodes, t.max_per_node)



class PolluxModel(_ParamsModel):
    """The Pollux (OSDI'21) throughput model, fitted by the same code."""

    name = "pollux"
    params_cls = PolluxParams
    param_names = ("alpha_c", "beta_c", "alpha_r", "beta_r", "alpha_n", "beta_n", "gamma")

    def bounds(self):
        lo = np.array([0, 0, 0, 0, 0, 0, 1.0])
        hi = np.array([np.inf] * 6 + [32.0])
        return lo, hi

    def starts(self, t):
        a, b = _compute_guess(t)
        c = _comm_guess(t, a, b)
        return [np.array([a, b, c / 10, c / 100, c, c / 20, g]) for g in (1.5, 3.0, 8.0)]

    def predict(self, params, t):
        return pollux_step_time_s(params, t.local_bsz, t.num_replicas, t.num_nodes)


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
    lo, hi = model.bounds()
    log_y = np.log(t.step_time)

    def residuals(theta: np.ndarray) -> np.ndarray:
        pred = model.predict(model.make(np.clip(theta, lo, hi)), t)
        return np.log(np.maximum(pred, 1e-12)) - log_y

    best = None
    for x0 in model.starts(t):
        x0 = _strictly_inside(x0, lo, hi)
        r = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=LOSS_SCALE,
                          x_scale="jac", max_nfev=400)
        if best is None or r.cost < best.cost:
            best = r
    params = model.make(np.clip(best.x, lo, hi))
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

