"""A workload: trace + filters + cluster + load + seed -> jobs. Shared by every run, the
commands and the Python API; its description names every part, so titles, report headers and
``summary.csv`` all say exactly which workload a result is of."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass

from ringsched.cluster.model import Cluster, load_cluster
from ringsched.errors import InputError
from ringsched.experiment.config import TraceSettings
from ringsched.job import Job


@dataclass
class Workload:
    trace: TraceSettings
    cluster_spec: str
    cluster: Cluster
    seed: int
    load: float
    jobs: list[Job]
    dropped: int
    bad_rows: int = 0  # rows left out by skip_bad_rows
    bad_row_examples: tuple[str, ...] = ()

    def describe(self) -> str:
        return describe_workload(self.trace, self.cluster_spec, self.seed, self.load)

    def columns(self) -> dict:
        """The workload's columns of summary.csv (and cells.csv)."""
        return workload_columns(self.trace, self.cluster_spec, self.seed, self.load)


def workload_columns(trace: TraceSettings, cluster: str, seed: int, load: float) -> dict:
    return {"trace": trace.trace, "vc": trace.vc or "", "window": trace.window or "",
            "limit": "" if trace.limit is None else int(trace.limit), "rigid": bool(trace.rigid),
            "skip_bad_rows": bool(trace.skip_bad_rows), "load": float(load), "seed": int(seed), "cluster_spec": cluster}


def describe_trace(trace: TraceSettings) -> list[str]:
    """The trace and every filter that changes which jobs it gives (vc, window, limit, bad rows)."""
    parts = [trace.trace]
    if trace.vc:
        parts.append(f"vc {trace.vc}")
    if trace.window:
        parts.append(f"window {trace.window}")
    if trace.limit is not None:
        parts.append(f"limit {trace.limit}")
    if trace.skip_bad_rows:
        parts.append("bad rows skipped")
    return parts


def describe_workload(trace: TraceSettings, cluster: str, seed: int, load: float) -> str:
    """One line naming every part of the workload, e.g. ``synthetic:1000, vc 6214e9, window
    0:86400, limit 500, load 2, seed 0, cluster 16x8, elastic jobs``."""
    parts = describe_trace(trace)
    parts += [f"load {load:g}", f"seed {seed}", f"cluster {cluster}", "rigid jobs" if trace.rigid else "elastic jobs"]
    return ", ".join(parts)


def scale_arrivals(jobs, load: float) -> list:
    """Arrival-rate scaling: every arrival time divided by ``load``."""
    if load == 1.0:
        return list(jobs)
    return [dataclasses.replace(j, arrival_s=j.arrival_s / load) for j in jobs]


@functools.lru_cache(maxsize=8)
def _jobs(trace: TraceSettings, cluster: str, seed: int, profiles: str):
    from ringsched.experiment.profiles import speed_model
    from ringsched.traces import load_trace, parse_window
    from ringsched.traces.convert import to_jobs

    cl = load_cluster(cluster)
    win = parse_window(trace.window) if trace.window else None
    frame = load_trace(trace.trace, vc=trace.vc, window=win, limit=trace.limit, seed=seed,
                       skip_bad_rows=trace.skip_bad_rows)
    jobs = to_jobs(frame, cl, seed=seed, elastic=not trace.rigid, source=trace.trace,
                   speed=speed_model(cl, json.loads(profiles)))
    if not jobs:
        raise InputError("the trace has no jobs after filtering", field="trace")
    return cl, tuple(jobs), frame.attrs


def load_workload(trace: TraceSettings, cluster: str, *, seed: int = 0, load: float = 1.0,
                  profiles: dict[str, dict] | None = None) -> Workload:
    """The jobs of ``trace`` on ``cluster`` with ``seed``, arrivals scaled by ``load``, work from
    durations at the step times of ``profiles`` where given (experiment/profiles.py). Cached
    per process (a sweep's worker reuses one trace for many cells)."""
    from ringsched.experiment.profiles import profiles_key

    cl, jobs, attrs = _jobs(trace, cluster, int(seed), profiles_key(profiles))
    return Workload(trace, cluster, cl, int(seed), float(load), scale_arrivals(jobs, float(load)),
                    int(attrs.get("dropped", 0) or 0), int(attrs.get("bad_rows", 0)),
                    tuple(attrs.get("bad_row_examples", ())))


def resolve_policies(text_or_list) -> list[str]:
    """``"all"``, ``"a,b:k=v,c"`` or a list of specs -> policy specs in order, without
    duplicates, each checked. An item with ``=`` and no ``:`` belongs to the spec before it."""
    from ringsched.experiment.plugins import load_policy_plugins
    from ringsched.policies import policy_names
    from ringsched.policies.registry import parse_policy

    load_policy_plugins()
    if isinstance(text_or_list, str):
        text = text_or_list.strip()
        if text.lower() == "all":
            return policy_names()
        specs: list[str] = []
        for item in (p.strip() for p in text.split(",")):
            if "=" in item and ":" not in item and specs:
                specs[-1] += "," + item
            elif item:
                specs.append(item)
    else:
        specs = [str(s).strip() for s in text_or_list]
        if [s.lower() for s in specs] == ["all"]:
            return policy_names()
    names: list[str] = []
    for spec in specs:
        if spec and spec not in names:
            parse_policy(spec)  # unknown policy or option -> InputError, one line
            names.append(spec)
    if not names:
        raise InputError("no policy given; use a comma-separated list or 'all'", field="policies")
    return names
