"""The evaluation suite of issue 15 (docs/suite.md), with its timing.

Runs ``ringsched suite`` with the given options (``--quick``, ``--workloads``, ``--engine
ray``, ... : ``ringsched suite --help``), then prints the whole run's wall time and each
policy's mean wall time per cell as a ratio to fifo's in the same run (this machine is
shared: read the ratios, not the seconds).

    python benchmarks/suite.py [--out suite-results] [--workers 2] [--quick] [--workloads a,b]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    import pandas as pd

    from ringsched.cli.main import app

    args = sys.argv[1:]
    out = Path(args[args.index("--out") + 1]) if "--out" in args else Path("suite-results")
    if "--out" not in args:
        args += ["--out", str(out)]
    t0 = time.perf_counter()
    try:
        app(args=["suite", *args], standalone_mode=False)
    except SystemExit as e:  # typer's exit on --help or bad input
        if e.code:
            raise
    wall = time.perf_counter() - t0
    cells = pd.read_parquet(out / "cells.parquet")
    per = cells.groupby("policy")["wall_s"].mean()
    ref = per.get("fifo", per.min())
    print(f"suite: {len(cells)} cells in {wall / 60:.1f} min (target: under 45 min for the whole suite)")
    print("mean wall per cell / fifo's: " + ", ".join(f"{p} {v / ref:.1f}x" for p, v in per.sort_values().items()))


if __name__ == "__main__":
    main()
