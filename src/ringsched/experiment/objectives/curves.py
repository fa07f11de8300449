"""Learning curves: validation quality versus epochs, per catalogue model (docs/objectives.md).

Measured curves (Pollux, ``shared/profiles/pollux-measured/<app>/validation-<B>.csv``): row i
is the validation metric after epoch i + 1 of a run with total batch B; we take the run at the
application's smallest batch M0 (the one its trace work is defined by, ``traces/pollux.py``).
Applications map to catalogue models as in ``traces/pollux.py``: cifar10 -> resnet18_cifar10,
imagenet -> resnet50, ncf -> ncf, yolov3 -> yolov3. yolov3's metric is a validation loss (lower
is better); the others are accuracies / hit rates (higher is better). An epoch is
``WORK_SAMPLES[app] / max_epochs`` samples (the dataset size of the Pollux workload).

Other models: the family q(e) = q_inf - (q_inf - q0) * exp(-e / tau) with the per-model
(epoch_samples, q0, q_inf, tau) of ``FAMILY`` (round figures for the usual dataset and metric:
top-1 accuracy for image models, BLEU/100 for the transformer, next-token accuracy for language
models, 1 - WER for DeepSpeech2).

Past the end of a measured curve the quality stays at its last value. ``best`` is the running
best (the checkpoint one would keep), which is what "quality" means in the reports.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# model -> (epoch_samples, q0, q_inf, tau_epochs)
FAMILY: dict[str, tuple[float, float, float, float]] = {
    "alexnet": (1_281_167, 0.10, 0.57, 12.0),
    "vgg16": (1_281_167, 0.12, 0.71, 15.0),
    "resnet18": (1_281_167, 0.15, 0.70, 15.0),
    "resnet101": (1_281_167, 0.15, 0.77, 18.0),
    "densenet121": (1_281_167, 0.15, 0.75, 18.0),
    "inception_v3": (1_281_167, 0.15, 0.78, 20.0),
    "mobilenet_v2": (1_281_167, 0.10, 0.72, 25.0),
    "bert_base": (88_641, 0.70, 0.88, 0.7),
    "gpt2_small": (1_000_000, 0.20, 0.45, 3.0),
    "lstm_lm": (60_000, 0.15, 0.30, 8.0),
    "transformer": (4_500_000, 0.05, 0.27, 5.0),
    "deepspeech2": (7_156, 0.20, 0.76, 20.0),
}
DEFAULT_FAMILY = (1_000_000, 0.10, 0.70, 15.0)

# catalogue model -> (Pollux application, higher_is_better)
MEASURED: dict[str, tuple[str, bool]] = {
    "resnet18_cifar10": ("cifar10", True),
    "resnet50": ("imagenet", True),
    "ncf": ("ncf", True),
    "yolov3": ("yolov3", False),
}


def profiles_dir() -> Path:
    env = os.environ.get("RINGSCHED_POLLUX_PROFILES")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for up in here.parents:
        cand = up.parent / "shared" / "profiles" / "pollux-measured"
        if cand.is_dir():
            return cand
    return Path("/work/shared/profiles/pollux-measured")


@dataclass(frozen=True)
class Curve:
    model: str
    source: str  # "measured:<file>" or "family"
    epoch_samples: float
    metric: np.ndarray  # metric after epoch 1..n (own units; len n)
    higher_is_better: bool = True

    @functools.cached_property
    def quality(self) -> np.ndarray:
        """Quality after epoch 1..n, oriented so higher is better (loss -> -loss)."""
        return self.metric if self.higher_is_better else -self.metric

    @functools.cached_property
    def best(self) -> np.ndarray:
        return np.maximum.accumulate(self.quality)

    def best_at(self, epochs: float) -> float:
        """Running best quality after ``epochs`` (whole epochs seen; before epoch 1: epoch 1's)."""
        k = int(np.floor(epochs + 1e-9))
        k = min(max(k, 1), len(self.best))
        return float(self.best[k - 1])

    def metric_of(self, quality: float) -> float:
        return quality if self.higher_is_better else -quality


def _family(model: str, n_epochs: int) -> Curve:
    es, q0, qi, tau = FAMILY.get(model, DEFAULT_FAMILY)
    e = np.arange(1, n_epochs + 1, dtype=float)
    return Curve(model, "family", float(es), qi - (qi - q0) * np.exp(-e / tau), True)


@functools.lru_cache(maxsize=None)
def _measured(model: str) -> Curve | None:
    app, hib = MEASURED.get(model, (None, True))
    if app is None:
        return None
    from ringsched.traces.pollux import WORK_PROVENANCE, WORK_SAMPLES

    m0, max_epochs, _, _ = WORK_PROVENANCE[app]
    path = profiles_dir() / app / f"validation-{m0}.csv"
    if not path.is_file():
        return None
    import pandas as pd

    metric = pd.read_csv(path)["metric"].to_numpy(dtype=float)
    return Curve(model, f"measured:{app}/{path.name}", WORK_SAMPLES[app] / max_epochs, metric, hib)


@functools.lru_cache(maxsize=None)
def learning_curve(model: str, min_epochs: int = 200) -> Curve:
    """The model's curve: measured where one exists, else the family (``min_epochs`` long)."""
    c = _measured(model)
    return c if c is not None else _family(model, min_epochs)


def extend(curve: Curve, n_epochs: int) -> Curve:
    """The curve to at least ``n_epochs`` (a measured curve holds its last value)."""
    n = len(curve.metric)
    if n >= n_epochs:
        return curve
    if curve.source == "family":
        return _family(curve.model, n_epochs)
    metric = np.concatenate([curve.metric, np.full(n_epochs - n, curve.metric[-1])])
    return Curve(curve.model, curve.source, curve.epoch_samples, metric, curve.higher_is_better)


def online_stop_epochs(best: np.ndarray, *, min_delta: float, patience: int, min_epochs: int) -> np.ndarray:
    """For every epoch n (1-based index n-1): True when the rule, looking only at epochs 1..n,
    says "stop": the running best improved by less than ``min_delta`` x (its gain since epoch 1)
    in each of the last ``patience`` epochs, and n >= ``min_epochs``. Causal by construction:
    entry n depends on best[:n] only."""
    n = best.size
    out = np.zeros(n, dtype=bool)
    run = 0
    for i in range(1, n):
        gain = best[i] - best[0]
        flat = (best[i] - best[i - 1]) < min_delta * max(gain, 1e-12)
        run = run + 1 if flat else 0
        out[i] = run >= patience and (i + 1) >= min_epochs
    return out


ESTIMATE_EPOCHS = 1000  # how far a curve is followed to find where it flattens


def converge_epochs(curve: Curve, *, min_delta: float, patience: int, min_epochs: int) -> int | None:
    """The first epoch at which the online rule says the curve has flattened, following the
    curve (extended) to ``ESTIMATE_EPOCHS`` whatever a job typed: an estimate from the model's
    curve alone, so it says nothing about the job's own work. None: it never flattens there."""
    c = extend(curve, ESTIMATE_EPOCHS)
    stop = np.flatnonzero(online_stop_epochs(c.best, min_delta=min_delta, patience=patience, min_epochs=min_epochs))
    return int(stop[0]) + 1 if stop.size else None
