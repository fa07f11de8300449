"""Where the step-time error on the Pollux measurements comes from (docs/model.md, "Limits").

1. Repeat floor. Placement strings that are permutations of one another (1122, 1212, 2211)
   are the same configuration measured again: NCCL builds its ring from the topology, not
   from the order of the string. Predicting each such row by the true mean of its group is
   the best any model of the placement can do; its error is estimated from the spread
   within groups (deviations from the group mean, rescaled by sqrt(n / (n - 1)) to estimate
   deviations from the true mean).
2. Ablation. The `model fidelity` protocol (5 seeds, 25% of shapes fitted) with each of the
   calibration's parts turned off in turn: the compute target (step - sync), the
   batch-efficiency knots, the two-server slowdown, host staging, and the intra <= inter
   bounds.
3. Pollux fitted on step times only (no compute target), the most favourable fit we found
   for it, next to Pollux fitted exactly as ours.

    python benchmarks/fidelity_analysis.py [PROFILE_ROOT]
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.perfmodel import fit as fitmod
from ringsched.perfmodel.data import read_pollux_profile_dir
from ringsched.perfmodel.fidelity import cross_validate

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1].parent / "shared" / "profiles" / "pollux-measured"


def repeat_floor(d: Path) -> tuple[int, float, float]:
    """Rows in permutation groups, and the median / p90 error of predicting their true mean."""
    p = pd.read_csv(d / "placements.csv", dtype={"placement": str})
    p["multiset"] = p.placement.map(lambda s: "".join(sorted(s)))
    y = np.log(p.step_time)
    g = y.groupby([p.multiset, p.local_bsz])
    n, mu = g.transform("size"), g.transform("mean")
    sel = n >= 2
    # y - mean(group) has variance s2 (n-1)/n; rescale to a deviation from the true mean
    dev = (y - mu)[sel] * np.sqrt(n[sel] / (n[sel] - 1))
    e = np.abs(np.exp(dev) - 1)
    return int(sel.sum()), float(np.median(e)), float(np.percentile(e, 90))


@contextmanager
def patched(obj, name, value):
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


class _Variant(fitmod.RingModel):
    """ringsched's model with one part of the calibration removed."""

    def __init__(self, drop: str):
        self.drop = drop

    def problem(self, t):
        with patched(fitmod, "batch_knots", lambda bsz: np.zeros(0)) if self.drop == "knots" else _noop():
            prob = super().problem(t)
        if self.drop in ("two-server", "staging"):  # the parameter still exists but does nothing
            field = "two_server_slowdown" if self.drop == "two-server" else "host_staging"
            return replace(prob, make=lambda theta: replace(prob.make(theta), **{field: 0.0}))
        if self.drop == "bounds":  # intra-server terms may exceed the cross-server ones again
            hi = prob.hi.copy()
            hi[3] = hi[5] = 1e3
            return replace(prob, hi=hi)
        return prob


@contextmanager
def _noop():
    yield


def cv(d: Path, model, name: str, compute_target: bool) -> tuple[float, float]:
    weight = fitmod.COMPUTE_WEIGHT if compute_target else 0.0
    with patched(fitmod, "COMPUTE_WEIGHT", weight):
        saved = fitmod.MODELS[name]
        fitmod.MODELS[name] = model
        try:
            r = cross_validate(read_pollux_profile_dir(d), d.name, models=(name,))
        finally:
            fitmod.MODELS[name] = saved
    return r.median_ape[name], r.p90_ape[name]


def main() -> None:
    if not ROOT.exists():
        print(f"skipped: {ROOT} not present")
        return
    for d in sorted(p for p in ROOT.iterdir() if (p / "placements.csv").exists()):
        rows, med, p90 = repeat_floor(d)
        print(f"{d.name}: repeat floor on {rows} rows: median {med:.1%}  p90 {p90:.1%}")
        runs = [("ringsched, as shipped", fitmod.RingModel(), "ring", True),
                ("  without the compute target", fitmod.RingModel(), "ring", False),
                ("  without batch-efficiency knots", _Variant("knots"), "ring", True),
                ("  without the two-server slowdown", _Variant("two-server"), "ring", True),
                ("  without host staging", _Variant("staging"), "ring", True),
                ("  without intra <= inter bounds", _Variant("bounds"), "ring", True),
                ("Pollux, fitted as ours", fitmod.PolluxModel(), "pollux", True),
                ("Pollux, on step times only", fitmod.PolluxModel(), "pollux", False)]
        for label, model, name, target in runs:
            med, p90 = cv(d, model, name, target)
            print(f"  {label:36s} median {med:5.1%}  p90 {p90:5.1%}", flush=True)


if __name__ == "__main__":
    main()
