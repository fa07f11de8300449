"""The metrics catalogue and the statistics of the reports: what each summary column is called,
its unit and which way is better; when a value counts as best (beyond the run's noise);
intervals across seeds and paired differences against a baseline; the one-sentence headline.
Reads result tables only."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

HOUR = 3600.0


# ------------------------------------------------------------------------------ metrics
@dataclass(frozen=True)
class Metric:
    key: str  # column of the summary
    label: str  # label with unit, for the HTML report and plots
    better: str | None  # "min", "max" or None (no best)
    scale: float = 1.0  # displayed value = value * scale
    fmt: str = "{:,.2f}"
    header: str = ""  # short terminal header with unit (default: label)
    lower: float | None = 0.0  # the smallest possible value (intervals are clipped to it)
    upper: float | None = None  # the largest possible value

    def show(self, v) -> str:
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            return "-"
        try:
            return self.fmt.format(float(v) * self.scale)
        except (TypeError, ValueError):
            return str(v)

    @property
    def head(self) -> str:
        return self.header or self.label


# The columns of the terminal and HTML summary tables, most important first (a narrow
# terminal drops columns from the end).
TABLE_METRICS: tuple[Metric, ...] = (
    Metric("mean_jct_s", "mean JCT (h)", "min", 1 / HOUR, header="mean JCT h"),
    Metric("p50_jct_s", "p50 JCT (h)", "min", 1 / HOUR, header="p50 JCT h"),
    Metric("p99_jct_s", "p99 JCT (h)", "min", 1 / HOUR, header="p99 JCT h"),
    Metric("rejected", "rejected (jobs)", "min", fmt="{:,.0f}", header="rejected"),
    # shown where the simulator reports it: busy GPU-seconds over the periods with work to do
    Metric("gpu_utilization_busy", "GPU util over busy period (%)", "max", 100.0, "{:.1f}", header="busy util %",
           upper=1.0),
    Metric("total_utility", "total utility", "max", fmt="{:,.1f}", header="utility"),
    Metric("completed", "completed (jobs)", "max", fmt="{:,.0f}", header="done"),
    Metric("mean_queue_s", "mean queue (h)", "min", 1 / HOUR, header="queue h"),
    Metric("gpu_utilization", "GPU util over makespan (%)", "max", 100.0, "{:.1f}", header="span util %",
           upper=1.0),
    Metric("makespan_s", "makespan (h)", "min", 1 / HOUR, "{:,.1f}", header="span h"),
    Metric("energy_kwh", "energy (kWh)", "min", fmt="{:,.0f}", header="kWh"),
    Metric("jain_index", "Jain index", "max", fmt="{:.3f}", header="Jain", upper=1.0),
    Metric("worst_ftf_rho", "worst FTF rho", "min", header="worst rho", lower=1.0),  # rho >= 1
    Metric("preemptions", "preemptions", "min", fmt="{:,.0f}", header="preempt"),
)

# The metrics a sweep plots against load.
SWEEP_METRICS: tuple[Metric, ...] = (
    Metric("mean_jct_s", "mean JCT (h)", "min", 1 / HOUR, header="mean JCT h"),
    Metric("p99_jct_s", "p99 JCT (h)", "min", 1 / HOUR, header="p99 JCT h"),
    Metric("total_utility", "total utility", "max", fmt="{:,.1f}", header="utility"),
    Metric("gpu_utilization_busy", "GPU utilisation over busy period (%)", "max", 100.0, "{:.1f}",
           header="busy util %", upper=1.0),
    Metric("gpu_utilization", "GPU utilisation over makespan (%)", "max", 100.0, "{:.1f}", header="span util %",
           upper=1.0),
    Metric("energy_kwh", "energy (kWh)", "min", fmt="{:,.0f}", header="kWh"),
    Metric("jain_index", "Jain index", "max", fmt="{:.3f}", header="Jain", upper=1.0),
    Metric("worst_ftf_rho", "worst FTF rho", "min", header="worst rho", lower=1.0),  # rho >= 1
    Metric("makespan_s", "makespan (h)", "min", 1 / HOUR, "{:,.1f}", header="span h"),
)
METRICS_BY_KEY = {m.key: m for m in TABLE_METRICS + SWEEP_METRICS}

# Values within this share of the best are tied with it. The simulator is deterministic, so the
# noise of one run is what a different but equally likely workload would change: on the demo
# workload, seeds 0..4 move a policy's mean JCT by several per cent, so 1% is conservative.
TIE_SHARE = 0.01


def _num(v) -> float:
    try:
        return float("nan") if v is None else float(v)
    except (TypeError, ValueError):
        return float("nan")


def best_rows(values: Sequence, better: str | None, metric: Metric | None = None,
              tie_share: float = TIE_SHARE) -> set[int]:
    """Indices holding the best value: every value within ``tie_share`` of the best (ties),
    and none at all when every value ties (nothing differs beyond noise). None/NaN never win.
    With ``metric``, values are compared as displayed (rounded)."""
    if better is None:
        return set()
    if metric is not None:
        values = [_num(metric.show(v).replace(",", "").rstrip("%")) if metric.show(v) != "-" else None
                  for v in values]
    arr = np.array([_num(v) for v in values], dtype=float)
    finite = np.isfinite(arr)
    if finite.sum() < 2:
        return set()
    best = np.nanmin(arr) if better == "min" else np.nanmax(arr)
    tol = max(tie_share * abs(best), 1e-9)
    tied = {i for i, v in enumerate(arr) if finite[i] and abs(v - best) <= tol}
    return set() if len(tied) == int(finite.sum()) else tied


def paired_jct_ties(jobs: pd.DataFrame, policies: Sequence[str], best: str, z: float = 2.0) -> set[str]:
    """The policies whose mean JCT is within the run's noise of ``best``'s: the mean of the
    per-job differences (the same job under both, completed under both) lies within ``z``
    standard errors of 0. One run of a deterministic simulator has no other noise than which
    jobs happened to arrive; the paired standard error measures exactly that."""
    jct = jobs.pivot_table(index="job_id", columns="policy", values="jct_s", aggfunc="first")
    tied = {best}
    for p in policies:
        if p == best or p not in jct or best not in jct:
            continue
        d = (jct[p] - jct[best]).dropna().to_numpy(float)
        if d.size < 2:
            continue
        se = float(d.std(ddof=1)) / np.sqrt(d.size)
        if abs(float(d.mean())) <= z * se:
            tied.add(p)
    return tied


def best_marks(summary: pd.DataFrame, metrics: Sequence[Metric], jobs: pd.DataFrame | None = None) -> dict:
    """metric key -> the rows marked best. Mean JCT, when the per-job table is given: the best
    and every policy within the paired noise of it (``paired_jct_ties``); other metrics (and
    mean JCT without jobs): within TIE_SHARE of the best (``best_rows``). Nothing is marked
    where every policy ties."""
    rows = summary.reset_index(drop=True)
    marks = {m.key: best_rows(rows[m.key].tolist(), m.better, m) for m in metrics if m.key in rows}
    if jobs is not None and "mean_jct_s" in marks and len(rows) > 1 and rows["mean_jct_s"].notna().any():
        names = [str(p) for p in rows["policy"]]
        best = names[int(pd.to_numeric(rows["mean_jct_s"]).idxmin())]
        tied = paired_jct_ties(jobs, names, best)
        marks["mean_jct_s"] = set() if len(tied) == len(names) else {i for i, n in enumerate(names) if n in tied}
    return marks


def headline(summary: pd.DataFrame, key: str = "mean_jct_s", jobs: pd.DataFrame | None = None) -> str:
    """One sentence: who wins on ``key`` and by how much against the worst, or that they tie.
    With the per-job table, mean JCT ties are the table's (``paired_jct_ties``): the sentence
    names the policies within the run's noise of the best, or says that all of them are."""
    m = METRICS_BY_KEY[key]
    if summary.empty or key not in summary:
        return "No policy finished."
    vals = pd.to_numeric(summary[key], errors="coerce")
    ok = summary[vals.notna()]
    vals = vals[vals.notna()]
    if len(vals) < 2:
        return f"Only {ok['policy'].iloc[0] if len(ok) else 'no policy'} finished."
    lo, hi = vals.idxmin(), vals.idxmax()
    best, worst = (lo, hi) if m.better == "min" else (hi, lo)
    b, w = float(vals[best]), float(vals[worst])
    name = m.label.split(" (")[0]
    unit = m.label.partition("(")[2].rstrip(")")
    if abs(w - b) <= TIE_SHARE * max(abs(b), 1e-12):
        return (f"All {len(vals)} policies have the same {name} within {TIE_SHARE:.0%} ({m.show(b)} {unit}): "
                "scheduling makes no difference on this workload.")
    names = [str(p) for p in ok["policy"]]
    tied = (paired_jct_ties(jobs, names, str(summary.loc[best, "policy"]))
            if jobs is not None and key == "mean_jct_s" else set())
    if len(tied) == len(names):
        return (f"All {len(vals)} policies have the same {name} within the run's noise (the mean per-job "
                f"difference within 2 standard errors), from {m.show(b)} {unit} ({summary.loc[best, 'policy']}) "
                f"to {m.show(w)} {unit} ({summary.loc[worst, 'policy']}).")
    others = [n for n in names if n in tied and n != str(summary.loc[best, "policy"])]
    also = f" ({', '.join(others)} within the run's noise of it)" if others else ""
    ratio = (w / b if m.better == "min" else b / w) if min(abs(b), abs(w)) > 0 else float("inf")
    return (f"{summary.loc[best, 'policy']} has the {'lowest' if m.better == 'min' else 'highest'} {name}, "
            f"{m.show(b)} {unit}{also}: {ratio:.2f}x {'lower' if m.better == 'min' else 'higher'} than "
            f"{summary.loc[worst, 'policy']} ({m.show(w)} {unit}), the worst of {len(vals)} policies.")


