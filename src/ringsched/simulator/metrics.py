"""Summary metrics of a run, computed from the per-job table (so anyone holding the Parquet
file can recompute them) plus the few cluster-level integrals a job table cannot hold.

Definitions (docs/metrics.md):

* JCT = finish - arrival. Headline JCT figures (mean, p50, p99) charge every job that arrived:
  a job that did not finish (rejected, never scheduled, cut by the horizon) counts with
  ``end_s - arrival``, where ``end_s`` is the end of the run, so dropping a job never makes
  a policy look faster (nor less than its isolated time); ``completed`` stands beside them. ``mean_jct_completed_s`` is the
  mean over completed jobs alone. Queueing = first start - arrival, over completed jobs.
* makespan = last finish - first arrival.
* total utility = sum of u_j(JCT_j) over completed jobs (unfinished and rejected jobs get 0).
* GPU utilisation: GPU-seconds held / (cluster GPUs x span). ``gpu_utilization`` uses the
  whole span (first arrival to the last finish, or to the end of the run when jobs are left
  unfinished); ``gpu_utilization_busy`` the busy period: the time from the first arrival to
  ``busy_end_s`` during which at least one job was in the system (arrived, not finished, not
  rejected), where ``busy_end_s`` is when 99% of those jobs had finished (never after the last
  moment a GPU was held). Idle gaps and the tail of the last 1% (one long job stretched the
  old figure over 140 h at 9%) are left out; the report's time plots end there too. Both <= 1.
* finish-time fairness (Themis) rho_j = JCT_j / isolated_j, isolated_j = the job's fastest
  run alone on the empty cluster over every size, GPU type and spread it may take
  (``perfmodel/alone.py``; so rho >= 1, docs/metrics.md);
  with the charged JCT for unfinished jobs; worst = max over arrived jobs.
* Jain's index over arrived jobs' speed (isolated / charged JCT): 1 is perfectly even.
* energy: busy GPUs, idle GPUs on powered servers, powered servers (objectives/energy.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ringsched.utility.energy import EnergyModel
from ringsched.loop.world import isolated_run_s  # noqa: F401 - defined once, for both worlds


def jain_index(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    if x.size == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * np.square(x).sum()))


def _f(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def charged_jct_s(jobs: pd.DataFrame, end_s: float) -> np.ndarray:
    """JCT of every job that arrived by ``end_s``: its JCT when completed, else the later of
    ``end_s - arrival`` and its isolated time (it could not have finished sooner)."""
    arrived = jobs[jobs["arrival_s"] <= end_s]
    done = (arrived["status"] == "completed").to_numpy()
    jct = arrived["jct_s"].to_numpy(dtype=float)
    cut = np.maximum(end_s - arrived["arrival_s"].to_numpy(dtype=float), arrived["isolated_s"].to_numpy(dtype=float))
    return np.where(done, jct, cut)


def busy_period_s(jobs: pd.DataFrame, end_s: float, last_busy_s: float | None) -> float:
    """Length of the time in [first arrival, last_busy_s] with at least one job in the system
    (arrived and neither finished nor rejected)."""
    if last_busy_s is None or not len(jobs):
        return 0.0
    live = jobs[jobs["status"] != "rejected"]
    start = live["arrival_s"].to_numpy(dtype=float)
    stop = np.where(live["status"] == "completed", live["finish_s"].to_numpy(dtype=float), end_s)
    stop = np.minimum(stop, last_busy_s)
    keep = stop > start
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted(zip(start[keep].tolist(), stop[keep].tolist())):
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


BUSY_SHARE = 0.99  # the busy period ends when this share of the jobs had finished


def busy_end_s(jobs: pd.DataFrame, end_s: float, last_busy_s: float | None, share: float = BUSY_SHARE) -> float:
    """When ``share`` of the jobs that arrived and were not rejected had finished (the k-th
    finish, k = ceil(share x n); unfinished jobs never finish), at most ``last_busy_s``."""
    live = jobs[jobs["status"] != "rejected"]
    if last_busy_s is None or not len(live):
        return 0.0
    done = (live["status"] == "completed").to_numpy()
    finish = np.sort(np.where(done, live["finish_s"].to_numpy(dtype=float), np.inf))
    k = max(int(np.ceil(share * len(finish) - 1e-9)), 1)
    return float(min(finish[k - 1], last_busy_s))


def default_end_s(jobs: pd.DataFrame) -> float:
    """A run's end when not given: the last finish (the last arrival when nothing finished)."""
    return float(jobs["finish_s"].max()) if jobs["finish_s"].notna().any() else float(jobs["arrival_s"].max())


