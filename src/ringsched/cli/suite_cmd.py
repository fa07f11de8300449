"""``ringsched suite``: the evaluation suite (docs/suite.md) from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from ringsched.cli import workload as w
from ringsched.errors import InputError


def _select(names: str | None, quick: bool):
    from ringsched.experiment.workloads import WORKLOADS

    if not names:
        chosen = list(WORKLOADS)
    else:
        by = {w.name: w for w in WORKLOADS}
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in by]
        if unknown:
            raise InputError(f"unknown workload {unknown[0]!r}; known: {', '.join(by)}", field="workloads")
        chosen = [by[n] for n in wanted]
    if quick:  # a tiny suite: the first 40 jobs of each workload
        import dataclasses

        chosen = [dataclasses.replace(w, limit=min(w.limit or 40, 40)) for w in chosen]
    return chosen


def suite(
    out: Path = typer.Option(Path("suite-results"), "--out", help="Folder for the Parquet tables and index.html."),
    workloads: str = typer.Option(None, "--workloads", help="Comma-separated workload names (default: all; "
                                  "docs/suite.md lists them)."),
    policies: str = typer.Option("all", "--policies", help="Comma-separated policy specs, or 'all'."),
    target: str = typer.Option("gadget", "--target", help="The policy compared with the best of the others."),
    estimates: str = typer.Option("exact,lognormal:1", "--estimates",
                                  help="Comma-separated estimate settings run side by side (docs/metrics.md)."),
    seeds: int = typer.Option(2, "--seeds", min=1, max=20, help="Seeds per workload (0, 1, ...)."),
    quick: bool = typer.Option(False, "--quick", help="Only the first 40 jobs of each workload (a smoke test)."),
    slotted: bool = typer.Option(False, "--slotted", help="Decide at slot boundaries only (default: also at "
                                 "arrivals and completions)."),
    workers: int = typer.Option(2, "--workers", min=1, help="Worker processes."),
    profiles: list[str] = w.ProfilesOpt,
    engine: str = typer.Option("process", "--engine", help="process (local worker processes) or ray."),
    objective: str = typer.Option("jct", "--objective", help="What the runs are judged by (docs/objectives.md); "
                                  "other than jct, the target also runs deciding as under jct and the objective's "
                                  "metrics are tabled."),
) -> None:
    """Run every policy on the suite's workloads; print the target's ratios to the best baseline."""
    from ringsched.cli.workload import parse_policies, read_profiles
    from ringsched.experiment.suite import cells_for, run_suite, skipped_workloads, write_suite
    from ringsched.experiment.objectives import parse_objective
    from ringsched.experiment.suite_report import print_objective, print_report
    from ringsched.experiment.config import parse_estimates
    from ringsched.reports.terminal import stdout_console

    if engine not in ("process", "ray"):
        raise InputError(f"engine must be process or ray, got {engine!r}", field="engine")
    objective = parse_objective(objective).spec()
    pols = parse_policies(policies)
    if target not in pols:
        raise InputError(f"target {target!r} is not among the policies", field="target")
    ests = [parse_estimates(e).spec() for e in estimates.split(",") if e.strip()]
    err = Console(stderr=True)
    chosen = _select(workloads, quick)
    for w, why in skipped_workloads(chosen):
        err.print(f"skipped workload {w.name}: {why}", markup=False, highlight=False)
    skipped = {w.name for w, _ in skipped_workloads(chosen)}
    chosen = [w for w in chosen if w.name not in skipped]
    if not chosen:
        raise InputError("no workload left to run (shared traces absent?)", field="workloads")
    cells = cells_for(chosen, pols, seeds=range(seeds), estimates=ests, decide_at_events=not slotted,
                      profiles=read_profiles(profiles), objective=objective, target=target)
    run = run_suite(cells, workers=workers, engine=engine, console=err)
    for key, why in run.errors.items():
        err.print(f"{key} failed: {why}", style="red", markup=False, highlight=False)
    if run.interrupted:
        err.print(f"interrupted: kept {len(run.cells)} of {run.total} cells", markup=False, highlight=False)
    if len(run.cells):
        tables = write_suite(out, run.cells, target)
        if len(tables["ratios"]):
            console = stdout_console()
            print_report(tables, target, console)
            print_objective(tables, target, console)
        else:  # (an interrupted run may not have the target and a baseline of any workload yet)
            print(f"no ratios yet: no workload has {target} and a baseline finished; cells in {out}")
    sys.stdout.flush()
    if run.interrupted:
        raise typer.Exit(130)  # (143 after SIGTERM: cli.errors)
    if run.errors:
        raise typer.Exit(1)
