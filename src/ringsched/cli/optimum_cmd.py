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

RULES = ("textbook", "quantised", "one")


def optimum_check(
    instances: int = typer.Option(200, "--instances", help="Number of random instances."),
    seed: int = typer.Option(0, "--seed", help="Seed; instance i is drawn with numpy default_rng((seed, i))."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    zeta: str = typer.Option("quantised", "--zeta",
                             help="Price rule of the headline numbers: textbook (zeta = 1 - delta_max), "
                                  "quantised (the refinement for integral demands), one (zeta = 1, no guarantee)."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="MILP time limit per instance, seconds."),
    workers: int = typer.Option(1, "--workers", help="Worker processes."),
    max_jobs: int = typer.Option(8, "--max-jobs", help="Most jobs in an instance (2..12)."),
    max_slots: int = typer.Option(16, "--max-slots", help="Most slots in an instance (6..24)."),
    details: Path = typer.Option(None, "--details", help="Write one JSON line per instance to this file."),
) -> None:
    """GADGET (exact subroutine, strict admission) versus the exact offline optimum (HiGHS)."""
    if instances < 1:
        raise InputError(f"--instances must be at least 1, got {instances}", field="instances")
    if zeta not in RULES:
        raise InputError(f"--zeta must be one of {', '.join(RULES)}, got {zeta!r}", field="zeta")
    if not time_limit > 0:
        raise InputError(f"--time-limit must be positive, got {time_limit}", field="time-limit")
    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}", field="workers")
    if not 2 <= max_jobs <= 12:
        raise InputError(f"--max-jobs must lie in [2, 12], got {max_jobs}", field="max-jobs")
    if not 6 <= max_slots <= 24:
        raise InputError(f"--max-slots must lie in [6, 24], got {max_slots}", field="max-slots")
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

        summary, records = run_check(instances, seed, rule=zeta, time_limit_s=time_limit, workers=workers,
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
    table = Table(title=f"GADGET vs the optimum: {instances} instances, seed {seed}")
    table.add_column("rule")
    for c in ("mean", "min", "median", "<0.9", "bound", "viol.", "dual viol."):
        table.add_column(c, justify="right")
    for r, a in summary["by_rule"].items():
        table.add_row(r + (" *" if r == zeta else ""), f"{a['mean_ratio']:.4f}", f"{a['min_ratio']:.4f}",
                      f"{a['median_ratio']:.4f}", f"{a['share_below_0_9']:.1%}", f"{a['bound']:.3g}",
                      str(a["violations"]), str(a["dual_violations"]))
    out.print(table)
    out.print(f"fast variant ({zeta}): mean ratio {summary['fast_mean_ratio']:.4f}, min {summary['fast_min_ratio']:.4f}, "
              f"observed beta max {summary['beta_observed_max']}, beta > 1 on {summary['beta_gt1_instances']} "
              f"instances, unbounded on {summary['beta_unbounded_instances']}")
    out.print(f"contiguous search ({zeta}): mean ratio {summary['contig_mean_ratio']:.4f}, "
              f"min {summary['contig_min_ratio']:.4f}, observed beta max {summary['contig_beta_observed_max']}, "
              f"unbounded on {summary['contig_beta_unbounded_instances']} instances")
    out.print(f"packed (exact search, pack_slack {summary['pack_slack']:g}): mean ratio "
              f"{summary['packed_mean_ratio']:.4f}, min {summary['packed_min_ratio']:.4f}, bound "
              f"{summary['packed_bound']:.3g}, violations {summary['packed_violations']}, "
              f"dual violations {summary['packed_dual_violations']}")
    out.print(f"MILP: {summary['not_optimal']} not proven optimal, max gap {summary['max_gap']}, "
              f"mean {summary['mean_milp_wall_s']:.2f} s; mean wall per instance {summary['mean_wall_s']:.2f} s")
