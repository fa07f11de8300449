"""GADGET (or ``--target``) against each baseline alone over a suite run's cells (docs/suite-history.md,
"Third round"): per estimate setting and baseline, the geometric mean over the workloads of the
target's mean over seeds over the baseline's, for total utility (> 1 favours the target) and
mean JCT (< 1 favours it), and whether the target is ahead on both. With ``--trades``, per
workload instead: which baselines are at least as good on both metrics (a loss that is not a
trade), and the target's mean JCT over the best mean JCT of the baselines that keep at least
``--keep`` of the target's utility (a mean JCT bought with utility does not count there);
``--per-seed`` reads each seed alone (a mean over seeds hides a seed a baseline wins on both).

    python benchmarks/suite_against_each.py SUITE_OUT [--target gadget] [--trades [--keep 0.97] [--per-seed]]
"""

from __future__ import annotations

import argparse
import sys
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


def trades(cells: pd.DataFrame, target: str = "gadget", keep: float = 0.97, per_seed: bool = False) -> pd.DataFrame:
    """Per estimate setting and workload (and seed, ``per_seed``; else the means over seeds): the
    best mean JCT of any baseline over the target's (as the suite's ratio), the utility of that
    baseline over the target's, the target's mean JCT over the best of the baselines with at
    least ``keep`` x its utility (NaN: none has), and the baselines at least as good on both."""
    keys = ["estimates", "workload"] + (["seed"] if per_seed else [])
    m = cells.groupby(keys + ["policy"])[["total_utility", "mean_jct_s"]].mean()
    rows = []
    for key, g in m.groupby(level=list(range(len(keys))), sort=False):
        g = g.droplevel(list(range(len(keys))))
        if target not in g.index or len(g) < 2:
            continue
        t, b = g.loc[target], g.drop(index=target)
        fastest = b.mean_jct_s.idxmin()
        kept = b[b.total_utility >= keep * t.total_utility]
        both = b[(b.total_utility >= t.total_utility) & (b.mean_jct_s <= t.mean_jct_s)]
        rows.append((*key, t.mean_jct_s / b.mean_jct_s.min(), fastest, b.total_utility[fastest] / t.total_utility,
                     t.mean_jct_s / kept.mean_jct_s.min() if len(kept) else np.nan, ",".join(sorted(both.index))))
    return pd.DataFrame(rows, columns=[*keys, "mean_jct_ratio", "fastest", "fastest_utility_ratio",
                                       "mean_jct_ratio_at_utility", "at_least_as_good_on_both"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a suite's --out folder (its cells.parquet)")
    ap.add_argument("--target", default="gadget")
    ap.add_argument("--trades", action="store_true", help="per workload: trades of utility for mean JCT, and losses")
    ap.add_argument("--keep", type=float, default=0.97, help="with --trades: the share of the target's utility kept")
    ap.add_argument("--per-seed", action="store_true", help="with --trades: each seed alone, not the means over seeds")
    a = ap.parse_args()
    if a.per_seed and not a.trades:
        print("suite_against_each.py: --per-seed goes with --trades", file=sys.stderr)
        raise SystemExit(2)
    if not (a.out / "cells.parquet").is_file():
        print(f"suite_against_each.py: {a.out / 'cells.parquet'}: no such file (a suite's --out folder)", file=sys.stderr)
        raise SystemExit(2)
    cells = pd.read_parquet(a.out / "cells.parquet")
    table = trades(cells, a.target, a.keep, a.per_seed) if a.trades else against_each(cells, a.target)
    print(table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
