"""The suite's terminal report: per-workload ratios, geometric means, worst cases, paired CIs."""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from ringsched.reports.terminal import text_table


def _f(x, fmt="{:.3f}") -> str:
    return "-" if x is None or pd.isna(x) else fmt.format(x)


def print_report(tables: dict[str, pd.DataFrame], target: str, console: Console) -> None:
    r, w = tables["ratios"], tables["workloads"].set_index("workload")
    for est, rr in r.groupby("estimates", sort=False):
        rows = [(row.workload, _f(w.loc[row.workload, "offered_load"], "{:.2f}"), _f(row.total_utility_ratio),
                 row.total_utility_best, _f(row.mean_jct_s_ratio), row.mean_jct_s_best, _f(row.p99_jct_s_ratio),
                 row.p99_jct_s_best) for row in rr.itertuples()]
        console.print(text_table(f"{target} / best baseline, estimates {est} (means over seeds)",
                                 ("workload", "load", "utility", "best", "mean JCT", "best", "p99 JCT", "best"), rows,
                                 console.width, more_in="ratios.parquet"))
    o, p = tables["overall"], tables["paired"]
    if len(o):  # (two tables, as on the HTML page: one would not fit 100 columns)
        rows = [(a.estimates, a.metric, _f(a.geomean_ratio), _f(a.worst_ratio), a.worst_workload)
                for a in o.itertuples()]
        console.print(text_table("geometric means and worst cases of the ratios over workloads",
                                 ("estimates", "metric", "geomean", "worst", "worst workload"), rows, console.width,
                                 more_in="overall.parquet"))
        rows = [(b.estimates, b.metric, _f(b.mean_rel_diff, "{:+.3f}"),
                 f"[{_f(b.ci_low, '{:+.3f}')}, {_f(b.ci_high, '{:+.3f}')}]", _f(b.p_signed_rank, "{:.2g}"))
                for b in p.itertuples()]
        console.print(text_table("paired per-seed relative differences to the best baseline (95% CI)",
                                 ("estimates", "metric", "paired mean", "CI", "signed-rank p"), rows, console.width,
                                 more_in="paired.parquet"))


def print_objective(tables: dict[str, pd.DataFrame], target: str, console: Console) -> None:
    """The objective's metrics (``--objective``): per workload, then geometric means."""
    t, o = tables.get("objective"), tables.get("objective_overall")
    if t is None or not len(t):
        return
    rows = [(r.workload, r.estimates, f"{r.metric} ({r.better})", _f(r.target), _f(r.target_jct), _f(r.baseline),
             r.best_baseline, _f(r.ratio_to_jct), _f(r.ratio_to_baseline)) for r in t.itertuples()]
    console.print(text_table(f"objective {t['objective'].iloc[0]}: {target}, {target} deciding as jct, best baseline "
                             "(means over seeds)", ("workload", "estimates", "metric", target, "as jct",
                                                    "best baseline", "", "/ jct", "/ baseline"), rows,
                             console.width, more_in="objective.parquet"))
    rows = [(r.estimates, f"{r.metric} ({r.better})", _f(r.target), _f(r.target_jct), _f(r.baseline),
             _f(r.ratio_to_jct), _f(r.ratio_to_baseline), f"{r.better_than_jct}/{r.workloads}",
             f"{r.better_than_baseline}/{r.workloads}", _f(r.paired_rel_diff, "{:+.4f}"),
             f"[{_f(r.ci_low, '{:+.4f}')}, {_f(r.ci_high, '{:+.4f}')}] ({r.level:.0%})", _f(r.p_signed_rank, "{:.2g}"))
            for r in o.itertuples()]
    console.print(text_table("the objective's metrics: geometric means over workloads",
                             ("estimates", "metric", target, "as jct", "best baseline", "/ jct", "/ baseline",
                              "better than jct", "better than baseline", "paired / baseline - 1", "CI",
                              "signed-rank p"), rows, console.width, more_in="objective_overall.parquet"))
