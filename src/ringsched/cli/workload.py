"""What every command that takes a trace shares: its options and "trace + cluster -> jobs"."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from ringsched.cluster.model import Cluster, load_cluster
from ringsched.errors import InputError
from ringsched.job import Job

TRACE_HELP = ("Trace: synthetic:N[,key=value...] (built in), philly:PATH, pollux:PATH, itp:PATH, "
              "gavel:PATH, elasticflow:PATH or alibaba:PATH (docs/traces.md).")

TraceOpt = typer.Option("synthetic:2000", "--trace", help=TRACE_HELP)
ClusterOpt = typer.Option("16x8", "--cluster", help="Cluster spec NxG[,key=value...] or a YAML file (docs/cluster.md).")
VcOpt = typer.Option(None, "--vc", help="Keep one virtual cluster / tenant of the trace.")
WindowOpt = typer.Option(None, "--window", help="START:END, submission-time window in seconds from the trace's start.")
LimitOpt = typer.Option(None, "--limit", min=1, help="Keep the first N jobs by arrival.")
SeedOpt = typer.Option(0, "--seed", help="Seed of the synthetic trace, the model mapping and failures.")
RigidOpt = typer.Option(False, "--rigid", help="Pin every job to its requested GPUs (default: elastic 1..requested).")
ProfilesOpt = typer.Option(None, "--profiles", help="Folder of step-model parameter files DIR/<gpu type>/<model>.json "
                           "(ringsched model fit output): new GPU types or models' per-type speeds (docs/catalogue.md); repeatable.")
SkipBadRowsOpt = typer.Option(False, "--skip-bad-rows",
                              help="Leave out trace rows that fail a check, and count them, instead of stopping "
                                   "at the first.")


@dataclass
class Workload:
    trace: str
    cluster: Cluster
    jobs: list[Job]
    dropped: int
    bad_rows: int = 0  # rows left out by --skip-bad-rows
    bad_row_examples: tuple[str, ...] = ()

    def report_bad_rows(self, console) -> None:
        """One line on ``console`` (stderr) when --skip-bad-rows left rows out."""
        if self.bad_rows:
            console.print(f"skipped {self.bad_rows:,} bad trace row(s); first: {self.bad_row_examples[0]}",
                          markup=False, highlight=False, soft_wrap=True)


def load_workload(trace: str, cluster: str, *, vc: str | None, window: str | None, limit: int | None,
                  seed: int, rigid: bool, skip_bad_rows: bool = False) -> Workload:
    from ringsched.traces import load_trace, parse_window
    from ringsched.traces.convert import to_jobs

    cl = load_cluster(cluster)
    win = parse_window(window) if window else None
    frame = load_trace(trace, vc=vc, window=win, limit=limit, seed=seed, skip_bad_rows=skip_bad_rows)
    jobs = to_jobs(frame, cl, seed=seed, elastic=not rigid, source=trace)
    if not jobs:
        raise InputError("the trace has no jobs after filtering", field="trace")
    return Workload(trace, cl, jobs, int(frame.attrs.get("dropped", 0) or 0), int(frame.attrs.get("bad_rows", 0)),
                    tuple(frame.attrs.get("bad_row_examples", ())))


# --- Options shared by the commands that run the simulator (compare, sweep). -----------------
# Added for issue 5; `simulate` still declares its own copies of the simulator options.

SlotSOpt = typer.Option(300.0, "--slot-s", help="Scheduling slot (round) length, seconds.")
RestartSOpt = typer.Option(30.0, "--restart-s", help="Checkpoint-restart cost of a placement change, seconds.")
CheckpointSOpt = typer.Option(1800.0, "--checkpoint-s", help="Checkpoint interval while running, seconds.")
MtbfOpt = typer.Option(None, "--mtbf", help="Mean time between failures of each server, hours (default: no failures).")
MttrOpt = typer.Option(2.0, "--mttr", help="Mean time to repair a failed server, hours.")
ContentionOpt = typer.Option(False, "--contention",
                             help="Rings crossing a NIC or uplink share it (max-min fair) in the simulated world.")
HorizonSOpt = typer.Option(None, "--horizon-s", help="Stop at this simulated time; unfinished jobs end as waiting.")
PoliciesOpt = typer.Option("all", "--policies",
                           help="Comma-separated policy specs NAME[:key=value,...], or 'all' (ringsched policies lists them; options: docs/policies.md).")
ObjectiveOpt = typer.Option("jct", "--objective",
                            help="Objective NAME[,key=value...]: jct, deadline, energy, fairness or convergence "
                                 "(docs/objectives.md); judges every policy and drives GADGET's decisions.")
WorkersOpt = typer.Option(None, "--workers", min=1, help="Worker processes (default: min(runs, CPU count)).")


def sim_config_kwargs(*, slot_s: float, restart_s: float, checkpoint_s: float, mtbf: float | None,
                      mttr: float, contention: bool, horizon_s: float | None) -> dict:
    """The simulator options as ``SimConfig`` keyword arguments (without the seed), validated."""
    from ringsched.simulator import SimConfig

    kw = dict(slot_s=slot_s, restart_s=restart_s, checkpoint_s=checkpoint_s, mtbf_h=mtbf, mttr_h=mttr,
              contention=contention, horizon_s=horizon_s)
    try:
        SimConfig(**kw)
    except ValueError as e:
        raise InputError(str(e), field="options") from None
    return kw


def parse_policies(text: str) -> list[str]:
    """``"all"`` or ``"a,b,c"`` -> policy specs, in the given order, no duplicates. A spec may carry
    options, ``gadget:admission=strict,pack_slack=100``: an item with ``=`` and no ``:`` belongs
    to the spec before it."""
    from ringsched.policies import policy_names
    from ringsched.policies.registry import parse_policy

    text = (text or "").strip()
    if text.lower() == "all":
        return policy_names()
    specs: list[str] = []
    for item in (p.strip() for p in text.split(",")):
        if "=" in item and ":" not in item and specs:
            specs[-1] += "," + item
        elif item:
            specs.append(item)
    names: list[str] = []
    for spec in specs:
        if spec not in names:
            parse_policy(spec)  # unknown policy or option -> InputError, one line
            names.append(spec)
    if not names:
        raise InputError("no policy given; use a comma-separated list or 'all'", field="policies")
    return names


def objective_names() -> list[str]:
    """The objectives that exist (``ringsched.objectives.objective_names`` once it is defined)."""
    import ringsched.objectives as objectives

    fn = getattr(objectives, "objective_names", None)
    return list(fn()) if callable(fn) else ["jct"]


def check_objective(text: str) -> str:
    """``NAME[,key=value...]`` validated -> its canonical spec (name and every parameter)."""
    from ringsched.objectives.registry import parse_objective

    return parse_objective(text).spec()
