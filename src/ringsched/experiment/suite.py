"""The evaluation suite (issue 15, docs/suite.md): every policy on every workload of
``experiment.workloads``, with two seeds each, under exact and noisy duration estimates, in
the world that decides at arrivals and completions.

``run_suite`` runs the cells (workload x seed x estimates x policy) through the shared
executors (local processes or a Ray cluster, with progress, and Ctrl-C / SIGTERM keeping the
finished cells) and returns one row per finished cell; ``ratios`` turns the rows into the target
policy's ratios to the best baseline per workload (means over seeds), ``paired`` into the
per-seed paired differences with a confidence interval, ``overall`` into geometric means
and worst cases. ``write_suite`` writes them as Parquet and an HTML page. Everything here
is recomputable from ``cells.parquet`` alone (tests/test_suite.py does it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.experiment.executors import Task, run_parallel
from ringsched.experiment.objectives import parse_objective
from ringsched.experiment.workloads import WORKLOADS, SuiteWorkload, offered_load, perturb_arrivals
from ringsched.reports.metrics import t_interval

METRICS = (("total_utility", "max"), ("mean_jct_s", "min"), ("p99_jct_s", "min"))
ESTIMATES = ("exact", "lognormal:1")


@dataclass(frozen=True)
class Cell:
    workload: SuiteWorkload
    seed: int
    estimates: str
    policy: str
    decide_at_events: bool = True
    profiles: dict | None = None  # model -> a fitted step-time document (--profiles), or the catalogue
    objective: str = "jct"  # what the run is judged by (docs/objectives.md)
    decide_as: str | None = None  # the policy decides as under this objective instead (the target's jct reference)


def cell_world(cell: Cell):
    """(jobs, cluster, SimConfig) of a cell: the workload's jobs as the seed perturbs them, in the
    world the suite runs (``benchmarks/by_width.py`` reads its runs' jobs from the same world)."""
    from ringsched.experiment.config import TraceSettings
    from ringsched.experiment.workload import load_workload
    from ringsched.simulator import SimConfig

    w = cell.workload
    trace = TraceSettings(trace=w.spec(), vc=w.vc, window=w.window, limit=w.limit, rigid=w.rigid)
    wl = load_workload(trace, w.cluster_spec(), seed=cell.seed, profiles=cell.profiles)
    jobs = perturb_arrivals(w.adapt(wl.jobs), cell.seed)
    cfg = SimConfig(seed=cell.seed, estimates=cell.estimates, decide_at_events=cell.decide_at_events)
    return jobs, wl.cluster, cfg


def run_cell(cell: Cell) -> dict:
    """One policy on one workload, seed and estimate setting: a flat row of figures."""
    from ringsched.experiment.run import run_one
    from ringsched.perfmodel.speed import SpeedModel

    w = cell.workload
    t0 = time.perf_counter()
    jobs, cluster, cfg = cell_world(cell)
    s = run_one(cell.objective, jobs, cluster, cell.policy, cfg, profiles=cell.profiles,
                decide_as=cell.decide_as).summary
    row = {"workload": w.name, "family": w.family, "mix": w.mix, "setup": w.describe(), "seed": cell.seed,
           "estimates": cell.estimates, "policy": cell.policy, "decide_at_events": cell.decide_at_events,
           "objective": s["objective"], "decided_as": s["decided_as"],
           "jobs": s["jobs"], "completed": s["completed"], "rejected": s["rejected"],
           "offered_load": offered_load(jobs, cluster, SpeedModel(cluster))}
    for k in ("total_utility", "max_utility", "mean_jct_s", "p50_jct_s", "p99_jct_s", "mean_jct_completed_s",
              "gpu_utilization", "gpu_utilization_busy", "worst_ftf_rho", "jain_index", "energy_kwh", "preemptions"):
        row[k] = np.nan if s.get(k) is None else float(s[k])
    judged = parse_objective(cell.objective)
    for k in [m for m, _ in judged.metrics] + list(judged.details):
        row[k] = np.nan if s.get(k) is None else float(s[k])
    for k, v in (s.get("policy_stats") or {}).items():
        row[f"stat_{k}"] = float(v)
    row["wall_s"] = time.perf_counter() - t0
    return row


def cells_for(workloads: Sequence[SuiteWorkload], policies: Sequence[str], *, seeds: Sequence[int] = (0, 1),
              estimates: Sequence[str] = ESTIMATES, decide_at_events: bool = True,
              profiles: dict | None = None, objective: str = "jct", target: str | None = None) -> list[Cell]:
    """Every policy on every workload, seed and estimate setting, under ``objective``; under an
    objective other than jct, also ``target`` deciding as under jct (judged by the objective)."""
    default = parse_objective(None).spec()
    refs = [target] if target is not None and parse_objective(objective).spec() != default else []
    return [Cell(w, s, e, p, decide_at_events, profiles or None, objective, d)
            for w in workloads for s in seeds for e in estimates
            for p, d in [(p, None) for p in policies] + [(t, "jct") for t in refs]]


def objective_metrics(objective: str) -> tuple[tuple[str, str], ...]:
    """The summary fields ``objective`` is judged by, with their better direction."""
    return parse_objective(objective).metrics


def decided_by_objective(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells whose policy decided as under the run's objective (not the jct references)."""
    if "decided_as" not in cells:
        return cells
    return cells[cells["decided_as"] == cells["objective"]]


@dataclass
class SuiteRun:
    """What a suite run gave: the finished cells' rows, and what did not finish."""

    cells: pd.DataFrame  # one row per finished cell, sorted by workload, seed, estimates, policy
    total: int  # cells asked for
    errors: dict[str, str] = field(default_factory=dict)  # cell key -> "Type: message"
    interrupted: bool = False  # Ctrl-C or SIGTERM: the cells finished by then are kept
    wall_s: float = 0.0


def cell_key(cell: Cell) -> str:
    """A cell's name (unique: the target deciding as under jct is a cell of its own)."""
    ref = f" (deciding as {cell.decide_as})" if cell.decide_as else ""
    return f"{cell.workload.name} seed {cell.seed} {cell.estimates} {cell.policy}{ref}"


def run_keyed_cell(task: dict) -> dict:
    """``run_cell`` of ``{"key": ..., "cell": Cell}``: the form the Ray executor hands its tasks."""
    return run_cell(task["cell"])


def run_suite(cells: Sequence[Cell], *, workers: int = 2, engine: str = "process", console=None,
              show: bool = True) -> SuiteRun:
    """Every cell, through the shared executors: ``workers`` local processes
    (``executors.run_parallel``, ``engine="process"``) or Ray tasks (``ray_executor.run_ray``,
    ``engine="ray"``: the cluster of $RAY_ADDRESS, else a local one). Both show progress on
    ``console`` (stderr), a line per finished cell, and stop at Ctrl-C or SIGTERM keeping the
    cells that finished; a failed cell is reported in ``errors`` and the others go on."""
    from rich.console import Console

    console = console or Console(stderr=True)
    keyed = {cell_key(c): c for c in cells}
    done = [0]

    def line(key: str, row: dict) -> str:
        done[0] += 1
        return f"[{done[0]}/{len(keyed)}] {key}: {row['wall_s']:.1f} s"

    if engine == "ray":
        from ringsched.experiment.ray_executor import run_ray

        out = run_ray([{"key": k, "cell": c} for k, c in keyed.items()], run_keyed_cell, address=None,
                      workers=workers, console=console, on_done=line if show else None)
    else:
        out = run_parallel([Task(k, run_cell, (c,)) for k, c in keyed.items()], workers=workers,
                           per_task_bars=False, label="cells", console=console, on_done=line, show=show)
    rows = [out.results[k] for k in keyed if k in out.results]
    return SuiteRun(_sorted(rows), len(keyed), dict(out.errors), out.interrupted, out.wall_s)


def _sorted(rows: list[dict]) -> pd.DataFrame:
    """The rows in the suite's order: workloads as listed in WORKLOADS, then seed, estimates, policy."""
    if not rows:
        return pd.DataFrame(columns=["workload", "seed", "estimates", "policy"])
    order = {w.name: i for i, w in enumerate(WORKLOADS)}
    df = pd.DataFrame(rows)
    df["_o"] = df["workload"].map(lambda n: order.get(n, len(order)))
    return df.sort_values(["_o", "workload", "seed", "estimates", "policy"]).drop(columns="_o").reset_index(drop=True)


# ---------------------------------------------------------------- analysis

def _better(metric: str) -> str:
    return dict(METRICS)[metric]


def ratios(cells: pd.DataFrame, target: str = "gadget") -> pd.DataFrame:
    """Per workload and estimate setting: the target's mean (over seeds) of each metric over
    the best baseline's mean (every other policy), with which baseline was best. Utility
    ratios > 1 and JCT ratios < 1 favour the target."""
    out = []
    cells = decided_by_objective(cells)
    means = cells.groupby(["workload", "estimates", "policy"], sort=False)[[m for m, _ in METRICS]].mean()
    for (wname, est), g in means.groupby(level=[0, 1], sort=False):
        g = g.droplevel([0, 1])
        if target not in g.index or len(g) < 2:
            continue
        base = g.drop(index=target)
        row = {"workload": wname, "estimates": est}
        for m, how in METRICS:
            best = base[m].idxmax() if how == "max" else base[m].idxmin()
            row[f"{m}_best"] = best
            row[f"{m}_target"] = float(g.loc[target, m])
            row[f"{m}_baseline"] = float(base.loc[best, m])
            row[f"{m}_ratio"] = float(g.loc[target, m] / base.loc[best, m]) if base.loc[best, m] else np.nan
        out.append(row)
    return pd.DataFrame(out)


def pair_index(cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """The cells that decided as under their objective, indexed by (workload, estimates, seed,
    policy), and the seeds each (workload, estimates) ran: what ``rel_diffs`` pairs."""
    own = decided_by_objective(cells)
    return (own.set_index(["workload", "estimates", "seed", "policy"]).sort_index(),
            own.groupby(["workload", "estimates"])["seed"].unique())


def rel_diffs(idx: pd.DataFrame, seeds: pd.Series, workload: str, est: str, target: str, best: str,
              metric: str) -> list[float]:
    """target / best - 1 of ``metric`` per seed of the workload, where both cells finished (an
    interrupted run lacks some) and the best's value is not 0."""
    out = []
    for seed in sorted(seeds.get((workload, est), ())):
        a, b = (workload, est, seed, target), (workload, est, seed, best)
        if a in idx.index and b in idx.index and idx.loc[b, metric]:
            out.append(float(idx.loc[a, metric] / idx.loc[b, metric] - 1.0))
    return out


def paired_reading(d, level: float) -> tuple[float, float, float, int, float]:
    """(mean, low, high, pairs, p) of the differences ``d``: ``reports.metrics.t_interval`` of
    the finite values (NaN bounds under two: one pair has no spread to read) and the two-sided
    Wilcoxon signed-rank p-value (zeros dropped; NaN under two non-zero differences). The rank
    test reads a heavy-tailed metric that the mean's interval cannot: one seed's worst rho of
    186 against 6.5 widens the interval past 0 whatever the other 29 pairs say."""
    from scipy.stats import wilcoxon  # (here: scipy.stats is slow to import for every CLI call)

    d = np.asarray(d, dtype=float)
    mean, lo, hi, n = t_interval(d, level)
    nz = d[np.isfinite(d) & (d != 0)]
    p = float(wilcoxon(nz).pvalue) if nz.size >= 2 else np.nan
    return (mean, lo, hi, n, p) if n > 1 else (mean, np.nan, np.nan, n, p)


def paired(cells: pd.DataFrame, r: pd.DataFrame, target: str = "gadget", level: float = 0.95) -> pd.DataFrame:
    """Per estimate setting and metric: the target's relative difference to the workload's best
    baseline (fixed per workload by ``ratios``), paired per workload and seed; its mean and a
    Student-t confidence interval over the pairs."""
    out = []
    idx, seeds = pair_index(cells)
    for est, rr in r.groupby("estimates", sort=False):
        for m, _ in METRICS:
            d = [x for row in rr.itertuples()
                 for x in rel_diffs(idx, seeds, row.workload, est, target, getattr(row, f"{m}_best"), m)]
            mean, lo, hi, n, p = paired_reading(d, level)
            out.append({"estimates": est, "metric": m, "pairs": n, "mean_rel_diff": mean,
                        "ci_low": lo, "ci_high": hi, "level": level, "p_signed_rank": p})
    return pd.DataFrame(out)


def overall(r: pd.DataFrame) -> pd.DataFrame:
    """Per estimate setting and metric: geometric mean of the ratios and the worst workload."""
    out = []
    for est, rr in r.groupby("estimates", sort=False):
        for m, how in METRICS:
            x = rr[f"{m}_ratio"].to_numpy(dtype=float)
            ok = np.isfinite(x) & (x > 0)
            worst_i = int(np.argmin(np.where(ok, x, np.inf)) if how == "max" else np.argmax(np.where(ok, x, -np.inf)))
            out.append({"estimates": est, "metric": m, "workloads": int(ok.sum()),
                        "geomean_ratio": float(np.exp(np.log(x[ok]).mean())) if ok.any() else np.nan,
                        "worst_ratio": float(x[worst_i]) if ok.any() else np.nan,
                        "worst_workload": rr["workload"].iloc[worst_i] if ok.any() else ""})
    return pd.DataFrame(out)


def workload_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per workload: its setup, offered load, and GPU utilisation of each policy (exact)."""
    cells = decided_by_objective(cells)
    ex = cells[cells.estimates == cells.estimates.iloc[0]]
    info = ex.groupby("workload", sort=False)[["family", "mix", "setup", "jobs", "offered_load"]].first()
    util = ex.pivot_table(index="workload", columns="policy", values="gpu_utilization_busy", aggfunc="mean")
    return info.join(util.add_prefix("busy_util_"), how="left").reset_index()


CELL_KEY = ("workload", "estimates", "seed", "policy", "decided_as")  # one cell: its run, and how it decided


def duplicated_cell(cells: pd.DataFrame) -> str | None:
    """The first row (1-based) that repeats an earlier cell, described, or None: a cell twice
    (a file joined with itself, say) would count twice in every mean and break the pairing."""
    key = [c for c in CELL_KEY if c in cells]
    dup = cells.duplicated(subset=key).to_numpy().nonzero()[0]
    if not dup.size:
        return None
    i = int(dup[0])
    return f"row {i + 1}: the cell ({', '.join(f'{c}={cells[c].iloc[i]}' for c in key)}) is there twice"


def write_suite(out_dir: Path, cells: pd.DataFrame, target: str = "gadget") -> dict[str, pd.DataFrame]:
    """cells.parquet, ratios.parquet, paired.parquet, overall.parquet, workloads.parquet,
    objective.parquet and objective_overall.parquet (not under jct: their tables are empty, and
    an earlier run's are removed), and index.html. A cell there twice is a ValueError before
    anything is written."""
    from ringsched.experiment.suite_html import suite_page

    bad = duplicated_cell(cells)
    if bad:
        raise ValueError(f"write_suite: {bad}")

    out_dir.mkdir(parents=True, exist_ok=True)
    cells.to_parquet(out_dir / "cells.parquet", index=False)  # (first: what finished is kept whatever follows)
    r = ratios(cells, target)
    from ringsched.experiment.suite_objectives import objective_overall, objective_table

    obj = objective_table(cells, target)
    derived = {"ratios": r, "paired": paired(cells, r, target) if len(r) else pd.DataFrame(),
               "overall": overall(r) if len(r) else pd.DataFrame(), "workloads": workload_table(cells),
               "objective": obj, "objective_overall": objective_overall(obj, cells, target)}
    for name, t in derived.items():
        if len(t) or name not in ("objective", "objective_overall"):
            t.to_parquet(out_dir / f"{name}.parquet", index=False)
        else:  # (jct: nothing to compare; an earlier run's file under another objective would mislead)
            (out_dir / f"{name}.parquet").unlink(missing_ok=True)
    tables = {"cells": cells, **derived}
    (out_dir / "index.html").write_text(suite_page(tables, target))
    return tables


def skipped_workloads(workloads: Sequence[SuiteWorkload]) -> list[tuple[SuiteWorkload, str]]:
    """The workloads whose shared trace file is absent, with the reason."""
    return [(w, f"{w.needs()} not found") for w in workloads if w.needs() is not None and not w.needs().exists()]


__all__ = ["Cell", "SuiteRun", "cell_key", "cells_for", "duplicated_cell", "overall", "paired", "paired_reading",
           "ratios", "run_cell", "run_keyed_cell", "run_suite", "skipped_workloads", "workload_table", "write_suite"]
