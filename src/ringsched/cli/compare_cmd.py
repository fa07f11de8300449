"""``ringsched compare``: every policy on the same workload, side by side. Parses the options
(or an experiment file), runs ``ringsched.experiment.compare`` and prints the table."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from ringsched.cli import workload as w
from ringsched.experiment.config import CompareConfig, build

FIELDS = {**w.TRACE_FIELDS, **w.SIM_FIELDS, "cluster": "cluster", "load": "load", "seed": "seed",
          "policies": "policies", "objective": "objective", "profiles": "profiles", "gpu_profiles": "gpu_profiles"}

EPILOG = """Examples:

  ringsched compare --trace demo:1000 --cluster 16x8 --out results/demo

  ringsched compare --trace synthetic:2000 --policies gadget,gadget:pack_slack=0,oasis --out results/nopack

  ringsched compare --config results/demo/experiment.yaml --out results/again
"""


def compare(
    ctx: typer.Context,
    trace: str = w.TraceOpt,
    cluster: str = w.ClusterOpt,
    policies: str = w.PoliciesOpt,
    objective: str = w.ObjectiveOpt,
    gpu_profiles: list[Path] = w.GpuProfilesOpt,
    seed: int = w.SeedOpt,
    load: float = w.LoadOpt,
    out: Path = typer.Option(None, "--out", help="Folder for summary.csv, timing.csv, jobs.parquet, timeline.parquet, "
                             "placements.parquet, experiment.yaml, run.json and report.html (default with "
                             "--config: the config's folder)."),
    config: Path = w.ConfigOpt,
    profiles: list[str] = w.ProfilesOpt,
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
    workers: int = w.WorkersOpt,
) -> None:
    """Run several policies on the same workload in parallel; table, files and an HTML report."""
    from ringsched.errors import InputError
    from ringsched.experiment.compare import run_compare, write_compare
    from ringsched.reports.terminal import compare_table, stdout_console

    if config is not None:
        cfg = w.merge_config(ctx, config, CompareConfig, FIELDS,
                             {"policies": w.parse_policies, "profiles": w.read_profiles, "gpu_profiles": _dirs})
        out = out or config.parent
    elif out is None:
        raise InputError("give --out DIR (or --config EXPERIMENT.yaml)", field="out")
    else:
        cfg = build(CompareConfig, trace=w.trace_settings(ctx.params), cluster=cluster, load=load, seed=seed,
                            policies=w.parse_policies(policies), objective=objective,
                            profiles=w.read_profiles(profiles), gpu_profiles=_dirs(gpu_profiles),
                            simulator=w.simulator_settings(ctx.params))
    cfg = cfg.model_copy(update={"policies": w.parse_policies(cfg.policies),
                                 "objective": w.check_objective(cfg.objective)})
    err = Console(stderr=True, emoji=False, highlight=False)

    def loaded(wl, n_workers: int) -> None:
        w.report_bad_rows(wl, err)
        err.print(f"{len(cfg.policies)} policies on {len(wl.jobs)} jobs of {wl.describe()}, "
                  f"{n_workers} worker processes", markup=False)

    result = run_compare(cfg, workers=workers, console=err, on_loaded=loaded)
    report = write_compare(result, out)
    if len(result.summary):
        from ringsched.reports import headline

        console = stdout_console()
        console.print(compare_table(result.summary, f"{result.workload} (objective {cfg.objective})", console.width,
                                    result.jobs))
        console.print(headline(result.summary, jobs=result.jobs), markup=False)
    for k, e in result.errors.items():
        err.print(f"{k} failed: {e}", style="red", markup=False)
    if result.interrupted:
        err.print(f"interrupted: kept {len(result.summary)} finished policies"
                  + (f"; not finished: {', '.join(result.unfinished)}" if result.unfinished else ""), markup=False)
    print(f"report: {report}")
    if result.interrupted:
        raise typer.Exit(130)
    if result.errors:
        raise typer.Exit(1)


def _dirs(paths: list[Path] | None) -> list[str]:
    return [str(p) for p in paths or ()]
