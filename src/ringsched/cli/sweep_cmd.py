"""``ringsched sweep``: every policy over load factors, cluster sizes and seeds.

A cell is (cluster, load, seed, policy): the trace is loaded with the seed, every arrival time
is divided by the load factor (load 2 = jobs arrive twice as fast), and the policy runs in the
simulator. Cells run in local worker processes (``--engine local``, the default) or as Ray
tasks (``--engine ray [--address ADDR]``). Outputs (docs/reports.md): ``cells.csv`` (one row per
cell), ``sweep.csv`` (mean and Student-t confidence interval across seeds per cluster, load,
policy and metric) and ``report.html`` (each metric against load, one line per policy).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from ringsched.cli import workload as w
from ringsched.cli.compare_cmd import RunOutcome, Task, default_workers, run_parallel, simulator_description
from ringsched.errors import InputError

ENGINES = ("local", "ray")
RAY_OBJECT_STORE_BYTES = 128 * 1024 * 1024  # a local Ray instance only moves small summaries


# ------------------------------------------------------------------------------ one cell
@functools.lru_cache(maxsize=8)
def _workload(trace: str, cluster: str, vc, window, limit, seed: int, rigid: bool, skip_bad_rows: bool = False):
    return w.load_workload(trace, cluster, vc=vc, window=window, limit=limit, seed=seed, rigid=rigid,
                           skip_bad_rows=skip_bad_rows)


def scale_arrivals(jobs, load: float) -> list:
    """Arrival-rate scaling: every arrival time divided by ``load``."""
    if load == 1.0:
        return list(jobs)
    return [dataclasses.replace(j, arrival_s=j.arrival_s / load) for j in jobs]


def run_cell(cell: dict) -> dict:
    """One (cluster, load, seed, policy) cell: the cell's keys plus the run's summary. Runs in a
    local worker or as a Ray task (module-level, so it pickles by reference)."""
    from ringsched.cli.compare_cmd import _post, progress_callback
    from ringsched.objectives.registry import run_with_objective
    from ringsched.simulator import SimConfig

    t0 = time.perf_counter()
    wl = _workload(cell["trace"], cell["cluster"], cell.get("vc"), cell.get("window"), cell.get("limit"),
                   int(cell["seed"]), bool(cell.get("rigid", False)), bool(cell.get("skip_bad_rows", False)))
    jobs = scale_arrivals(wl.jobs, float(cell["load"]))
    _post("start", cell["key"], len(jobs))
    res = run_with_objective(cell.get("objective", "jct"), jobs, wl.cluster, cell["policy"],
                             SimConfig(seed=int(cell["seed"]), **cell["sim"]), progress=progress_callback(cell["key"]))
    s = dict(res.summary)
    row = {"cluster": cell["cluster"], "load": float(cell["load"]), "seed": int(cell["seed"]),
           "policy": cell["policy"], "trace": cell["trace"], "objective": s.pop("objective", "jct"),
           "cluster_description": s.pop("cluster"), "sim_wall_s": s.pop("wall_s")}
    s.pop("policy", None)
    s.pop("seed", None)
    row.update(s)
    row["wall_s"] = time.perf_counter() - t0
    row["host"] = os.uname().nodename
    return row


# ------------------------------------------------------------------------------ engines
def run_ray(cells: list[dict], *, address: str | None, workers: int | None, console: Console) -> RunOutcome:
    """The cells as Ray tasks. Joins the Ray instance already initialised in this process, else
    ``address`` (``auto``, ``ray://host:port``, ...) or $RAY_ADDRESS, else starts a local one with
    ``workers`` CPUs (``--address local`` too). A remote cluster needs ringsched installed on its
    nodes."""
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs the 'ray' package (pip install ray)", field="engine") from None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    out = RunOutcome()
    t0 = time.perf_counter()
    started_here = False
    if not ray.is_initialized():
        kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address == "local" or (not address and not os.environ.get("RAY_ADDRESS")):
            kw.update(address="local", num_cpus=default_workers(len(cells), workers),
                      object_store_memory=RAY_OBJECT_STORE_BYTES)
        else:
            kw["address"] = address
        try:
            ray.init(**kw)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise InputError(f"cannot start or reach Ray at {address or 'a new local instance'}: {e}",
                             field="address") from None
        started_here = True
    out.workers = int(ray.cluster_resources().get("CPU", 0))
    task = ray.remote(num_cpus=1, max_retries=0)(run_cell)
    refs = {task.remote(c): c["key"] for c in cells}
    pending = list(refs)
    progress = Progress(TextColumn("[bold]ray cells"), BarColumn(bar_width=30), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, disable=not console.is_terminal)
    bar = progress.add_task("cells", total=len(cells))
    try:
        progress.start()
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            for ref in done:
                key = refs[ref]
                try:
                    out.results[key] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a failed cell is reported, the others go on
                    cause = getattr(e, "cause", None) or e
                    out.errors[key] = f"{type(cause).__name__}: {cause}"
                    console.print(f"[red]{key}: failed: {out.errors[key]}")
                progress.update(bar, advance=1)
    except KeyboardInterrupt:
        out.interrupted = True
        out.unfinished = [refs[r] for r in pending]
        for r in pending:
            try:
                ray.cancel(r, force=True)
            except Exception:  # noqa: BLE001
                pass
    finally:
        progress.stop()
        if started_here:
            ray.shutdown()
    out.wall_s = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------------------ parsing
def _floats(text: str, name: str) -> list[float]:
    vals = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            v = float(part)
        except ValueError:
            raise InputError(f"{part!r} is not a number", field=name) from None
        if not (v > 0 and v < float("inf")):
            raise InputError(f"load factors must be positive, got {part}", field=name)
        if v not in vals:
            vals.append(v)
    if not vals:
        raise InputError("give at least one value, comma-separated", field=name)
    return vals


def _seeds(text: str) -> list[int]:
    """``"0,1,2"`` or a range ``"0-4"`` (inclusive)."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            if "-" in part[1:]:
                a, b = part.split("-", 1) if not part.startswith("-") else (part, part)
                rng = range(int(a), int(b) + 1)
            else:
                rng = range(int(part), int(part) + 1)
        except ValueError:
            raise InputError(f"{part!r} is not a seed or a range A-B", field="seeds") from None
        out.extend(s for s in rng if s not in out)
    if not out:
        raise InputError("give at least one seed", field="seeds")
    return out


# ------------------------------------------------------------------------------ command
def sweep(
    trace: str = w.TraceOpt,
    cluster: list[str] = typer.Option(["16x8"], "--cluster",
                                      help="Cluster spec NxG[,key=value...] or YAML; repeat for several sizes."),
    loads: str = typer.Option("0.5,1,2", "--loads", help="Load factors, comma-separated: arrival times are "
                              "divided by each (2 = jobs arrive twice as fast)."),
    seeds: str = typer.Option("0,1,2", "--seeds", help="Seeds, comma-separated or a range A-B: confidence "
                              "intervals are across them."),
    policies: str = w.PoliciesOpt,
    objective: str = w.ObjectiveOpt,
    out: Path = typer.Option(..., "--out", help="Folder for cells.csv, sweep.csv and report.html."),
    engine: str = typer.Option("local", "--engine", help="local (worker processes) or ray."),
    address: str = typer.Option(None, "--address", help="Ray address (auto, ray://HOST:PORT, local); default: "
                                "start a local Ray instance."),
    confidence: float = typer.Option(0.95, "--confidence", min=0.5, max=0.999,
                                     help="Confidence level of the intervals across seeds."),
    vc: str = w.VcOpt,
    skip_bad_rows: bool = w.SkipBadRowsOpt,
    window: str = w.WindowOpt,
    limit: int = w.LimitOpt,
    rigid: bool = w.RigidOpt,
    slot_s: float = w.SlotSOpt,
    restart_s: float = w.RestartSOpt,
    checkpoint_s: float = w.CheckpointSOpt,
    mtbf: float = w.MtbfOpt,
    mttr: float = w.MttrOpt,
    contention: bool = w.ContentionOpt,
    horizon_s: float = w.HorizonSOpt,
    workers: int = w.WorkersOpt,
) -> None:
    """Sweep policies over load factors, cluster sizes and seeds; plots with confidence intervals."""
    import pandas as pd

    from ringsched.reports import SWEEP_METRICS, aggregate_sweep, render_sweep

    t0 = time.perf_counter()
    err = Console(stderr=True)
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}", field="engine")
    if address and engine != "ray":
        raise InputError("--address needs --engine ray", field="address")
    names = w.parse_policies(policies)
    objective = w.check_objective(objective)
    load_list = _floats(loads, "loads")
    seed_list = _seeds(seeds)
    clusters = list(dict.fromkeys(cluster or ["16x8"]))
    sim_kwargs = w.sim_config_kwargs(slot_s=slot_s, restart_s=restart_s, checkpoint_s=checkpoint_s, mtbf=mtbf,
                                     mttr=mttr, contention=contention, horizon_s=horizon_s)
    # validate the inputs here, once, so bad input is one line and exit 2 before any worker starts
    for i, cl in enumerate(clusters):
        wl = _workload(trace, cl, vc, window, limit, seed_list[0], rigid, skip_bad_rows)
        if i == 0:
            wl.report_bad_rows(err)
    cells = []
    for cl in clusters:
        for load in load_list:
            for s in seed_list:
                for p in names:
                    cells.append({"key": f"{cl}|{load:g}|{s}|{p}", "trace": trace, "cluster": cl, "load": load,
                                  "seed": s, "policy": p, "objective": objective, "vc": vc, "window": window,
                                  "limit": limit, "rigid": rigid, "skip_bad_rows": skip_bad_rows, "sim": sim_kwargs})
    err.print(f"{len(cells)} cells: {len(clusters)} clusters x {len(load_list)} loads x {len(seed_list)} seeds x "
              f"{len(names)} policies, engine {engine}")
    if engine == "ray":
        outcome = run_ray(cells, address=address, workers=workers, console=err)
    else:
        outcome = run_parallel([Task(c["key"], run_cell, (c,)) for c in cells], workers=workers,
                               per_task_bars=False, label="cells", console=err)
    rows = [outcome.results[c["key"]] for c in cells if c["key"] in outcome.results]
    cells_df = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    if cells_df.empty:
        cells_df = pd.DataFrame(columns=["cluster", "load", "seed", "policy"])
    agg = aggregate_sweep(cells_df, confidence=confidence)
    cells_df.to_csv(out / "cells.csv", index=False)
    agg.to_csv(out / "sweep.csv", index=False)
    meta = {"trace": trace, "clusters": clusters, "loads": load_list, "seeds": seed_list, "policies": names,
            "objective": objective, "engine": engine + (f" ({address})" if address else ""),
            "cells_done": len(rows), "cells_total": len(cells), "confidence": confidence,
            "simulator": simulator_description(sim_kwargs) + (", rigid jobs" if rigid else ", elastic jobs"),
            "interrupted": outcome.interrupted, "wall_s": time.perf_counter() - t0}
    report = out / "report.html"
    report.write_text(render_sweep(cells_df, agg, meta), encoding="utf-8")

    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    if len(agg):
        shown = [m for m in SWEEP_METRICS if m.key in ("mean_jct_s", "p99_jct_s", "total_utility", "gpu_utilization",
                                                       "energy_kwh")]
        table = Table(title=f"sweep of {trace}: mean over seeds +- half {confidence:.0%} t-interval",
                      header_style="bold")
        for c in ("cluster", "load", "policy"):
            table.add_column(c, justify="right" if c == "load" else "left")
        for m in shown:
            table.add_column(m.label, justify="right")
        idx = agg.set_index(["cluster", "load", "policy", "metric"])
        for (cl, load, pol), _ in cells_df.groupby(["cluster", "load", "policy"], sort=False):
            vals = []
            for m in shown:
                try:
                    r = idx.loc[(cl, float(load), pol, m.key)]
                except KeyError:
                    vals.append("-")
                    continue
                half = (r["ci_high"] - r["ci_low"]) / 2 if r["n"] > 1 else None
                vals.append(m.show(r["mean"]) + ("" if half is None else f" +- {m.show(half)}"))
            table.add_row(cl, f"{load:g}", pol, *vals)
        console.print(table)
    for k, e in outcome.errors.items():
        err.print(f"[red]{k} failed: {e}")
    if outcome.interrupted:
        err.print(f"interrupted: kept {len(rows)} of {len(cells)} cells")
    print(f"report: {report}")
    if outcome.interrupted:
        raise typer.Exit(130)
    if outcome.errors:
        raise typer.Exit(1)
