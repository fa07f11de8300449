"""The suite under an objective other than jct (``ringsched suite --objective``, docs/suite.md):
each of the objective's metrics for the target, for the target deciding as under jct (the
same run judged by the objective), and for the best baseline, per workload (means over
seeds), their geometric means over the workloads, and the target's difference to the best
baselines paired per seed (a target met by 0.02% is read with its spread). Recomputable from
``cells.parquet``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ringsched.experiment.objectives import parse_objective
from ringsched.experiment.suite import pair_index, paired_reading, rel_diffs


def objective_table(cells: pd.DataFrame, target: str) -> pd.DataFrame:
    """Per workload, estimates and metric of the cells' objective: target (``obj``), target
    deciding as jct (``jct``), best baseline and its name, and the two ratios target / other.
    Empty when the cells ran under jct (nothing to compare)."""
    if "objective" not in cells or not len(cells):
        return pd.DataFrame()
    spec = str(cells["objective"].iloc[0])
    metrics = parse_objective(spec).metrics
    if not metrics:
        return pd.DataFrame()
    own = cells["decided_as"] == cells["objective"]
    names = [m for m, _ in metrics]
    mine = cells[own].groupby(["workload", "estimates", "policy"], sort=False)[names].mean()
    ref = cells[~own & (cells["policy"] == target)].groupby(["workload", "estimates"], sort=False)[names].mean()
    out = []
    for (wname, est), g in mine.groupby(level=[0, 1], sort=False):
        g = g.droplevel([0, 1])
        if target not in g.index or len(g) < 2 or (wname, est) not in ref.index:
            continue
        base = g.drop(index=target)
        for m, how in metrics:
            best = base[m].idxmax() if how == "max" else base[m].idxmin()
            t, j, b = float(g.loc[target, m]), float(ref.loc[(wname, est), m]), float(base.loc[best, m])
            out.append({"objective": spec, "workload": wname, "estimates": est, "metric": m, "better": how,
                        "target": t, "target_jct": j, "best_baseline": best, "baseline": b,
                        "ratio_to_jct": t / j if j else np.nan, "ratio_to_baseline": t / b if b else np.nan})
    return pd.DataFrame(out)


def _paired(cells: pd.DataFrame, t: pd.DataFrame, target: str, level: float) -> dict:
    """Per (estimates, metric): (mean, low, high, pairs, p) of target / best baseline - 1, the best
    baseline fixed per workload by ``objective_table``, paired per workload and seed."""
    idx, seeds = pair_index(cells)
    return {(est, m): paired_reading([x for row in g.itertuples()
                                      for x in rel_diffs(idx, seeds, row.workload, est, target, row.best_baseline, m)],
                                     level)
            for (est, m), g in t.groupby(["estimates", "metric"], sort=False)}


def objective_overall(t: pd.DataFrame, cells: pd.DataFrame, target: str, level: float = 0.95) -> pd.DataFrame:
    """Per estimates and metric: geometric means over workloads of the target's value, its jct
    reference's and every policy's best baseline's, the two ratios, on how many workloads the
    target is better than each (ties count as not better), and the target's relative difference
    to the best baselines paired per workload and seed with its Student-t interval and
    signed-rank p-value (> 0 favours the target where the metric is maximised, < 0 where it
    is minimised)."""
    if not len(t):
        return pd.DataFrame()
    paired = _paired(cells, t, target, level)

    def gm(x) -> float:
        x = np.asarray(x, dtype=float)
        ok = np.isfinite(x) & (x > 0)
        return float(np.exp(np.log(x[ok]).mean())) if ok.any() else np.nan

    out = []
    for (est, m), g in t.groupby(["estimates", "metric"], sort=False):
        up = g["better"].iloc[0] == "max"
        better = (lambda a, b: a > b) if up else (lambda a, b: a < b)
        out.append({"objective": g["objective"].iloc[0], "estimates": est, "metric": m, "better": g["better"].iloc[0],
                    "workloads": len(g), "target": gm(g["target"]), "target_jct": gm(g["target_jct"]),
                    "baseline": gm(g["baseline"]), "ratio_to_jct": gm(g["ratio_to_jct"]),
                    "ratio_to_baseline": gm(g["ratio_to_baseline"]),
                    "better_than_jct": int(better(g["target"], g["target_jct"]).sum()),
                    "better_than_baseline": int(better(g["target"], g["baseline"]).sum()),
                    **dict(zip(("paired_rel_diff", "ci_low", "ci_high", "pairs", "p_signed_rank"), paired[(est, m)])),
                    "level": level})
    return pd.DataFrame(out)
