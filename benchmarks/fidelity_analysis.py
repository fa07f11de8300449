"""Where the step-time error on the Pollux measurements comes from (docs/model.md, "Limits").

1. Noise floor: for every placement *string* separately, fit a 4-parameter curve in batch size
   (compute scale, communication, overlap share, exposed tail) in-sample. No model that sees
   only (placement, batch) can beat this on the same rows by much; its p90 is printed.
2. Systematic residual: fit ringsched's model on all rows, average its log residual per
   placement, and print the correlation of that residual with placement features among
   multi-server placements (k = servers, k2 = "exactly two servers").
3. What-if: the cross-validated error (the `model fidelity` protocol) of ringsched's model
   with one extra fitted factor on the cross-server transfer of two-server rings -- the
   special case docs/model.md explains we did not adopt.

    python benchmarks/fidelity_analysis.py [PROFILE_ROOT]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from dataclasses import replace

from ringsched.perfmodel import fit as fitmod
from ringsched.perfmodel.data import read_placements, read_pollux_profile_dir
from ringsched.perfmodel.fidelity import cross_validate
from ringsched.perfmodel.fit import MODELS, fit
from ringsched.perfmodel.ring import RingParams, step_time_s

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1].parent / "shared" / "profiles" / "pollux-measured"


def frames(d: Path) -> pd.DataFrame:
    p = pd.read_csv(d / "placements.csv", dtype={"placement": str})
    s = pd.read_csv(d / "scalability.csv")
    s["placement"] = "s" + s.num_nodes.astype(str) + "x" + s.num_replicas.astype(str)
    return pd.concat([p, s], ignore_index=True)


def noise_floor(d: Path) -> np.ndarray:
    df = frames(d)
    one = df[df.placement == "1"]
    c1 = np.polyfit(one.local_bsz, one.step_time, 1)
    errs = []
    for _, g in df.groupby("placement"):
        b, y = g.local_bsz.to_numpy(float), g.step_time.to_numpy(float)
        comp = np.polyval(c1, b)

        def f(th):
            e, c, phi, t = th
            exposed = np.logaddexp(0, (c - phi * comp * (1 + e) - t) / 0.005) * 0.005
            return np.log(comp * (1 + e) + exposed + t) - np.log(y)

        r = least_squares(f, [0, 0.05, 0.5, 0.001], bounds=([-0.5, 0, 0, 0], [2, 10, 1, 10]),
                          loss="soft_l1", f_scale=0.05)
        errs.append(np.abs(np.exp(f(r.x)) - 1))
    return np.concatenate(errs)


def residual_correlations(d: Path) -> dict[str, float]:
    _, t = read_placements(d / "placements.csv", require_step_time=True)
    res = fit(MODELS["ring"], t)
    r = np.log(t.step_time / MODELS["ring"].predict(res.params, t))
    df = pd.read_csv(d / "placements.csv", dtype={"placement": str}).assign(r=r)
    g = df.groupby("placement").r.mean().reset_index()
    digits = g.placement.map(lambda s: [int(c) for c in s])
    g["k"] = digits.map(len)
    g["k2"] = (g.k == 2).astype(float)
    g["d_min"] = digits.map(min)
    g["d_max"] = digits.map(max)
    g["w"] = digits.map(sum)
    g = g[g.k > 1]
    return {c: round(float(np.corrcoef(g.r, g[c])[0, 1]), 2) for c in ("k", "k2", "d_min", "d_max", "w")}


class TwoServerRingModel(fitmod.RingModel):
    """ringsched's model plus a fitted slow-down of two-server rings' cross-server transfer."""

    param_names = fitmod.RingModel.param_names + ("two_server_factor",)

    def bounds(self):
        lo, hi = super().bounds()
        return np.append(lo, 0.0), np.append(hi, 3.0)

    def starts(self, t):
        return [np.append(s, 0.2) for s in super().starts(t)]

    def make(self, theta):
        base = RingParams(**dict(zip(fitmod.RingModel.param_names, map(float, theta[:-1]))))
        return base, float(theta[-1])

    def predict(self, params, t):
        p, factor = params
        args = (t.local_bsz, t.num_replicas, t.num_nodes, t.max_per_node)
        two = replace(p, inter_transfer_s=p.inter_transfer_s * (1 + factor))
        return np.where(t.num_nodes == 2, step_time_s(two, *args), step_time_s(p, *args))


def two_server_whatif(d: Path) -> tuple[float, float]:
    saved = fitmod.MODELS["ring"]
    fitmod.MODELS["ring"] = TwoServerRingModel()
    try:
        r = cross_validate(read_pollux_profile_dir(d), d.name, models=("ring",))
    finally:
        fitmod.MODELS["ring"] = saved
    return r.median_ape["ring"], r.p90_ape["ring"]


def main() -> None:
    if not ROOT.exists():
        print(f"skipped: {ROOT} not present")
        return
    for d in sorted(p for p in ROOT.iterdir() if (p / "placements.csv").exists()):
        e = noise_floor(d)
        print(f"{d.name:9s} per-placement floor: median {np.median(e):.1%}  p90 {np.percentile(e, 90):.1%}  "
              f"| residual correlation (multi-server): {residual_correlations(d)}")
        med, p90 = two_server_whatif(d)
        print(f"{'':9s} with a two-server factor (cross-validated): median {med:.1%}  p90 {p90:.1%}")


if __name__ == "__main__":
    main()
