"""Wall time of `ringsched model fit` and `model predict` on a 2,000-row file (target: < 3 s each).

Prints each command's wall time and its ratio to a reference run in the same process: the
bare interpreter start-up plus `import ringsched.cli.main` (what every command pays anyway).

    python benchmarks/model_cli_speed.py [--rows 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.perfmodel.ring import RingParams, step_time_s


def make_rows(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = RingParams(compute_base_s=0.02, compute_per_sample_s=4e-4, colocation_slowdown=0.03,
                   latency_inter_s=1e-4, intra_transfer_s=0.004, bus_share_exponent=0.5,
                   inter_transfer_s=0.05, overlap_fraction=0.6, overlap_exponent=3.0)
    placements = ["".join(rng.choice(list("1234"), size=rng.integers(1, 5))) for _ in range(n)]
    k = np.array([len(s) for s in placements])
    w = np.array([sum(map(int, s)) for s in placements])
    d = np.array([max(map(int, s)) for s in placements])
    b = rng.choice([16, 32, 64, 128, 256, 512], size=n)
    y = step_time_s(p, b, w, k, d) * np.exp(rng.normal(0, 0.05, n))
    return pd.DataFrame({"placement": placements, "local_bsz": b, "step_time": y})


def timed(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "data.csv"
        make_rows(a.rows).to_csv(data, index=False)
        make_rows(a.rows, seed=1)[["placement", "local_bsz"]].to_csv(tmp / "query.csv", index=False)
        exe = [sys.executable, "-m", "ringsched.cli.main"]
        ref = timed([sys.executable, "-c", "import ringsched.cli.main"], a.repeat)
        fit_s = timed(exe + ["model", "fit", str(data), "--out", str(tmp / "p.json")], a.repeat)
        pred_s = timed(exe + ["model", "predict", str(tmp / "p.json"), str(tmp / "query.csv"),
                              "--out", str(tmp / "pred.csv")], a.repeat)
    print(f"rows={a.rows} reference(import)={ref:.2f}s")
    for name, s in (("fit", fit_s), ("predict", pred_s)):
        verdict = "OK" if s < 3.0 else "OVER TARGET"
        print(f"{name:8s} wall={s:.2f}s  ratio_to_reference={s / ref:.2f}  target<3s {verdict}")


if __name__ == "__main__":
    main()
