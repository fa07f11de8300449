"""``ringsched sweep``: every policy over load factors, cluster sizes and seeds. Parses the
options (or an experiment file), runs ``ringsched.experiment.sweep`` and prints the table."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from ringsched.cli import workload as w
from ringsched.errors import InputError
from ringsched.experiment.config import SweepConfig, build

FIELDS = {**w.TRACE_FIELDS, **w.SIM_FIELDS, "cluster": "clusters", "loads": "loads", "seeds": "seeds",
          "policies": "policies", "objective": "objective", "profiles": "profiles", "engine": "engine",
          "address": "address",
          "confidence": "confidence", "baseline": "baseline"}

EPILOG = """Examples:

  ringsched sweep --trace demo:1000 --loads 0.5,1 --seeds 0-1 --policies fifo,gadget --baseline fifo --out results/sweep

  ringsched sweep ... --engine ray --address auto

  ringsched sweep --config results/sweep/experiment.yaml --out results/sweep2
"""


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


def sweep(
    ctx: typer.Context,
    trace: str = w.TraceOpt,
    cluster: list[str] = typer.Option(["16x8"], "--cluster",
                                      help="Cluster spec NxG[,key=value...] or YAML; repeat for several sizes."),
    loads: str = typer.Option("0.5,1,2", "--loads", help="Load factors, comma-separated: arrival times are "
                              "divided by each (2 = jobs arrive twice as fast)."),
    seeds: str = typer.Option("0,1,2", "--seeds", help="Seeds, comma-separated or a range A-B: confidence "
                              "intervals are across them."),
    policies: str = w.PoliciesOpt,
    objective: str = w.ObjectiveOpt,
    baseline: str = typer.Option(None, "--baseline", help="Policy the per-seed paired differences are taken "
                                 "against (default: the first of --policies)."),
    out: Path = typer.Option(None, "--out", help="Folder for cells.csv, sweep.csv, paired.csv, experiment.yaml, "
                             "run.json and report.html (default with --config: the config's folder)."),
    config: Path = w.ConfigOpt,
    profiles: list[str] = w.ProfilesOpt,
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
    estimates: str = w.EstimatesOpt,
    slotted: bool = w.SlottedOpt,
    workers: int = w.WorkersOpt,
) -> None:
    """Sweep policies over load factors, cluster sizes and seeds; table, paired differences, plots."""
    from ringsched.experiment.sweep import run_sweep, write_sweep
    from ringsched.reports.terminal import stdout_console, sweep_table

    convert = {"loads": lambda t: _floats(t, "loads"), "seeds": _seeds, "policies": w.parse_policies,
               "cluster": lambda c: list(dict.fromkeys(c)), "engine": _engine, "profiles": w.read_profiles}
    if config is not None:
        cfg = w.merge_config(ctx, config, SweepConfig, FIELDS, convert)
        out = out or config.parent
    elif out is None:
        raise InputError("give --out DIR (or --config EXPERIMENT.yaml)", field="out")
    else:
        cfg = build(SweepConfig, trace=w.trace_settings(ctx.params), clusters=convert["cluster"](cluster or ["16x8"]),
                          loads=_floats(loads, "loads"), seeds=_seeds(seeds), policies=w.parse_policies(policies),
                          objective=objective, baseline=baseline, confidence=confidence, engine=_engine(engine),
                          address=address, profiles=w.read_profiles(profiles),
                          simulator=w.simulator_settings(ctx.params))
    cfg = cfg.model_copy(update={"policies": w.parse_policies(cfg.policies),
                                 "objective": w.check_objective(cfg.objective)})
    if cfg.address and cfg.engine != "ray":
        raise InputError("--address needs --engine ray", field="address")
    if cfg.baseline is not None and cfg.baseline not in cfg.policies:
        raise InputError(f"baseline {cfg.baseline!r} is not among the policies", field="baseline")
    err = Console(stderr=True, emoji=False, highlight=False)
    result = run_sweep(cfg, workers=workers, console=err)
    report = write_sweep(result, out)
    if len(result.intervals):
        from ringsched.experiment.sweep import describe_sweep

        console = stdout_console()
        baseline = cfg.baseline or cfg.policies[0]
        console.print(sweep_table(result.intervals, f"sweep of {describe_sweep(cfg)}: mean over seeds "
                                  f"[{cfg.confidence:.0%} t-interval]", console.width, paired=result.paired,
                                  baseline=baseline))
    for k, e in result.errors.items():
        err.print(f"{k} failed: {e}", style="red", markup=False)
    if result.interrupted:
        err.print(f"interrupted: kept {len(result.cells)} of {result.cells_total} cells", markup=False)
    print(f"report: {report}")
    if result.interrupted:
        raise typer.Exit(130)
    if result.errors:
        raise typer.Exit(1)


def _engine(text: str) -> str:
    if text not in ("local", "ray"):
        raise InputError(f"unknown engine {text!r}; known: local, ray", field="engine")
    return text
