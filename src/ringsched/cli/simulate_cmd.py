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

# The count fields printed before the catalogue's metrics (the JSON has every field).
COUNT_FIELDS = ("jobs", "completed", "waiting", "rejected", "restarts")

EPILOG = """Examples:

  ringsched simulate --trace demo:1000 --cluster 16x8 --policy gadget

  ringsched simulate --trace philly:../shared/traces/philly-pollux/philly.csv --cluster 64x8 --policy tiresias --json
"""


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
            # the label is the user's policy spec: plain text, never rich markup
            self.bar = Progress(TextColumn("{task.description}", markup=False, style="bold"), BarColumn(),
                                MofNCompleteColumn(),
                                TextColumn("jobs  sim day {task.fields[day]:.1f}"), TimeElapsedColumn(),
                                console=Console(stderr=True), transient=False)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total, day=0.0)
        self.bar.update(self.task, completed=done, day=sim_s / 86400.0)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def print_summary(summary: dict, console: Console) -> None:
    """The summary as a two-column table: counts, then the catalogue's metrics with their units
    (the same labels and units as ``compare``)."""
    from rich.text import Text

    from ringsched.reports import TABLE_METRICS

    table = Table(title=Text(f"{summary['policy']} on {summary.get('workload', summary.get('trace', ''))}"))
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k in COUNT_FIELDS:
        table.add_row(k + " (jobs)" if k != "restarts" else k, f"{summary.get(k, 0):,}")
    for m in TABLE_METRICS:
        if m.key in summary and m.key not in COUNT_FIELDS:
            table.add_row(m.label, m.show(summary.get(m.key)))
    table.add_row("wall time (s)", f"{summary['wall_s']:,.1f}")
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
    slot_s: float = w.SlotSOpt,
    restart_s: float = w.RestartSOpt,
    checkpoint_s: float = w.CheckpointSOpt,
    mtbf: float = w.MtbfOpt,
    mttr: float = w.MttrOpt,
    contention: bool = w.ContentionOpt,
    horizon_s: float = w.HorizonSOpt,
    estimates: str = w.EstimatesOpt,
    slotted: bool = w.SlottedOpt,
    gpu_profiles: list[Path] = w.GpuProfilesOpt,
    objective: str = w.ObjectiveOpt,
    profiles: list[str] = w.ProfilesOpt,
    out: Path = typer.Option(None, "--out", help="Write jobs.parquet, timeline.parquet, placements.parquet, "
                             "summary.json here."),
    as_json: bool = typer.Option(False, "--json", metavar="",
                                 help="Flag: print the summary as one JSON object on stdout."),
) -> None:
    """Simulate one policy on a trace and a cluster."""
    from ringsched.experiment.objectives import parse_objective
    from ringsched.experiment.run import run_one
    from ringsched.experiment.workload import describe_workload

    if gpu_profiles:
        from ringsched.perfmodel.gpus import use_profiles

        use_profiles(gpu_profiles)
    t0 = time.perf_counter()
    if admission is not None:
        policy += ("," if ":" in policy else ":") + f"admission={admission}"
    (policy,) = w.parse_policies([policy])  # unknown policy or option -> one line, exit 2
    obj = parse_objective(objective)
    cfg = w.simulator_settings(dict(slot_s=slot_s, restart_s=restart_s, checkpoint_s=checkpoint_s, mtbf=mtbf,
                                    mttr=mttr, contention=contention, horizon_s=horizon_s,
                                    estimates=estimates, slotted=slotted)).sim_config(seed)
    fitted = w.read_profiles(profiles)
    wl = w.load_workload(trace, cluster, vc=vc, window=window, limit=limit, seed=seed, rigid=rigid,
                         skip_bad_rows=skip_bad_rows, profiles=fitted)
    w.report_bad_rows(wl, Console(stderr=True))
    bar = LazyProgress(f"{policy}", len(wl.jobs))
    try:
        result = run_one(obj, wl.jobs, wl.cluster, policy, cfg, progress=bar, profiles=fitted)
    finally:
        bar.close()
    s = result.summary
    s["trace"] = trace
    s["workload"] = describe_workload(wl.trace, cluster, seed, 1.0)
    s["sim_wall_s"] = s["wall_s"]
    s["wall_s"] = time.perf_counter() - t0
    s["jobs_per_s"] = s["jobs"] / s["sim_wall_s"] if s["sim_wall_s"] > 0 else None
    if out is not None:
        result.summary = s
        result.write(out)
    if as_json:
        sys.stdout.write(json.dumps(s) + "\n")
    else:
        from ringsched.reports.terminal import stdout_console

        print_summary(s, stdout_console())
    if s["interrupted"]:
        Console(stderr=True).print("interrupted: partial results kept" + (f" in {out}" if out else ""))
        raise typer.Exit(130)
    if s.get("stalled_at_s") is not None:
        raise InputError(f"simulated time stalled at {s['stalled_at_s']:g} s (the run stopped there; "
                         f"results up to then are kept{' in ' + str(out) if out else ''})", field="policy")
