"""Compare: every policy on the same workload, each in its own worker process.

``run_compare(config)`` returns a ``CompareResult`` (DataFrames); ``write_compare`` writes the
output folder (docs/reports.md): ``summary.csv`` (results only, so the same experiment gives
the same bytes), ``timing.csv`` (wall times), the Parquet tables, ``experiment.yaml`` (the
resolved config: ``ringsched compare --config`` runs it again), ``run.json`` (command line,
versions, wall time) and ``report.html``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ringsched.experiment.config import CompareConfig, SimulatorSettings, dump_config
from ringsched.experiment.executors import Task, post, progress_callback, run_parallel
from ringsched.experiment.workload import load_workload

# Wall-time columns: measured, never the same twice, so they go to timing.csv, not summary.csv.
TIMING_COLUMNS = ("sim_wall_s", "wall_s", "mean_decision_ms")


def run_policy(policy: str, jobs, cluster, sim: SimulatorSettings, seed: int, objective: str,
               profiles: dict | None = None) -> dict:
    """One policy on the jobs, in a worker: the result's tables and summary."""
    from ringsched.experiment.run import run_one

    t0 = time.perf_counter()
    post("start", policy, len(jobs))
    result = run_one(objective, jobs, cluster, policy, sim.sim_config(seed), progress=progress_callback(policy),
                     profiles=profiles)
    s = dict(result.summary)
    s["sim_wall_s"] = s.pop("wall_s")
    s["wall_s"] = time.perf_counter() - t0
    return {"policy": policy, "summary": s, "jobs": result.jobs, "timeline": result.timeline,
            "changes": result.changes}


def policy_cost(name: str) -> float:
    """A rough relative run time, to start the slow policies first: elastic policies that
    re-plan every slot are the slowest, then periodic ones, then the rest."""
    from ringsched.policies import policy_class

    cls = policy_class(name)
    return 1.0 + 2.0 * bool(getattr(cls, "periodic", False)) + 4.0 * (not getattr(cls, "rigid", True))


def story_policy(policies: list[str]) -> str | None:
    """The policy whose job timeline the report draws: the first that declares itself elastic
    (``rigid = False``), else the first."""
    from ringsched.policies import policy_class

    return next((p for p in policies if not getattr(policy_class(p), "rigid", True)), policies[0] if policies else None)


@dataclass
class CompareResult:
    config: CompareConfig
    workload: str  # the full description (describe_workload)
    cluster_description: str
    summary: pd.DataFrame  # one row per finished policy, in the order of config.policies
    timing: pd.DataFrame  # policy + TIMING_COLUMNS
    jobs: pd.DataFrame  # every job under every finished policy, ``policy`` first
    timeline: pd.DataFrame
    placements: pd.DataFrame
    errors: dict[str, str] = field(default_factory=dict)
    unfinished: list[str] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    workers: int = 0
    loaded_jobs: int = 0  # the workload's jobs (the header's count when no policy finished)


def _stack(results: list[dict], name: str) -> pd.DataFrame:
    frames = []
    for r in results:
        df = r[name].copy()
        df.insert(0, "policy", pd.array([r["policy"]] * len(df), dtype="string"))
        frames.append(df)
    if not frames:
        return pd.DataFrame({"policy": pd.array([], dtype="string")})
    return pd.concat(frames, ignore_index=True)


