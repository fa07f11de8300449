"""Self-contained HTML report of ``ringsched sweep`` (docs/reports.md): a table, per-seed
paired differences against a baseline, and one small-multiples plot per metric."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ringsched.reports.html import _figure_html, _meta_list, _page
from ringsched.reports.metrics import SWEEP_METRICS, Metric, versions
from ringsched.reports.plots import _colors, _no_data, _svg

def plot_sweep_metric(agg: pd.DataFrame, metric: Metric, clusters, policies, colors) -> str:
    """Small multiples: one row of panels per cluster, one panel per policy (so bands never
    merge into one area), the metric against load; every panel on one y scale, and the other
    policies' means drawn thin and grey behind, for reference."""
    plot_id = f"sweep-{metric.key.replace('_', '-')}"
    d = agg[agg["metric"] == metric.key]
    cols = max(1, min(len(policies), 5))
    rows_per_cluster = int(np.ceil(len(policies) / cols))
    from matplotlib.figure import Figure

    # the page's full width (11 in) whatever the number of panels, so text keeps one size
    fig = Figure(figsize=(11.0, 2.3 * rows_per_cluster * len(clusters) + 0.7), layout="constrained")
    axes = fig.subplots(rows_per_cluster * len(clusters), cols, squeeze=False, sharex=True, sharey=True)
    loads = sorted(set(d["load"].astype(float))) if len(d) else []
    for ci, cl in enumerate(clusters):
        dc = d[d["cluster"] == cl]
        for pi, p in enumerate(policies):
            ax = axes[ci * rows_per_cluster + pi // cols][pi % cols]
            for q in policies:  # the others, behind
                g = dc[dc["policy"] == q].sort_values("load")
                if q != p and len(g):
                    ax.plot(g["load"], g["mean"] * metric.scale, color="0.8", lw=0.8)
            g = dc[dc["policy"] == p].sort_values("load")
            if g.empty or not np.isfinite(g["mean"].to_numpy(float)).any():
                _no_data(ax)
                continue
            x = g["load"].to_numpy(float)
            ax.fill_between(x, g["ci_low"] * metric.scale, g["ci_high"] * metric.scale, color=colors[p],
                            alpha=0.25, lw=0)
            ax.plot(x, g["mean"] * metric.scale, marker="o", ms=3, color=colors[p], lw=1.4)
            ax.set_title(f"{p}" + (f" ({cl})" if len(clusters) > 1 else ""), fontsize=8)
            ax.grid(True, alpha=0.3)
    for ax in axes.flat:
        if len(loads) > 1 and loads[-1] / loads[0] >= 4:
            ax.set_xscale("log", base=2)
        if loads:
            ax.set_xticks(loads, [f"{x:g}" for x in loads], fontsize=7)
            ax.minorticks_off()
        ax.tick_params(labelsize=7)
    fig.supxlabel("load factor (arrival rate x)", fontsize=8)
    fig.supylabel(metric.label, fontsize=8)
    return _svg(fig, plot_id)


def _cell_text(m: Metric, mean: float, lo: float, hi: float, n: int) -> str:
    return m.show(mean) if n < 2 else f"{m.show(mean)} [{m.show(lo)}, {m.show(hi)}]"


def sweep_table_html(agg: pd.DataFrame, paired: pd.DataFrame, baseline: str, conf: float) -> str:
    """One row per (cluster, load, policy): each metric's mean [interval] and, against the
    baseline, the mean paired per-seed difference [interval]."""
    metrics = [m for m in SWEEP_METRICS if m.key in set(agg["metric"])]
    head = "".join(f"<th>{h}</th>" for h in ("cluster", "load", "policy")) + "".join(
        f"<th>{html.escape(m.label)}</th><th>vs {html.escape(baseline)}</th>" for m in metrics)
    a = agg.set_index(["cluster", "load", "policy", "metric"])
    pr = paired.set_index(["cluster", "load", "policy", "metric"]) if len(paired) else None
    rows = []
    for (cl, load, pol), _ in agg.groupby(["cluster", "load", "policy"], sort=False):
        cells = [html.escape(str(cl)), f"{load:g}", html.escape(str(pol))]
        for m in metrics:
            r = a.loc[(cl, load, pol, m.key)]
            cells.append(_cell_text(m, r["mean"], r["ci_low"], r["ci_high"], int(r["n"])))
            key = (cl, load, pol, m.key)
            if pr is not None and key in pr.index:
                d = pr.loc[key]
                cells.append(_cell_text(m, d["mean_diff"], d["ci_low"], d["ci_high"], int(d["n"])))
            else:
                cells.append("baseline" if pol == baseline else "-")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (f'<div class="scroll"><table class="data summary nowrap" id="sweep-table"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table></div><p class="caption">Mean over seeds [{conf:.0%} Student-t '
            f'interval]; "vs {html.escape(baseline)}": mean of the per-seed differences (policy - '
            f'{html.escape(baseline)} on the same seed) [its interval]. Intervals are clipped to possible '
            'values.</p>')


def render_sweep(cells: pd.DataFrame, agg: pd.DataFrame, meta: dict, paired: pd.DataFrame | None = None) -> str:
    """The sweep report: header, table with paired differences, one small-multiples plot per metric."""
    policies = list(dict.fromkeys(meta.get("policies") or cells.get("policy", pd.Series(dtype=str)).tolist()))
    clusters = list(dict.fromkeys(meta.get("clusters") or cells.get("cluster", pd.Series(dtype=str)).tolist()))
    colors = _colors(policies)
    vers = meta.get("versions") or versions()
    conf = float(meta.get("confidence", 0.95))
    baseline = meta.get("baseline") or (policies[0] if policies else "")
    title = f"ringsched sweep: {meta.get('workload') or meta.get('trace', '')}"
    items = [("workload", meta.get("workload") or meta.get("trace", "")), ("clusters", "; ".join(clusters)),
             ("loads", ", ".join(f"{x:g}" for x in meta.get("loads", []))),
             ("seeds", ", ".join(map(str, meta.get("seeds", [])))), ("objective", meta.get("objective", "")),
             ("policies", ", ".join(policies)), ("baseline", baseline), ("engine", meta.get("engine", "")),
             ("cells", f"{meta.get('cells_done', len(cells))} of {meta.get('cells_total', len(cells))} finished"),
             ("simulator", meta.get("simulator", "")),
             ("versions", ", ".join(f"{k} {v}" for k, v in vers.items()))]
    if meta.get("wall_s") is not None:
        items.append(("wall time", f"{meta['wall_s']:.1f} s"))
    parts = [f'<header id="report-header"><h1>{html.escape(title)}</h1>{_meta_list(items)}</header>',
             f'<p>Load factor L scales the arrival rate: every arrival time is divided by L. Lines are means over '
             f'seeds; shaded bands are {conf:.0%} Student-t confidence intervals of the mean (none with one seed).</p>']
    if meta.get("interrupted"):
        parts.append('<p class="note" id="unfinished">Interrupted: only finished cells are reported.</p>')
    if not len(cells):
        parts.append('<p class="note">No cell finished: nothing to plot.</p>')
        return _page(title, "\n".join(parts))
    paired = paired if paired is not None else pd.DataFrame(columns=["cluster", "load", "policy", "metric"])
    parts.append('<section id="table"><h2>Table</h2>' + sweep_table_html(agg, paired, baseline, conf) + "</section>")
    figs = []
    for m in SWEEP_METRICS:
        if m.key in set(agg["metric"]):
            pid = f"sweep-{m.key.replace('_', '-')}"
            figs.append(_figure_html(pid, plot_sweep_metric(agg, m, clusters, policies, colors),
                                     f"{html.escape(m.label)} against load: one panel per policy (grey: the "
                                     "others' means).", wide=True))
    parts.append('<section id="plots"><h2>Plots</h2><div class="plots">' + "".join(figs) + "</div></section>")
    return _page(title, "\n".join(parts))
