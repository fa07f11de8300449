"""What a simulation returns: per-job table, timeline, placement changes and a summary."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.simulator.metrics import busy_end_s, summarize


# Summary fields that time the machine, not the run: the only ones that differ between two runs
# with the same inputs and seed (everything else, and every table, is byte-identical).
WALL_CLOCK_FIELDS = ("wall_s", "sim_wall_s", "jobs_per_s", "mean_decision_ms")


@dataclass
class SimResult:
    jobs: pd.DataFrame  # one row per job (docs/metrics.md lists the columns)
    timeline: pd.DataFrame  # t_s, busy_gpus, running, waiting, servers_up at every decision
    changes: pd.DataFrame  # t_s, job_id, placement ("" = stopped): every placement change
    summary: dict

    def write(self, out_dir: Path) -> None:
        """jobs.parquet, timeline.parquet, placements.parquet and summary.json in ``out_dir``."""
        out_dir.mkdir(parents=True, exist_ok=True)
        self.jobs.to_parquet(out_dir / "jobs.parquet", index=False)
        self.timeline.to_parquet(out_dir / "timeline.parquet", index=False)
        self.changes.to_parquet(out_dir / "placements.parquet", index=False)
        (out_dir / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=False) + "\n")


def build_result(sim, end_s: float, wall_s: float) -> SimResult:
    rows = []
    for js in sim.states:
        j = js.job
        i = js.index
        done = js.status == "completed"
        jct = js.finish_s - j.arrival_s if done else np.nan
        iso, u = sim._isolated[i], sim._utility[i]  # noqa: SLF001 - the world's truth, never shown to the policy
        rows.append((
            j.job_id, j.tenant, j.model, j.arrival_s, j.requested_gpus, j.min_workers, j.max_workers,
            j.local_bsz, sim._work[i], sim.first_estimate[i], sim.reestimates[i],  # noqa: SLF001
            js.done_samples, js.status, js.reason,
            np.nan if js.first_start_s is None else js.first_start_s,
            js.finish_s if done else np.nan, jct,
            (js.first_start_s - j.arrival_s) if js.first_start_s is not None else np.nan,
            js.attained_gpu_s, iso, jct / iso if done else np.nan,
            float(u(jct)) if done else 0.0, float(u.max_value),
            js.preemptions, js.restarts, js.failures, js.lost_samples, js.stopped_early,
        ))
    cols = ["job_id", "tenant", "model", "arrival_s", "requested_gpus", "min_workers", "max_workers",
            "local_bsz", "work_samples", "estimated_work_samples", "reestimates", "done_samples", "status",
            "reason", "first_start_s", "finish_s", "jct_s", "queue_s", "gpu_s", "isolated_s", "ftf_rho",
            "utility", "max_utility", "preemptions", "restarts", "failures", "lost_samples", "stopped_early"]
    jobs = pd.DataFrame.from_records(rows, columns=cols)
    for c in ("job_id", "tenant", "model", "status", "reason"):
        jobs[c] = jobs[c].astype("string")
    timeline = pd.DataFrame.from_records(sim.timeline, columns=["t_s", "busy_gpus", "running", "waiting", "servers_up"])
    changes = pd.DataFrame.from_records(sim.changes, columns=["t_s", "job_id", "placement"])
    changes["job_id"] = changes["job_id"].astype("string")
    changes["placement"] = changes["placement"].astype("string")
    summary = {"policy": sim.policy.name, "cluster": sim.cluster.describe(), "total_gpus": sim.cluster.total_gpus,
               "seed": sim.cfg.seed, "slot_s": sim.cfg.slot_s, "decide_at_events": sim.cfg.decide_at_events,
               "estimates": sim.cfg.estimates.spec()}
    busy_gpu_s = sim.held_gpu_s_until(busy_end_s(jobs, end_s, sim.last_busy_s))
    summary.update(summarize(jobs, total_gpus=sim.cluster.total_gpus, powered_server_s=sim.powered_server_s,
                             powered_gpu_s=sim.powered_gpu_s, busy_gpu_s=busy_gpu_s, end_s=end_s,
                             last_busy_s=sim.last_busy_s, energy=sim.cfg.energy))
    summary["lost_work_share"] = (float(jobs["lost_samples"].sum() / jobs["work_samples"].sum())
                                  if len(jobs) else 0.0)
    summary.update({
        "server_failures": sim.server_failures,
        "decisions": sim.decisions,
        "mean_decision_ms": 1e3 * sim.decision_wall_s / sim.decisions if sim.decisions else 0.0,
        "simulated_s": end_s,
        "last_busy_s": sim.last_busy_s,
        "powered_server_s": sim.powered_server_s,
        "powered_gpu_s": sim.powered_gpu_s,
        "interrupted": sim.interrupted,
        "stalled_at_s": sim.stalled_at_s,
        "wall_s": wall_s,
    })
    stats = sim.policy.stats()
    if stats:
        summary["policy_stats"] = stats
    return SimResult(jobs, timeline, changes, summary)
