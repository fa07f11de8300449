"""Sweep: every policy over clusters x load factors x seeds.

A cell is (cluster, load, seed, policy): the workload is loaded with the seed, arrivals are
scaled by the load factor, and the policy runs in the simulator, in a local worker process or
as a Ray task (the same function either way). ``run_sweep`` returns the cells, the per-(cluster,
load, policy) intervals across seeds and the per-seed paired differences against a baseline.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ringsched.experiment.config import SweepConfig, TraceSettings, dump_config
from ringsched.experiment.executors import RunOutcome, Task, post, progress_callback, run_parallel
from ringsched.experiment.workload import describe_trace, load_workload


def run_cell(cell: dict) -> dict:
    """One (cluster, load, seed, policy) cell: the workload's columns plus the run's summary.
    Module-level, so it pickles by reference into a worker or a Ray task."""
    from ringsched.experiment.config import SimulatorSettings
    from ringsched.experiment.run import run_one

    t0 = time.perf_counter()
    trace = TraceSettings.model_validate(cell["trace"])
    wl = load_workload(trace, cell["cluster"], seed=int(cell["seed"]), load=float(cell["load"]),
                       profiles=cell.get("profiles"))
    post("start", cell["key"], len(wl.jobs))
    sim = SimulatorSettings.model_validate(cell["sim"])
    res = run_one(cell["objective"], wl.jobs, wl.cluster, cell["policy"], sim.sim_config(int(cell["seed"])),
                  progress=progress_callback(cell["key"]), profiles=cell.get("profiles"))
    s = dict(res.summary)
    row = {"cluster": cell["cluster"], "load": float(cell["load"]), "seed": int(cell["seed"]),
           "policy": cell["policy"], **{k: v for k, v in wl.columns().items() if k not in ("load", "seed")},
           "objective": s.pop("objective", "jct"), "cluster_description": s.pop("cluster"),
           "sim_wall_s": s.pop("wall_s")}
    s.pop("policy", None)
    s.pop("seed", None)
    row.update(s)
    row["wall_s"] = time.perf_counter() - t0
    row["host"] = os.uname().nodename
    return row


def sweep_cells(config: SweepConfig) -> list[dict]:
    trace, sim = config.trace.model_dump(), config.simulator.model_dump()
    return [{"key": f"{cl}|{load:g}|{s}|{p}", "trace": trace, "cluster": cl, "load": load, "seed": s, "policy": p,
             "objective": config.objective, "sim": sim, "profiles": config.profiles}
            for cl in config.clusters for load in config.loads for s in config.seeds for p in config.policies]


@dataclass
class SweepResult:
    config: SweepConfig
    cells: pd.DataFrame  # one row per finished cell
    intervals: pd.DataFrame  # sweep.csv: per (cluster, load, policy, metric) mean and t-interval across seeds
    paired: pd.DataFrame  # paired.csv: per-seed differences against the baseline, with intervals
    errors: dict[str, str] = field(default_factory=dict)
    cells_total: int = 0
    interrupted: bool = False
    wall_s: float = 0.0


def run_sweep(config: SweepConfig, *, workers: int | None = None, console=None, quiet: bool = False) -> SweepResult:
    from ringsched.reports import aggregate_sweep, paired_differences

    t0 = time.perf_counter()
    for cl in config.clusters:  # bad input: one line and exit 2 before any worker starts
        load_workload(config.trace, cl, seed=config.seeds[0], profiles=config.profiles)
    cells = sweep_cells(config)
    if console is not None and not quiet:
        counts = [(len(config.clusters), "cluster"), (len(config.loads), "load"), (len(config.seeds), "seed"),
                  (len(config.policies), "policy")]
        console.print(f"{len(cells)} cells: " + " x ".join(_count(n, what) for n, what in counts)
                      + f", engine {config.engine}", markup=False)
    if config.engine == "ray":
        from ringsched.experiment.ray_executor import run_ray

        outcome: RunOutcome = run_ray(cells, run_cell, address=config.address, workers=workers, console=console)
    else:
        outcome = run_parallel([Task(c["key"], run_cell, (c,)) for c in cells], workers=workers,
                               per_task_bars=False, label="cells", console=console, show=not quiet)
    rows = [outcome.results[c["key"]] for c in cells if c["key"] in outcome.results]
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=["cluster", "load", "seed", "policy"])
    baseline = config.baseline or config.policies[0]
    return SweepResult(config, df, aggregate_sweep(df, confidence=config.confidence),
                       paired_differences(df, baseline, confidence=config.confidence), dict(outcome.errors),
                       len(cells), outcome.interrupted, time.perf_counter() - t0)


def write_sweep(result: SweepResult, out_dir: Path, *, command: list[str] | None = None) -> Path:
    """cells.csv, sweep.csv, paired.csv, experiment.yaml, run.json and report.html."""
    from ringsched.experiment.compare import run_record
    from ringsched.reports import render_sweep

    cfg = result.config
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result.cells.to_csv(out_dir / "cells.csv", index=False)
    result.intervals.to_csv(out_dir / "sweep.csv", index=False)
    result.paired.to_csv(out_dir / "paired.csv", index=False)
    (out_dir / "experiment.yaml").write_text(dump_config(cfg), encoding="utf-8")
    record = run_record(result.wall_s, int(result.cells.get("host", pd.Series(dtype=str)).nunique()), command)
    (out_dir / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    meta = {"trace": cfg.trace.trace, "workload": describe_sweep(cfg), "clusters": list(cfg.clusters),
            "loads": list(cfg.loads), "seeds": list(cfg.seeds), "policies": list(cfg.policies),
            "objective": cfg.objective, "baseline": cfg.baseline or cfg.policies[0],
            "engine": cfg.engine + (f" ({cfg.address})" if cfg.address else ""), "cells_done": len(result.cells),
            "cells_total": result.cells_total, "confidence": cfg.confidence, "simulator": cfg.simulator.describe(),
            "interrupted": result.interrupted, "wall_s": result.wall_s, "versions": record["versions"]}
    report = out_dir / "report.html"
    report.write_text(render_sweep(result.cells, result.intervals, meta, result.paired), encoding="utf-8")
    return report


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {'policies' if what == 'policy' else what + 's'}"


def describe_sweep(cfg: SweepConfig) -> str:
    t = cfg.trace
    parts = describe_trace(t)
    parts += [f"loads {', '.join(f'{x:g}' for x in cfg.loads)}", f"seeds {', '.join(map(str, cfg.seeds))}",
              f"clusters {'; '.join(cfg.clusters)}", "rigid jobs" if t.rigid else "elastic jobs"]
    return ", ".join(parts)
