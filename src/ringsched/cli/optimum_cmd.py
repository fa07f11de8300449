"""``ringsched optimum-check``: GADGET against the exact offline optimum on random small
instances (docs/theory.md, "The empirical check").

Prints one JSON object (``--json``) or a table; progress goes to stderr. Deterministic for a
seed except the wall times.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ringsched.errors import InputError

RULES = ("textbook", "quantised")
REGIMES = ("default", "small-demand")


def optimum_check(
    instances: int = typer.Option(200, "--instances", help="Number of random instances."),
    seed: int = typer.Option(0, "--seed", help="Seed; instance i is drawn with numpy default_rng((seed, i))."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    regime: str = typer.Option("default", "--regime",
                               help="Instances: default (small random instances) or small-demand (every "
                                    "configuration takes at most 1/16 of a resource; the bound is informative)."),
    zeta: str = typer.Option("quantised", "--zeta",
                             help="Price rule of the headline numbers: textbook (zeta = 1 - delta_max) or "
                                  "quantised (the refinement for integral demands)."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="MILP time limit per instance, seconds."),
    workers: int = typer.Option(1, "--workers", help="Worker processes."),
    max_jobs: int = typer.Option(8, "--max-jobs", help="Most jobs in an instance (2..12)."),
    max_slots: int = typer.Option(16, "--max-slots", help="Most slots in an instance (6..24)."),
    details: Path = typer.Option(None, "--details", help="Write one JSON line per instance to this file."),
) -> None:
    """GADGET (exact subroutine, strict admission) versus the exact offline optimum (HiGHS)."""
    # (the numbers are bounded at parsing: cli/errors.OPTION_BOUNDS)
    if regime not in REGIMES:
        raise InputError(f"--regime must be one of {', '.join(REGIMES)}, got {regime!r}", field="regime")
    if zeta not in RULES:
        raise InputError(f"--zeta must be one of {', '.join(RULES)}, got {zeta!r}", field="zeta")
    if details is not None and not details.parent.exists():
        raise InputError(f"directory of --details does not exist: {details.parent}", field="details")

    from ringsched.optimum.check import run_check

    err = Console(stderr=True)
    bar = Progress(TextColumn("[bold]optimum-check"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("mean ratio {task.fields[mean]:.3f}  min {task.fields[low]:.3f}"),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
    ratios: list[float] = []
    t0 = time.perf_counter()
    with bar:
        task = bar.add_task("check", total=instances, mean=1.0, low=1.0)

        def progress(done: int, rec: dict) -> None:
            ratios.append(rec[zeta]["ratio"])
            bar.update(task, completed=done, mean=sum(ratios) / len(ratios), low=min(ratios))

        summary, records = run_check(instances, seed, regime=regime, rule=zeta, time_limit_s=time_limit, workers=workers,
                                     max_jobs=max_jobs, max_slots=max_slots, progress=progress)
    summary["total_wall_s"] = round(time.perf_counter() - t0, 3)
    if details is not None:
        with open(details, "w") as fh:
            for rec in records:
                fh.write(json.dumps(rec) + "\n")
    if as_json:
        print(json.dumps(summary))
        return
    out = Console()
    table = Table(title=f"GADGET vs the optimum: {instances} {regime} instances, seed {seed}")
    table.add_column("algorithm")
    for c in ("mean", "p10", "min", ">=0.9", "bound", "viol."):
        table.add_column(c, justify="right")
    for r, a in summary["by_rule"].items():
        table.add_row(f"gadget ({r})" + (" *" if r == zeta else ""), f"{a['mean_ratio']:.4f}", f"{a['p10_ratio']:.4f}",
                      f"{a['min_ratio']:.4f}", f"{a['share_within_0_9']:.1%}", f"{a['min_bound']:.3g}",
                      str(a["violations"]))
    for name, c in summary["controls"].items():
        table.add_row(f"control {name}", f"{c['mean_ratio']:.4f}", "", "", "", "", str(c["violations"]))
    out.print(table)
    out.print(f"trace-mode search (subroutine=contiguous, no guarantee): mean ratio "
              f"{summary['contiguous_mean_ratio']:.4f}, min {summary['contiguous_min_ratio']:.4f}")
    out.print(f"dual violations {summary['dual_violations']}; MILP: {summary['not_optimal']} not proven optimal, "
              f"max gap {summary['max_gap']}, mean {summary['mean_milp_wall_s']:.2f} s; mean wall per instance "
              f"{summary['mean_wall_s']:.2f} s")
