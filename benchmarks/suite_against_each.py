"""GADGET (or ``--target``) against each baseline alone over a suite run's cells (docs/suite.md,
"Third round"): per estimate setting and baseline, the geometric mean over the workloads of the
target's mean over seeds over the baseline's, for total utility (> 1 favours the target) and
mean JCT (< 1 favours it), and whether the target is ahead on both.

    python benchmarks/suite_against_each.py SUITE_OUT [--target gadget]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd


def against_each(cells: pd.DataFrame, target: str = "gadget") -> pd.DataFrame:
    m = cells.groupby(["estimates", "workload", "policy"])[["total_utility", "mean_jct_s"]].mean().reset_index()
    rows = []
    for est, g in m.groupby("estimates"):
        t = g.pivot(index="workload", columns="policy")
        for b in sorted(set(g.policy) - {target}):
            u = float(np.exp(np.log(t["total_utility"][target] / t["total_utility"][b]).mean()))
            j = float(np.exp(np.log(t["mean_jct_s"][target] / t["mean_jct_s"][b]).mean()))
            rows.append((est, b, u, j, u > 1 and j < 1))
    return pd.DataFrame(rows, columns=["estimates", "baseline", "utility_ratio", "mean_jct_ratio", "ahead_on_both"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a suite's --out folder (its cells.parquet)")
    ap.add_argument("--target", default="gadget")
    a = ap.parse_args()
    print(against_each(pd.read_parquet(a.out / "cells.parquet"), a.target).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