# Besides numpy and pandas, the packages whose version can change a result: the MILP solver of
# sia and the optimum (highspy), the compiled kernels (numba), scipy's intervals, the Parquet files.
RESULT_PACKAGES = ("scipy", "numba", "highspy", "pyarrow", "pydantic")


def versions() -> dict[str, str]:
    """The versions a run's outputs record (run.json, report headers)."""
    from importlib import metadata

    import matplotlib
    import numpy

    from ringsched.version import __version__

    out = {"ringsched": __version__, "python": platform.python_version(),
           "numpy": numpy.__version__, "pandas": pd.__version__, "matplotlib": matplotlib.__version__}
    for dist in RESULT_PACKAGES:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def t_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of a Student-t confidence interval of the mean; n < 2: low = high = mean."""
    from scipy import stats

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(x.mean())
    if n < 2:
        return m, m, m, n
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / np.sqrt(n))
    return m, m - half, m + half, n


def aggregate_sweep(cells: pd.DataFrame, metrics: Sequence[Metric] = SWEEP_METRICS,
                    confidence: float = 0.95) -> pd.DataFrame:
    """One row per (cluster, load, policy, metric): n seeds, mean, std, t-interval low/high
    (clipped to the metric's possible range: a JCT interval never goes below 0)."""
    rows = []
    keys = ["cluster", "load", "policy"]
    for (cl, load, pol), g in cells.groupby(keys, sort=False):
        for m in metrics:
            if m.key not in g:
                continue
            vals = pd.to_numeric(g[m.key], errors="coerce").to_numpy(float)
            mean, lo, hi, n = t_interval(vals, confidence)
            lo, hi = _clip(lo, m.lower, m.upper), _clip(hi, m.lower, m.upper)
            std = float(np.nanstd(vals, ddof=1)) if n > 1 else 0.0 if n == 1 else float("nan")
            rows.append({"cluster": cl, "load": float(load), "policy": pol, "metric": m.key, "n": n,
                         "mean": mean, "std": std, "ci_low": lo, "ci_high": hi, "confidence": confidence})
    return pd.DataFrame(rows, columns=["cluster", "load", "policy", "metric", "n", "mean", "std", "ci_low",
                                       "ci_high", "confidence"])


def _clip(v: float, lower: float | None, upper: float | None) -> float:
    if lower is not None and v < lower:
        return lower
    return upper if upper is not None and v > upper else v


def _difference_range(m: Metric) -> tuple[float | None, float | None]:
    """The possible range of a difference of two values of ``m`` (unbounded unless both ends are)."""
    if m.lower is None or m.upper is None:
        return None, None
    return m.lower - m.upper, m.upper - m.lower


def paired_differences(cells: pd.DataFrame, baseline: str, metrics: Sequence[Metric] = SWEEP_METRICS,
                       confidence: float = 0.95) -> pd.DataFrame:
    """Per (cluster, load, policy, metric): the mean over seeds of (policy - baseline) on the same
    seed, and its Student-t interval. Pairing removes the seed-to-seed spread both share."""
    cols = ["cluster", "load", "policy", "baseline", "metric", "n", "mean_diff", "ci_low", "ci_high", "confidence"]
    if cells.empty or baseline not in set(cells["policy"]):
        return pd.DataFrame(columns=cols)
    rows = []
    for (cl, load), g in cells.groupby(["cluster", "load"], sort=False):
        base = g[g["policy"] == baseline].set_index("seed")
        for pol, gp in g[g["policy"] != baseline].groupby("policy", sort=False):
            gp = gp.set_index("seed")
            seeds = gp.index.intersection(base.index)
            for m in metrics:
                if m.key not in gp:
                    continue
                d = (pd.to_numeric(gp.loc[seeds, m.key], errors="coerce")
                     - pd.to_numeric(base.loc[seeds, m.key], errors="coerce")).to_numpy(float)
                mean, lo, hi, n = t_interval(d, confidence)
                bounds = _difference_range(m)
                lo, hi = _clip(lo, *bounds), _clip(hi, *bounds)
                rows.append(dict(zip(cols, (cl, float(load), pol, baseline, m.key, n, mean, lo, hi, confidence))))
    return pd.DataFrame(rows, columns=cols)
