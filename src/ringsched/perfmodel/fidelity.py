"""Cross-validated fidelity of the step-time models on one measured profile folder.

Protocol (docs/model.md): the distinct placement shapes (num_nodes, num_replicas) are split
at random, ``train_frac`` (25%) for fitting and the rest for testing, for each of ``seeds``
(5) seeds; both models are fitted by the same code on the same rows; the absolute
percentage error of step time on the test rows of all seeds is pooled and summarised by its
median and 90th percentile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ringsched.perfmodel.data import PlacementTable
from ringsched.perfmodel.fit import MODELS, abs_pct_error, fit


@dataclass(frozen=True)
class FidelityResult:
    name: str
    rows: int
    shapes: int
    median_ape: dict[str, float]
    p90_ape: dict[str, float]
    per_seed: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"profile": self.name, "rows": self.rows, "shapes": self.shapes,
                "median_ape": self.median_ape, "p90_ape": self.p90_ape, "per_seed": self.per_seed}


def split_shapes(t: PlacementTable, seed: int, train_frac: float) -> np.ndarray:
    """Boolean mask of training rows: a random ``train_frac`` of the distinct shapes."""
    shapes = np.unique(t.shapes(), axis=0)  # sorted, so the split depends only on the seed
    n_train = min(len(shapes) - 1, max(1, int(round(train_frac * len(shapes)))))
    pick = np.random.default_rng(seed).permutation(len(shapes))[:n_train]
    train = {tuple(s) for s in shapes[pick].tolist()}
    return np.array([tuple(s) in train for s in t.shapes().tolist()])


def cross_validate(t: PlacementTable, name: str = "", seeds: int = 5, train_frac: float = 0.25,
                   models: tuple[str, ...] = ("ring", "pollux")) -> FidelityResult:
    errors: dict[str, list[np.ndarray]] = {m: [] for m in models}
    per_seed = []
    for seed in range(seeds):
        train = split_shapes(t, seed, train_frac)
        tr, te = t.subset(train), t.subset(~train)
        row = {"seed": seed, "train_rows": int(train.sum()), "test_rows": int((~train).sum())}
        for m in models:
            model = MODELS[m]
            res = fit(model, tr)
            e = abs_pct_error(model.predict(res.params, te), te.step_time)
            errors[m].append(e)
            row[f"{m}_median_ape"] = float(np.median(e))
        per_seed.append(row)
    pooled = {m: np.concatenate(v) for m, v in errors.items()}
    return FidelityResult(
        name=name, rows=len(t), shapes=len(np.unique(t.shapes(), axis=0)),
        median_ape={m: float(np.median(e)) for m, e in pooled.items()},
        p90_ape={m: float(np.percentile(e, 90)) for m, e in pooled.items()},
        per_seed=per_seed,
    )