def summarize(jobs: pd.DataFrame, *, total_gpus: int, powered_server_s: float, powered_gpu_s: float,
              busy_gpu_s: float, end_s: float | None = None, last_busy_s: float | None = None,
              energy: EnergyModel | None = None) -> dict:
    """The summary of a run's job table. ``end_s`` is the run's end (``simulated_s``; default:
    the last finish), ``last_busy_s`` the last time a GPU was held (default: ``end_s``),
    ``busy_gpu_s`` the GPU-seconds held up to ``busy_end_s(jobs, end_s, last_busy_s)`` (an
    integral over time that the job table cannot hold)."""
    energy = energy or EnergyModel()
    if end_s is None:
        end_s = default_end_s(jobs)
    if last_busy_s is None:
        last_busy_s = end_s
    done = jobs[jobs["status"] == "completed"]
    jct_done = done["jct_s"].to_numpy(dtype=float)
    jct = charged_jct_s(jobs, end_s)
    arrived = jobs[jobs["arrival_s"] <= end_s]
    rho = jct / arrived["isolated_s"].to_numpy(dtype=float)
    gpu_s = float(jobs["gpu_s"].sum())
    first = float(jobs["arrival_s"].min()) if len(jobs) else 0.0
    makespan = float(done["finish_s"].max() - first) if len(done) else 0.0
    unfinished = bool(((arrived["status"] != "completed") & (arrived["status"] != "rejected")).any())
    span = max(end_s - first, makespan) if unfinished else makespan
    busy_end = busy_end_s(jobs, end_s, last_busy_s)
    busy = busy_period_s(jobs, end_s, busy_end)
    pct = (lambda q: float(np.percentile(jct, q))) if jct.size else (lambda q: None)
    return {
        "jobs": int(len(jobs)),
        "completed": int(len(done)),
        "waiting": int((jobs["status"] == "waiting").sum()),
        "rejected": int((jobs["status"] == "rejected").sum()),
        "mean_jct_s": _f(jct.mean()) if jct.size else None,
        "p50_jct_s": pct(50),
        "p99_jct_s": pct(99),
        "mean_jct_completed_s": _f(jct_done.mean()) if jct_done.size else None,
        "mean_queue_s": _f(done["queue_s"].mean()) if len(done) else None,
        "makespan_s": makespan,
        "total_utility": float(jobs["utility"].sum()),
        "max_utility": float(jobs["max_utility"].sum()),
        "gpu_utilization": gpu_s / (total_gpus * span) if span > 0 else 0.0,
        "gpu_utilization_busy": min(busy_gpu_s, gpu_s) / (total_gpus * busy) if busy > 0 else 0.0,
        "busy_period_s": busy,
        "busy_end_s": busy_end,
        "busy_gpu_s": busy_gpu_s,
        "gpu_hours": gpu_s / 3600.0,
        "energy_kwh": energy.kwh(gpu_s, powered_gpu_s, powered_server_s),
        "worst_ftf_rho": _f(rho.max()) if rho.size else None,
        "share_ftf_rho_above_1": float((rho > 1.0 + 1e-9).mean()) if rho.size else None,
        "jain_index": jain_index(1.0 / rho) if rho.size else None,
        "preemptions": int(jobs["preemptions"].sum()),
        "restarts": int(jobs["restarts"].sum()),
        "job_failures": int(jobs["failures"].sum()),
    }
