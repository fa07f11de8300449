"""``ringsched simulate``: one policy on one trace and cluster, in the simulator."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ringsched.cli import workload as w
from ringsched.errors import InputError

# The fields printed in the terminal table, in order (the JSON has them all).
TABLE_FIELDS = ("policy", "objective", "jobs", "completed", "waiting", "rejected", "mean_jct_s", "p50_jct_s", "p99_jct_s",
                "makespan_s", "total_utility", "gpu_utilization", "energy_kwh", "worst_ftf_rho",
                "preemptions", "restarts", "wall_s")


class LazyProgress:
    """A rich progress bar on stderr that appears only once a run has lasted a second."""

    def __init__(self, label: str, total: int, *, enabled: bool = True):
        self.label, self.total, self.enabled = label, total, enabled
        self.t0 = time.perf_counter()
        self.bar: Progress | None = None
        self.task = None

    def __call__(self, sim_s: float, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            if time.perf_counter() - self.t0 < 1.0:
                return
            self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("jobs  sim day {task.fields[day]:.1f}"), TimeElapsedColumn(),
                                console=Console(stderr=True), transient=False)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total, day=0.0)
        self.bar.update(self.task, completed=done, day=sim_s / 86400.0)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.0f}"
    return "-" if v is None else str(v)


def print_summary(summary: dict, console: Console) -> None:
    table = Table(title=f"{summary['policy']} on {summary.get('trace', '')} ({summary['cluster']})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k in TABLE_FIELDS:
        table.add_row(k, _fmt(summary.get(k)))
    console.print(table)


def simulate(
    trace: str = w.TraceOpt,
    cluster: str = w.ClusterOpt,
    policy: str = typer.Option("fifo", "--policy", help="Policy NAME[:key=value,...] (ringsched policies lists them; "
                               "options of gadget/oasis: docs/policies.md), e.g. gadget:admission=strict."),
    admission: str = typer.Option(None, "--admission", help="GADGET/OASiS admission: deferred (default: a job not "
                                  "admitted is offered again later) or strict (rejected for good)."),
    seed: int = w.SeedOpt,
    vc: str = w.VcOpt,
    skip_bad_rows: bool = w.SkipBadRowsOpt,
    window: str = w.WindowOpt,
    limit: int = w.LimitOpt,
    rigid: bool = w.RigidOpt,
    profiles: list[Path] = w.ProfilesOpt,
    slot_s: float = typer.Option(300.0, "--slot-s", help="Scheduling slot (round) length, seconds."),
    restart_s: float = typer.Option(30.0, "--restart-s", help="Checkpoint-restart cost of a placement change, seconds."),
    checkpoint_s: float = typer.Option(1800.0, "--checkpoint-s", help="Checkpoint interval while running, seconds."),
    mtbf: float = typer.Option(None, "--mtbf", help="Mean time between failures of each server, hours (default: no failures)."),
    mttr: float = typer.Option(2.0, "--mttr", help="Mean time to repair a failed server, hours."),
    contention: bool = typer.Option(False, "--contention", help="Rings crossing a NIC or uplink share it (max-min fair) in the simulated world."),
    horizon_s: float = typer.Option(None, "--horizon-s", help="Stop at this simulated time; unfinished jobs end as waiting."),
    objective: str = w.ObjectiveOpt,
    out: Path = typer.Option(None, "--out", help="Write jobs.parquet, timeline.parquet, placements.parquet, summary.json here."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object on stdout."),
) -> None:
    """Simulate one policy on a trace and a cluster."""
    from ringsched.objectives.registry import parse_objective, run_with_objective
    from ringsched.policies.registry import parse_policy
    from ringsched.simulator import SimConfig

    if profiles:
        from ringsched.perfmodel.gpus import use_profiles

        use_profiles(profiles)
    t0 = time.perf_counter()
    if admission is not None:
        policy += ("," if ":" in policy else ":") + f"admission={admission}"
    parse_policy(policy)  # unknown policy or option -> one line, exit 2
    obj = parse_objective(objective)
    try:
        cfg = SimConfig(slot_s=slot_s, restart_s=restart_s, checkpoint_s=checkpoint_s, mtbf_h=mtbf,
                        mttr_h=mttr, contention=contention, seed=seed, horizon_s=horizon_s)
    except ValueError as e:
        raise InputError(str(e), field="options") from None
    wl = w.load_workload(trace, cluster, vc=vc, window=window, limit=limit, seed=seed, rigid=rigid,
                         skip_bad_rows=skip_bad_rows)
    wl.report_bad_rows(Console(stderr=True))
    bar = LazyProgress(f"{policy}", len(wl.jobs))
    try:
        result = run_with_objective(obj, wl.jobs, wl.cluster, policy, cfg, progress=bar)
    finally:
        bar.close()
    s = result.summary
    s["trace"] = trace
    s["sim_wall_s"] = s["wall_s"]
    s["wall_s"] = time.perf_counter() - t0
    s["jobs_per_s"] = s["jobs"] / s["sim_wall_s"] if s["sim_wall_s"] > 0 else None
    if out is not None:
        result.summary = s
        result.write(out)
    if as_json:
        sys.stdout.write(json.dumps(s) + "\n")
    else:
        print_summary(s, Console())
    if s["interrupted"]:
        Console(stderr=True).print("interrupted: partial results kept" + (f" in {out}" if out else ""))
        raise typer.Exit(130)
