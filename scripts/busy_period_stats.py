"""Recompute the demo workload's shape (traces/synthetic.py, BUSY_*) from Philly's philly.csv.

    python scripts/busy_period_stats.py [../shared/traces/philly-pollux/philly.csv]

8-hour windows of submissions; the busy ones are the top 10% by submitted GPU-time. Prints
their GPU-count table, the p50/p90 duration per size class and the busy/mean load ratio.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

WINDOW_S = 8 * 3600
CLASSES = ((1, 1), (2, 4), (8, 128))


def main(path: Path) -> None:
    df = pd.read_csv(path, parse_dates=["timestamp"])
    t = (df["timestamp"] - df["timestamp"].min()).dt.total_seconds()
    df["window"] = (t // WINDOW_S).astype(int)
    n_windows = int(t.max() // WINDOW_S) + 1
    offered = (df.groupby("window")["gpu_time"].sum() / WINDOW_S).reindex(range(n_windows), fill_value=0.0)
    busy_windows = offered[offered >= offered.quantile(0.9)].index
    busy = df[df["window"].isin(busy_windows)]
    print(f"{n_windows} windows; busy: {len(busy_windows)} (offered >= {offered.quantile(0.9):,.0f} GPUs), "
          f"{len(busy):,} jobs")
    print("BUSY_GPU_COUNTS =", {int(g): int(c) for g, c in busy["num_gpus"].value_counts().sort_index().items()})
    for lo, hi in CLASSES:
        d = busy.loc[busy["num_gpus"].between(lo, hi), "duration"]
        print(f"  {lo}-{hi} GPUs: {len(d):,} jobs, p50 {d.quantile(0.5):,.0f} s, p90 {d.quantile(0.9):,.0f} s")
    print(f"BUSY_LOAD_RATIO = {offered[busy_windows].mean() / offered.mean():.2f}")
    multi = busy["num_gpus"] > 1
    print(f"multi-GPU jobs: {multi.mean():.1%} of jobs, {busy.loc[multi, 'gpu_time'].sum() / busy['gpu_time'].sum():.0%} "
          "of GPU-time")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else
         Path(__file__).resolve().parents[2] / "shared" / "traces" / "philly-pollux" / "philly.csv")
