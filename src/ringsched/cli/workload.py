"""The options every command that takes a trace shares, and their mapping onto the experiment
settings (``ringsched.experiment.config``). Parsing only: loading and running live in
``ringsched.experiment``."""

from __future__ import annotations

from pathlib import Path

import typer

from ringsched.experiment.config import SimulatorSettings, TraceSettings, build, load_config, with_overrides
from ringsched.experiment.workload import Workload
from ringsched.experiment.workload import load_workload as _load
from ringsched.experiment.workload import resolve_policies

TRACE_HELP = ("Trace: synthetic:N[,key=value...] or demo:N (built in), philly:PATH, pollux:PATH, itp:PATH, "
              "gavel:PATH, elasticflow:PATH or alibaba:PATH (docs/traces.md).")

TraceOpt = typer.Option("synthetic:2000", "--trace", help=TRACE_HELP)
ClusterOpt = typer.Option("16x8", "--cluster", help="Cluster spec NxG[,key=value...] or a YAML file (docs/cluster.md).")
VcOpt = typer.Option(None, "--vc", help="Keep one virtual cluster / tenant of the trace.")
WindowOpt = typer.Option(None, "--window", help="START:END, submission-time window in seconds from the trace's start.")
LimitOpt = typer.Option(None, "--limit", min=1, help="Keep the first N jobs by arrival.")
SeedOpt = typer.Option(0, "--seed", help="Seed of the synthetic trace, the model mapping and failures.")
LoadOpt = typer.Option(1.0, "--load", help="Arrival-rate factor: every arrival time is divided by it (2 = twice as fast).")
RigidOpt = typer.Option(False, "--rigid", metavar="", help="Pin every job to its requested GPUs (default: elastic 1..requested).")
SkipBadRowsOpt = typer.Option(False, "--skip-bad-rows", metavar="",
                              help="Leave out trace rows that fail a check, and count them, instead of stopping "
                                   "at the first.")
GpuProfilesOpt = typer.Option(None, "--gpu-profiles",
                              help="Folder of step-model parameter files DIR/<gpu type>/<model>.json (ringsched "
                                   "model fit output): new GPU types or models' per-type speeds "
                                   "(docs/catalogue.md); repeatable.")
SlotSOpt = typer.Option(300.0, "--slot-s", help="Scheduling slot (round) length, seconds.")
RestartSOpt = typer.Option(30.0, "--restart-s", help="Checkpoint-restart cost of a placement change, seconds.")
CheckpointSOpt = typer.Option(1800.0, "--checkpoint-s", help="Checkpoint interval while running, seconds.")
MtbfOpt = typer.Option(None, "--mtbf", help="Mean time between failures of each server, hours (default: no failures).")
MttrOpt = typer.Option(2.0, "--mttr", help="Mean time to repair a failed server, hours.")
ContentionOpt = typer.Option(False, "--contention", metavar="",
                             help="Rings crossing a NIC or uplink share it (max-min fair) in the simulated world.")
HorizonSOpt = typer.Option(None, "--horizon-s", help="Stop at this simulated time; unfinished jobs end as waiting.")
PoliciesOpt = typer.Option("all", "--policies",
                           help="Comma-separated policy specs NAME[:key=value,...], or 'all' (ringsched policies lists them; options: docs/policies.md).")
ObjectiveOpt = typer.Option("jct", "--objective",
                            help="Objective NAME[,key=value...]: jct, deadline, energy, fairness or convergence "
                                 "(docs/objectives.md); judges every policy and drives GADGET's decisions.")
WorkersOpt = typer.Option(None, "--workers", min=1, help="Worker processes (default: min(runs, CPU count)).")
SlottedOpt = typer.Option(False, "--slotted", metavar="",
                          help="Flag: decide only at slot boundaries (default: also at every arrival and "
                               "completion, docs/metrics.md).")
EstimatesOpt = typer.Option("exact", "--estimates",
                            help="What policies know of each job's work: exact, lognormal:SIGMA or user:FACTOR "
                                 "(docs/metrics.md); the world runs the true work.")
ProfilesOpt = typer.Option(None, "--profiles", help="MODEL=PARAMS.json (repeatable): jobs of that catalogue model "
                           "run at the step times of a `ringsched model fit` file (ring model).")
ConfigOpt = typer.Option(None, "--config", help="EXPERIMENT.yaml (e.g. a previous run's DIR/experiment.yaml); "
                         "options given on the command line override its values.")

# command-line parameter -> dotted field of the experiment config (for --config overrides)
TRACE_FIELDS = {"trace": "trace.trace", "vc": "trace.vc", "window": "trace.window", "limit": "trace.limit",
                "rigid": "trace.rigid", "skip_bad_rows": "trace.skip_bad_rows"}
SIM_FIELDS = {"slot_s": "simulator.slot_s", "restart_s": "simulator.restart_s",
              "checkpoint_s": "simulator.checkpoint_s", "mtbf": "simulator.mtbf_h", "mttr": "simulator.mttr_h",
              "contention": "simulator.contention", "horizon_s": "simulator.horizon_s",
              "estimates": "simulator.estimates", "slotted": "simulator.slotted"}


def read_profiles(items: list[str] | None) -> dict[str, dict]:
    """``--profiles MODEL=PARAMS.json ...`` -> {model: the parameter document}."""
    from ringsched.experiment.profiles import read_profile

    return dict(read_profile(x) for x in (items or []))


def trace_settings(p: dict) -> TraceSettings:
    return build(TraceSettings, **{k: p[k] for k in TRACE_FIELDS})


def simulator_settings(p: dict) -> SimulatorSettings:
    return build(SimulatorSettings, **{f.split(".")[1]: p[k] for k, f in SIM_FIELDS.items()})


def given_on_command_line(ctx: typer.Context) -> set[str]:
    """The parameters the user gave (typer ships its own click: compare by the source's name)."""
    return {name for name in ctx.params
            if getattr(ctx.get_parameter_source(name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")}


def merge_config(ctx: typer.Context, config: Path, kind, fields: dict[str, str], convert: dict | None = None):
    """The experiment file ``config`` with every option given on the command line applied."""
    base = load_config(config, kind)
    convert = convert or {}
    overrides = {fields[k]: convert.get(k, lambda v: v)(ctx.params[k]) for k in given_on_command_line(ctx)
                 if k in fields}
    return with_overrides(base, overrides)


def load_workload(trace: str, cluster: str, *, vc: str | None, window: str | None, limit: int | None,
                  seed: int, rigid: bool, skip_bad_rows: bool = False, profiles: dict | None = None) -> Workload:
    """The workload of the command-line options (a thin adapter over the experiment layer)."""
    return _load(build(TraceSettings, trace=trace, vc=vc, window=window, limit=limit, rigid=rigid,
                       skip_bad_rows=skip_bad_rows), cluster, seed=seed, profiles=profiles)


def parse_policies(text: str) -> list[str]:
    return resolve_policies(text)


def check_objective(text: str) -> str:
    """``NAME[,key=value...]`` validated -> its canonical spec (name and every parameter)."""
    from ringsched.experiment.objectives import parse_objective

    return parse_objective(text).spec()


def report_bad_rows(wl: Workload, console) -> None:
    """One line on ``console`` (stderr) when skip_bad_rows left rows out."""
    if wl.bad_rows:
        console.print(f"skipped {wl.bad_rows:,} bad trace row(s); first: {wl.bad_row_examples[0]}",
                      markup=False, highlight=False, soft_wrap=True)
