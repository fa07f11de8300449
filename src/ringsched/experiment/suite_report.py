"""The suite's terminal report: per-workload ratios, geometric means, worst cases, paired CIs."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table


def _f(x, fmt="{:.3f}") -> str:
    return "-" if x is None or pd.isna(x) else fmt.format(x)


def print_report(tables: dict[str, pd.DataFrame], target: str, console: Console) -> None:
    r, w = tables["ratios"], tables["workloads"].set_index("workload")
    for est, rr in r.groupby("estimates", sort=False):
        t = Table(title=f"{target} / best baseline, estimates {est} (means over seeds)")
        for c in ("workload", "load", "utility", "best", "mean JCT", "best", "p99 JCT", "best"):
            t.add_column(c)
        for row in rr.itertuples():
            t.add_row(row.workload, _f(w.loc[row.workload, "offered_load"], "{:.2f}"),
                      _f(row.total_utility_ratio), row.total_utility_best, _f(row.mean_jct_s_ratio),
                      row.mean_jct_s_best, _f(row.p99_jct_s_ratio), row.p99_jct_s_best)
        console.print(t)
    o, p = tables["overall"], tables["paired"]
    if len(o):
        t = Table(title="geometric means, worst cases and paired per-seed differences (95% CI)")
        for c in ("estimates", "metric", "geomean", "worst", "worst workload", "paired mean", "CI", "signed-rank p"):
            t.add_column(c)
        for a, b in zip(o.itertuples(), p.itertuples()):
            t.add_row(a.estimates, a.metric, _f(a.geomean_ratio), _f(a.worst_ratio), a.worst_workload,
                      _f(b.mean_rel_diff, "{:+.3f}"), f"[{_f(b.ci_low, '{:+.3f}')}, {_f(b.ci_high, '{:+.3f}')}]",
                      _f(b.p_signed_rank, "{:.2g}"))
        console.print(t)


def print_objective(tables: dict[str, pd.DataFrame], target: str, console: Console) -> None:
    """The objective's metrics (``--objective``): per workload, then geometric means."""
    t, o = tables.get("objective"), tables.get("objective_overall")
    if t is None or not len(t):
        return
    tab = Table(title=f"objective {t['objective'].iloc[0]}: {target}, {target} deciding as jct, best baseline "
                      "(means over seeds)")
    for c in ("workload", "estimates", "metric", target, "as jct", "best baseline", "", "/ jct", "/ baseline"):
        tab.add_column(c)
    for r in t.itertuples():
        tab.add_row(r.workload, r.estimates, f"{r.metric} ({r.better})", _f(r.target), _f(r.target_jct),
                    _f(r.baseline), r.best_baseline, _f(r.ratio_to_jct), _f(r.ratio_to_baseline))
    console.print(tab)
    tab = Table(title="the objective's metrics: geometric means over workloads")
    for c in ("estimates", "metric", target, "as jct", "best baseline", "/ jct", "/ baseline", "better than jct",
              "better than baseline", "paired / baseline - 1", "CI", "signed-rank p"):
        tab.add_column(c)
    for r in o.itertuples():
        tab.add_row(r.estimates, f"{r.metric} ({r.better})", _f(r.target), _f(r.target_jct), _f(r.baseline),
                    _f(r.ratio_to_jct), _f(r.ratio_to_baseline), f"{r.better_than_jct}/{r.workloads}",
                    f"{r.better_than_baseline}/{r.workloads}", _f(r.paired_rel_diff, "{:+.4f}"),
                    f"[{_f(r.ci_low, '{:+.4f}')}, {_f(r.ci_high, '{:+.4f}')}] ({r.level:.0%})",
                    _f(r.p_signed_rank, "{:.2g}"))
    console.print(tab)
