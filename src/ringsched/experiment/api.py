"""The Python API: ``simulate``, ``compare`` and ``sweep``, returning typed results whose tables
are pandas DataFrames (docs/api.md). They run exactly what the commands run, without printing.

    >>> import ringsched
    >>> r = ringsched.compare("demo:200", "4x8", policies=["fifo", "gadget"])
    >>> r.summary[["policy", "mean_jct_s"]]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ringsched.experiment.compare import CompareResult, run_compare, write_compare
from ringsched.experiment.config import CompareConfig, SimulatorSettings, SweepConfig, TraceSettings, build
from ringsched.experiment.plugins import load_policy_plugins
from ringsched.experiment.sweep import SweepResult, run_sweep, write_sweep
from ringsched.experiment.workload import load_workload, resolve_policies


@dataclass
class SimulationResult:
    workload: str  # the full description: trace, filters, load, seed, cluster
    summary: dict  # every summary metric (docs/metrics.md)
    jobs: pd.DataFrame  # one row per job
    timeline: pd.DataFrame  # one row per scheduling decision
    placements: pd.DataFrame  # one row per placement change


def _trace(trace: str, vc, window, limit, rigid) -> TraceSettings:
    return build(TraceSettings, trace=trace, vc=vc, window=window, limit=limit, rigid=rigid)


def _simulator(simulator: dict | SimulatorSettings | None) -> SimulatorSettings:
    if isinstance(simulator, SimulatorSettings):
        return simulator
    return build(SimulatorSettings, **(simulator or {}))


def _profiles(profiles: dict[str, str | Path] | None) -> dict[str, dict]:
    """{model: PARAMS.json path} -> {model: the parameter document} (experiment/profiles.py)."""
    from ringsched.experiment.profiles import read_profile

    return dict(read_profile(f"{m}={p}") for m, p in (profiles or {}).items())


def _policies(policies: str | Sequence[str]) -> list[str]:
    load_policy_plugins()
    return resolve_policies(policies)


def simulate(trace: str = "demo:1000", cluster: str = "16x8", policy: str = "gadget", *, objective: str = "jct",
             seed: int = 0, load: float = 1.0, vc: str | None = None, window: str | None = None,
             limit: int | None = None, rigid: bool = False, simulator: dict | SimulatorSettings | None = None,
             profiles: dict[str, str | Path] | None = None) -> SimulationResult:
    """One policy on one workload; ``simulator`` takes SimulatorSettings' fields (slot_s, mtbf_h, ...),
    ``profiles`` {model: PARAMS.json} fitted step times."""
    from ringsched.experiment.run import run_one
    from ringsched.experiment.workload import describe_workload

    (spec,) = _policies([policy])
    tr = _trace(trace, vc, window, limit, rigid)
    fitted = _profiles(profiles)
    wl = load_workload(tr, cluster, seed=seed, load=load, profiles=fitted)
    res = run_one(objective, wl.jobs, wl.cluster, spec, _simulator(simulator).sim_config(seed), profiles=fitted)
    return SimulationResult(describe_workload(tr, cluster, seed, load), dict(res.summary), res.jobs, res.timeline,
                            res.changes)


def compare(trace: str = "demo:1000", cluster: str = "16x8", policies: str | Sequence[str] = "all", *,
            objective: str = "jct", seed: int = 0, load: float = 1.0, vc: str | None = None,
            window: str | None = None, limit: int | None = None, rigid: bool = False,
            simulator: dict | SimulatorSettings | None = None, profiles: dict[str, str | Path] | None = None,
            workers: int | None = None, out: str | Path | None = None) -> CompareResult:
    """Every policy on one workload, in worker processes; with ``out``, also every file of
    ``ringsched compare`` (report.html included)."""
    cfg = build(CompareConfig, trace=_trace(trace, vc, window, limit, rigid), cluster=cluster, load=load, seed=seed,
                policies=_policies(policies), objective=objective, profiles=_profiles(profiles),
                simulator=_simulator(simulator))
    result = run_compare(cfg, workers=workers, quiet=True)
    if out is not None:
        write_compare(result, Path(out), command=["python-api", "compare"])
    return result


def sweep(trace: str = "demo:1000", clusters: Sequence[str] = ("16x8",), policies: str | Sequence[str] = "all", *,
          loads: Sequence[float] = (0.5, 1.0, 2.0), seeds: Sequence[int] = (0, 1, 2), objective: str = "jct",
          baseline: str | None = None, confidence: float = 0.95, vc: str | None = None, window: str | None = None,
          limit: int | None = None, rigid: bool = False, simulator: dict | SimulatorSettings | None = None,
          profiles: dict[str, str | Path] | None = None, workers: int | None = None,
          out: str | Path | None = None) -> SweepResult:
    """Every policy over clusters x loads x seeds (local worker processes); intervals across
    seeds and per-seed paired differences against ``baseline`` (default: the first policy)."""
    cfg = build(SweepConfig, trace=_trace(trace, vc, window, limit, rigid), clusters=list(clusters),
                loads=[float(x) for x in loads], seeds=[int(s) for s in seeds], policies=_policies(policies),
                objective=objective, baseline=baseline, confidence=confidence, profiles=_profiles(profiles),
                simulator=_simulator(simulator))
    result = run_sweep(cfg, workers=workers, quiet=True)
    if out is not None:
        write_sweep(result, Path(out), command=["python-api", "sweep"])
    return result
