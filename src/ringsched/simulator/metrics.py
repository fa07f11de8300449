"""Summary metrics of a run, computed from the per-job table (so anyone holding the Parquet
file can recompute them) plus the few cluster-level integrals a job table cannot hold.

Definitions (docs/metrics.md):

* JCT = finish - arrival, over completed jobs; queueing = first start - arrival.
* makespan = last finish - first arrival.
* total utility = sum of u_j(JCT_j) over completed jobs (unfinished and rejected jobs get 0).
* GPU utilisation = GPU-seconds held by jobs / (cluster GPUs x makespan).
* finish-time fairness (Themis) rho_j = JCT_j / isolated_j, isolated_j = the job's run time
  alone on the empty cluster at its largest size, consolidated; worst = max over completed.
* Jain's index over completed jobs' speed (isolated / JCT): 1 is perfectly even.
* energy: busy GPUs, idle GPUs on powered servers, powered servers (objectives/energy.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ringsched.objectives.energy import EnergyModel


def jain_index(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    if x.size == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * np.square(x).sum()))


def _f(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def summarize(jobs: pd.DataFrame, *, total_gpus: int, powered_server_s: float, powered_gpu_s: float,
              energy: EnergyModel | None = None) -> dict:
    energy = energy or EnergyModel()
    done = jobs[jobs["status"] == "completed"]
    jct = done["jct_s"].to_numpy(dtype=float)
    rho = done["ftf_rho"].to_numpy(dtype=float)
    gpu_s = float(jobs["gpu_s"].sum())
    if len(done):
        makespan = float(done["finish_s"].max() - jobs["arrival_s"].min())
    else:
        makespan = 0.0
    pct = (lambda q: float(np.percentile(jct, q))) if jct.size else (lambda q: None)
    return {
        "jobs": int(len(jobs)),
        "completed": int(len(done)),
        "waiting": int((jobs["status"] == "waiting").sum()),
        "rejected": int((jobs["status"] == "rejected").sum()),
        "mean_jct_s": _f(jct.mean()) if jct.size else None,
        "p50_jct_s": pct(50),
        "p99_jct_s": pct(99),
        "mean_queue_s": _f(done["queue_s"].mean()) if len(done) else None,
        "makespan_s": makespan,
        "total_utility": float(jobs["utility"].sum()),
        "max_utility": float(jobs["max_utility"].sum()),
        "gpu_utilization": gpu_s / (total_gpus * makespan) if makespan > 0 else 0.0,
        "gpu_hours": gpu_s / 3600.0,
        "energy_kwh": energy.kwh(gpu_s, powered_gpu_s, powered_server_s),
        "worst_ftf_rho": _f(rho.max()) if rho.size else None,
        "share_ftf_rho_above_1": float((rho > 1.0 + 1e-9).mean()) if rho.size else None,
        "jain_index": jain_index(1.0 / rho) if rho.size else None,
        "preemptions": int(jobs["preemptions"].sum()),
        "restarts": int(jobs["restarts"].sum()),
        "job_failures": int(jobs["failures"].sum()),
    }
