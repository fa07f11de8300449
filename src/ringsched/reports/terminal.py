"""Terminal tables that fit: columns in the catalogue's order until the width is used up
(100 columns when stdout is not a terminal), short headers with units that are never cut, and
user strings (trace specs, policy names) shown as plain text, never read as rich markup."""

from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ringsched.reports.metrics import (METRICS_BY_KEY, SWEEP_METRICS, TABLE_METRICS, TIE_SHARE, Metric,
                                       best_marks)

PIPE_WIDTH = 100  # the width of a table written to a pipe or a file


def stdout_console() -> Console:
    """The console for tables on stdout: the terminal's width, or PIPE_WIDTH when piped."""
    console = Console(emoji=False, highlight=False)
    return console if console.is_terminal else Console(width=PIPE_WIDTH, emoji=False, highlight=False)


def _natural_width(table: Table) -> int:
    return Console(width=10_000).measure(table).maximum


def fit_to_width(build: Callable[[int], Table], n_max: int, width: int) -> Table:
    """The table ``build(n)`` with the most leading metric columns (n <= n_max) whose natural
    width fits in ``width``, so rich never squeezes or cuts a header."""
    n = n_max
    while n > 0 and _natural_width(build(n)) > width:
        n -= 1
    return build(n)


def _table(title: str, caption: str) -> Table:
    return Table(title=Text(title), caption=Text(caption) if caption else None, box=box.SIMPLE_HEAD,
                 header_style="bold", title_justify="left", caption_justify="left", pad_edge=False)


def _more(left: int, where: str) -> str:
    return f"{left} more column{'s' if left > 1 else ''} in {where}" if left else ""


def text_table(title: str, heads: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, more_in: str,
               caption: str = "") -> Table:
    """Rows of ready-made strings under short headers: the first column and as many of the next as
    fit in ``width``, none squeezed or cut; the caption says how many more are in ``more_in``."""
    def build(n: int) -> Table:
        table = _table(title, "; ".join(c for c in (caption, _more(len(heads) - 1 - n, more_in)) if c))
        for h in heads[:n + 1]:
            table.add_column(Text(h), no_wrap=True)
        for r in rows:
            table.add_row(*(Text(str(c)) for c in r[:n + 1]))
        return table

    return fit_to_width(build, len(heads) - 1, width)


def compare_table(summary: pd.DataFrame, title: str, width: int, jobs: pd.DataFrame | None = None) -> Table:
    """One row per policy, the catalogue's metrics that fit in ``width``; the best value per
    column (beyond noise: ``metrics.best_marks``, paired per job for mean JCT when ``jobs`` is
    given) bold with ``*``."""
    metrics = [m for m in TABLE_METRICS if m.key in summary]
    rows = summary.to_dict("records")
    best = best_marks(summary, metrics, jobs)
    cells = {m.key: [m.show(r.get(m.key)) + ("*" if i in best[m.key] else "") for i, r in enumerate(rows)]
             for m in metrics}

    def build(n: int) -> Table:
        left = len(metrics) - n
        caption = (f"* best beyond noise: mean JCT paired per job (2 s.e.), others {TIE_SHARE:.0%}"
                   if jobs is not None else f"* best, beyond {TIE_SHARE:.0%} of the others") + "; none when all tie"
        if left:
            caption += "; " + _more(left, "summary.csv")
        table = _table(title, caption)
        table.add_column("policy", no_wrap=True)
        for m in metrics[:n]:
            table.add_column(m.head, justify="right", no_wrap=True)
        for i, r in enumerate(rows):
            marked = (Text(cells[m.key][i], style="bold green" if i in best[m.key] else "") for m in metrics[:n])
            table.add_row(Text(str(r["policy"])), *marked)
        return table

    return fit_to_width(build, len(metrics), width)


def _interval_text(m: Metric, mean: float, lo: float, hi: float, n: int) -> str:
    """``mean [low, high]``: the interval as clipped to possible values (a ``±`` would show a
    JCT band below 0 where the clipped interval is lopsided)."""
    return m.show(mean) if n < 2 else f"{m.show(mean)} [{m.show(lo)}, {m.show(hi)}]"


def _paired_cells(paired: pd.DataFrame | None, groups: list, baseline: str, key: str = "mean_jct_s") -> list[str]:
    """Per (cluster, load, policy): the mean per-seed difference against the baseline [interval]."""
    m = METRICS_BY_KEY[key]
    idx = paired[paired["metric"] == key].set_index(["cluster", "load", "policy"]) if paired is not None else None
    out = []
    for g in groups:
        if g[2] == baseline:
            out.append("baseline")
        elif idx is not None and g in idx.index:
            r = idx.loc[g]
            out.append(_interval_text(m, r["mean_diff"], r["ci_low"], r["ci_high"], int(r["n"])))
        else:
            out.append("-")
    return out


def sweep_table(agg: pd.DataFrame, title: str, width: int,
                keys: Sequence[str] = ("mean_jct_s", "p99_jct_s", "total_utility", "gpu_utilization",
                                       "energy_kwh"), paired: pd.DataFrame | None = None,
                baseline: str | None = None) -> Table:
    """One row per (cluster, load, policy): mean over seeds [interval], as many of ``keys`` as
    fit; with ``paired`` (paired.csv), after mean JCT the per-seed paired difference against
    ``baseline`` [interval], which seed-to-seed spread does not blur."""
    metrics = [m for m in SWEEP_METRICS if m.key in keys and m.key in set(agg["metric"])]
    idx = agg.set_index(["cluster", "load", "policy", "metric"])
    groups = list(agg.groupby(["cluster", "load", "policy"], sort=False).groups)
    cells = {m.key: [] for m in metrics}
    for g in groups:
        for m in metrics:
            r = idx.loc[(*g, m.key)] if (*g, m.key) in idx.index else None
            cells[m.key].append("-" if r is None else _interval_text(m, r["mean"], r["ci_low"], r["ci_high"],
                                                                     int(r["n"])))
    columns = [(m.head, cells[m.key]) for m in metrics]
    if baseline is not None and metrics and metrics[0].key == "mean_jct_s":
        columns.insert(1, (f"vs {baseline} h", _paired_cells(paired, groups, baseline)))
    lead = [("cluster", [str(g[0]) for g in groups]), ("load", [f"{g[1]:g}" for g in groups]),
            ("policy", [str(g[2]) for g in groups])]

    def build(n: int) -> Table:
        caption = "mean over seeds [interval]; every metric in sweep.csv"
        if baseline is not None:
            caption += f"; vs {baseline}: mean per-seed difference (policy - {baseline}) [interval], paired.csv"
        table = _table(title, caption)
        for h, _ in lead:
            table.add_column(Text(h), justify="right" if h == "load" else "left", no_wrap=True)
        for h, _ in columns[:n]:
            table.add_column(Text(h), justify="right", no_wrap=True)
        for i in range(len(groups)):
            table.add_row(*(Text(v[i]) for _, v in lead), *(Text(v[i]) for _, v in columns[:n]))
        return table

    return fit_to_width(build, len(columns), width)
