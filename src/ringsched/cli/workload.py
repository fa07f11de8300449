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


@dataclass
class Workload:
    trace: str
    cluster: Cluster
    jobs: list[Job]
    dropped: int


def load_workload(trace: str, cluster: str, *, vc: str | None, window: str | None, limit: int | None,
                  seed: int, rigid: bool) -> Workload:
    from ringsched.traces import load_trace, parse_window
    from ringsched.traces.convert import to_jobs

    cl = load_cluster(cluster)
    win = parse_window(window) if window else None
    frame = load_trace(trace, vc=vc, window=win, limit=limit, seed=seed)
    jobs = to_jobs(frame, cl, seed=seed, elastic=not rigid, source=trace)
    if not jobs:
        raise InputError("the trace has no jobs after filtering", field="trace")
    return Workload(trace, cl, jobs, int(frame.attrs.get("dropped", 0) or 0))