def _summary_rows(results: list[dict], columns: dict, objective: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, timing = [], []
    for r in results:
        s = {"policy": r["policy"], **columns, "objective": objective}
        s.update({k: v for k, v in r["summary"].items() if k not in s and k not in TIMING_COLUMNS})
        rows.append(s)
        timing.append({"policy": r["policy"], **{k: r["summary"].get(k) for k in TIMING_COLUMNS}})
    summary = pd.DataFrame(rows) if rows else pd.DataFrame(columns=["policy", *columns, "objective"])
    return summary, pd.DataFrame(timing, columns=["policy", *TIMING_COLUMNS])


def run_compare(config: CompareConfig, *, workers: int | None = None, console=None, quiet: bool = False,
                on_loaded=None) -> CompareResult:
    """Run every policy of ``config`` on its workload; ``on_loaded(workload, n_workers)`` is
    called once the jobs are loaded (the CLI prints a line there)."""
    from ringsched.experiment.executors import default_workers

    t0 = time.perf_counter()
    if config.gpu_profiles:
        from ringsched.perfmodel.gpus import use_profiles

        use_profiles(config.gpu_profiles)  # this process and the forked workers
    wl = load_workload(config.trace, config.cluster, seed=config.seed, load=config.load, profiles=config.profiles)
    n_workers = default_workers(len(config.policies), workers)
    if on_loaded is not None:
        on_loaded(wl, n_workers)
    tasks = [Task(p, run_policy, (p, wl.jobs, wl.cluster, config.simulator, config.seed, config.objective,
                                  config.profiles),
                  len(wl.jobs), policy_cost(p)) for p in config.policies]
    outcome = run_parallel(
        tasks, workers=n_workers, console=console, warm=None if quiet else _warm_report, show=not quiet,
        on_done=lambda k, v: f"{k}: finished in {v['summary']['wall_s']:.1f} s "
                             f"({v['summary']['completed']}/{v['summary']['jobs']} jobs completed)")
    if outcome.warm_thread is not None:
        outcome.warm_thread.join()
    results = [outcome.results[p] for p in config.policies if p in outcome.results]
    summary, timing = _summary_rows(results, wl.columns(), config.objective)
    return CompareResult(config, wl.describe(), wl.cluster.describe(), summary, timing, _stack(results, "jobs"),
                         _stack(results, "timeline"), _stack(results, "changes"), dict(outcome.errors),
                         list(outcome.unfinished), outcome.interrupted, time.perf_counter() - t0, outcome.workers,
                         len(wl.jobs))


def _warm_report() -> None:
    try:
        from ringsched.reports.plots import warm_up

        warm_up()
    except Exception:  # noqa: BLE001 - only an optimisation
        pass


def run_record(wall_s: float, workers: int, command: list[str] | None) -> dict:
    """What ``run.json`` holds: the command line, the versions, where and how long."""
    import os

    from ringsched.reports import versions

    return {"command": list(command if command is not None else sys.argv), "versions": versions(),
            "host": os.uname().nodename, "wall_s": round(wall_s, 3), "workers": workers}


def compare_meta(result: CompareResult) -> dict:
    cfg = result.config
    return {"trace": cfg.trace.trace, "workload": result.workload, "cluster": cfg.cluster,
            "cluster_description": result.cluster_description, "seed": cfg.seed, "objective": cfg.objective,
            "policies": list(cfg.policies), "jobs": int(result.summary["jobs"].iloc[0]) if len(result.summary) else result.loaded_jobs,
            "simulator": cfg.simulator.describe(),
            "unfinished": result.unfinished + [f"{k} (failed)" for k in result.errors],
            "story_policy": story_policy([str(p) for p in result.summary["policy"]]),
            "workers": result.workers, "wall_s": result.wall_s}


def write_compare(result: CompareResult, out_dir: Path, *, command: list[str] | None = None) -> Path:
    """Every output file of a compare into ``out_dir`` (created); returns the report's path."""
    from ringsched.reports import render_compare

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result.summary.to_csv(out_dir / "summary.csv", index=False)
    result.timing.to_csv(out_dir / "timing.csv", index=False)
    result.jobs.to_parquet(out_dir / "jobs.parquet", index=False)
    result.timeline.to_parquet(out_dir / "timeline.parquet", index=False)
    result.placements.to_parquet(out_dir / "placements.parquet", index=False)
    (out_dir / "experiment.yaml").write_text(dump_config(result.config), encoding="utf-8")
    record = run_record(result.wall_s, result.workers, command)
    (out_dir / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    report = out_dir / "report.html"
    meta = compare_meta(result) | {"versions": record["versions"]}
    report.write_text(render_compare(result.summary, result.jobs, result.timeline, result.placements, meta),
                      encoding="utf-8")
    return report
