"""Self-contained HTML report of ``ringsched compare`` (docs/reports.md).

A report is one file: plots are inline SVG (``plots.py``), text is the browser's own sans-serif
font, there is no script, and a Content-Security-Policy forbids loading anything, so the file
opens offline and makes no network request. Every plot sits in ``<figure class="plot"
id="plot-...">`` so a browser test can find it.
"""

from __future__ import annotations

import html
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ringsched.reports.metrics import HOUR, TABLE_METRICS, TIE_SHARE, best_marks, headline, versions
from ringsched.reports import plots

def _change_steps(ch: pd.DataFrame, shown: int = 4) -> str:
    """A job's placement changes in a few words: the first ``shown``, then how many more."""
    steps = []
    for t, p in zip(ch["t_s"].to_numpy(float), ch["placement"].fillna("").astype(str)):
        if p.strip():
            n, servers = plots._servers(p)
            steps.append(f"{t / HOUR:.2f} h: {n} on {plots._fmt_servers(servers, 3)}")
        else:
            steps.append(f"{t / HOUR:.2f} h: stop")
    more = len(steps) - shown
    return "; ".join(steps[:shown]) + (f"; ... {more} more" if more > 0 else "")


def job_sample_table(jobs_p: pd.DataFrame, changes_p: pd.DataFrame, ids: list[str]) -> str:
    info = jobs_p.set_index("job_id")
    rows = []
    for j in ids:
        ch = changes_p[changes_p["job_id"] == j].sort_values("t_s", kind="stable")
        r = info.loc[j]
        jct = r["jct_s"]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            j, r["model"], int(r["requested_gpus"]), f"{float(r['arrival_s']) / HOUR:.2f}",
            "-" if pd.isna(jct) else f"{float(jct) / HOUR:.2f}", r["status"], len(ch), _change_steps(ch))) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("job", "model", "requested GPUs", "arrival (h)", "JCT (h)", "status",
                                               "changes", "first changes: time, workers on servers"))
    return (f'<table class="data job-sample" id="job-sample-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


# ------------------------------------------------------------------------------ HTML
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:1.5em auto;
max-width:1180px;padding:0 1em;color:#222;background:#fff}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;font-size:.92em}
dl.meta dt{font-weight:600} dl.meta dd{margin:0}
table.data{border-collapse:collapse;font-size:.85em;margin:.5em 0}
table.data th,table.data td{border:1px solid #ddd;padding:.25em .5em;text-align:right}
table.data th{background:#f4f4f4} table.data td:first-child,table.data th:first-child{text-align:left}
table.job-sample td{text-align:left;vertical-align:top} table.job-sample td:nth-child(-n+2){white-space:nowrap}
td.best{font-weight:700;background:#e6f4ea}
div.scroll{overflow-x:auto} table.nowrap td{white-space:nowrap}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:1em}
figure.plot{margin:0;border:1px solid #e3e3e3;border-radius:4px;padding:.5em;background:#fff}
figure.plot.wide{grid-column:1/-1}
figure.plot svg{width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#444;margin-top:.3em}
.note{background:#fff7e0;border:1px solid #f0d890;padding:.5em .8em;border-radius:4px}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def _meta_list(items: Iterable[tuple[str, object]]) -> str:
    return '<dl class="meta">' + "".join(
        f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in items) + "</dl>"


def _figure_html(plot_id: str, svg: str, caption: str, wide: bool = False) -> str:
    cls = "plot wide" if wide else "plot"
    return (f'<figure class="{cls}" id="{plot_id}" data-plot="{plot_id.removeprefix("plot-")}">{svg}'
            f"<figcaption>{caption}</figcaption></figure>")


def summary_table_html(summary: pd.DataFrame, jobs: pd.DataFrame | None = None,
                       table_id: str = "summary-table") -> str:
    metrics = [m for m in TABLE_METRICS if m.key in summary]
    head = "<th>policy</th>" + "".join(f"<th>{html.escape(m.label)}</th>" for m in metrics)
    best = best_marks(summary, metrics, jobs)
    rows = []
    for i, (_, r) in enumerate(summary.iterrows()):
        cells = [f"<td>{html.escape(str(r['policy']))}</td>"]
        for m in metrics:
            v = r.get(m.key)
            v = None if v is None or (isinstance(v, float) and np.isnan(v)) else v
            cls = ' class="best"' if i in best[m.key] else ""
            cells.append(f"<td{cls}>{m.show(v)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="data summary" id="{table_id}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


# The plots of a compare report: id -> caption (a browser test finds each id).
COMPARE_PLOTS = ("plot-jct-cdf", "plot-gpu-util", "plot-queue", "plot-utility", "plot-jct", "plot-energy",
                 "plot-fairness", "plot-job-timeline")


def timeline_policy(placements: pd.DataFrame, policies: Sequence[str]) -> str | None:
    """The policy whose job timeline is shown when the caller names none: the one with the most
    placement changes per job (the most to see), ties to the first."""
    if not policies:
        return None
    counts = placements.groupby("policy").size() if len(placements) else pd.Series(dtype=float)
    return max(policies, key=lambda p: (float(counts.get(p, 0)), -policies.index(p)))


def _header(meta: dict, policies: list[str]) -> str:
    vers = meta.get("versions") or versions()
    items = [("workload", meta.get("workload") or meta.get("trace", "")),
             ("cluster", meta.get("cluster_description") or meta.get("cluster", "")),
             ("objective", meta.get("objective", "")), ("jobs", meta.get("jobs", "")),
             ("policies", ", ".join(meta.get("policies", policies))), ("simulator", meta.get("simulator", "")),
             ("versions", ", ".join(f"{k} {v}" for k, v in vers.items()))]
    if meta.get("wall_s") is not None:
        items.append(("wall time", f"{meta['wall_s']:.1f} s with {meta.get('workers', '?')} worker processes"))
    title = f"ringsched compare: {meta.get('workload') or meta.get('trace', '')}"
    return f'<header id="report-header"><h1>{html.escape(title)}</h1>{_meta_list(items)}</header>'


def _time_figures(summary, jobs, timeline, policies, colors) -> list[str]:
    s_idx = summary.set_index("policy")
    total_gpus = {p: float(s_idx.loc[p, "total_gpus"]) for p in policies}
    t_end = {p: float(s_idx.loc[p, "simulated_s"]) for p in policies} if "simulated_s" in s_idx else {}
    start, busy, last = plots.busy_window(jobs, summary)
    tail = (f" Shown over the busy period, {start / HOUR:,.1f} to {busy / HOUR:,.1f} h, when 99% of the jobs had "
            f"finished under every policy (the period of the table's busy utilisation); the last job finished at "
            f"{last / HOUR:,.1f} h.")
    util = plots._timeline_plot(
        timeline, policies, colors,
        lambda tl: tl["busy_gpus"].to_numpy(float) / total_gpus[str(tl["policy"].iloc[0])] * 100.0,
        "GPUs busy (%)", "plot-gpu-util", t_end, (start, busy))
    queue = plots._timeline_plot(timeline, policies, colors, lambda tl: tl["waiting"].to_numpy(float),
                                 "jobs waiting (queue length)", "plot-queue", t_end, (start, busy))
    return [_figure_html("plot-gpu-util", util, "GPU utilisation over time: busy GPUs / cluster GPUs "
                         "(time-weighted averages when there are many decisions)." + tail),
            _figure_html("plot-queue", queue, "Queue length over time: admitted jobs holding no GPU." + tail)]


def _summary_figures(summary, policies, colors) -> list[str]:
    return [
        _figure_html("plot-utility", plots.plot_utility(summary, policies, colors),
                     "Total utility: sum of every job's utility of its JCT (unfinished jobs count 0)."),
        _figure_html("plot-jct", plots.plot_jct_bars(summary, policies, colors), "Mean and p99 JCT per policy."),
        _figure_html("plot-energy", plots.plot_energy(summary, policies, colors),
                     "Energy: busy GPUs, idle GPUs on powered servers and powered servers."),
        _figure_html("plot-fairness", plots.plot_fairness(summary, policies, colors),
                     "Fairness: Jain's index of jobs' speed (isolated time / JCT) and the worst finish-time "
                     "fairness rho = JCT / isolated time."),
    ]


def _job_story(jobs, placements, summary, tl_policy: str, seed: int) -> tuple[str, str]:
    """The job-timeline figure and the sampled-jobs section for ``tl_policy``."""
    s_idx = summary.set_index("policy")
    jobs_p = jobs[jobs["policy"] == tl_policy]
    ch_p = placements[placements["policy"] == tl_policy]
    ids = plots.sample_jobs(ch_p, jobs_p, k=12, seed=seed)
    end_s = float(s_idx.loc[tl_policy, "simulated_s"]) if "simulated_s" in s_idx else (
        float(ch_p["t_s"].max()) if len(ch_p) else 0.0)
    fig = _figure_html(
        "plot-job-timeline", plots.plot_job_timeline(jobs_p, ch_p, ids, end_s, tl_policy),
        f"Timeline of a sample of {len(ids)} jobs under {html.escape(tl_policy)}: each bar is a stretch at one "
        "placement, coloured by worker count and labelled with the servers it used.", wide=True)
    section = (f'<section id="job-sample" data-policy="{html.escape(tl_policy)}"><h2>Sampled jobs under '
               f"{html.escape(tl_policy)}</h2>{job_sample_table(jobs_p, ch_p, ids)}</section>")
    return fig, section


def render_compare(summary: pd.DataFrame, jobs: pd.DataFrame, timeline: pd.DataFrame, placements: pd.DataFrame,
                   meta: dict) -> str:
    """The compare report. ``summary`` has one row per finished policy (in display order);
    ``jobs``, ``timeline`` and ``placements`` hold every finished policy's rows with a
    ``policy`` column; ``meta`` names the workload, cluster, objective, ... (docs/reports.md);
    ``meta["story_policy"]`` the policy whose job timeline is drawn."""
    policies = [str(p) for p in summary["policy"]] if len(summary) else []
    colors = plots._colors(policies)
    title = f"ringsched compare: {meta.get('workload') or meta.get('trace', '')}"
    parts = [_header(meta, policies)]
    unfinished = meta.get("unfinished") or []
    if unfinished:
        parts.append(f'<p class="note" id="unfinished">Interrupted: only the finished policies are reported. '
                     f'Not finished: {html.escape(", ".join(unfinished))}.</p>')
    if not policies:
        parts.append('<p class="note">No policy finished: nothing to plot.</p>')
        return _page(title, "\n".join(parts))
    parts.append(f'<p id="headline"><strong>{html.escape(headline(summary, jobs=jobs))}</strong></p>')
    parts.append('<section id="summary"><h2>Summary</h2>' + summary_table_html(summary, jobs) +
                 '<p class="caption">Best value per column highlighted where it is better beyond the run\'s noise: '
                 'mean JCT, where the mean per-job difference (the same jobs under both policies) exceeds 2 '
                 f'standard errors; other columns, by more than {TIE_SHARE:.0%}. No mark where every policy ties. '
                 'Definitions in docs/metrics.md.</p></section>')
    tl_policy = meta.get("story_policy") if meta.get("story_policy") in policies else timeline_policy(
        placements, policies)
    story_fig, story_section = _job_story(jobs, placements, summary, tl_policy, int(meta.get("seed", 0) or 0))
    figs = ([_figure_html("plot-jct-cdf", plots.plot_jct_cdf(jobs, policies, colors),
                          "JCT CDF per policy: fraction of completed jobs done within a time.")]
            + _time_figures(summary, jobs, timeline, policies, colors) + _summary_figures(summary, policies, colors)
            + [story_fig])
    parts.append('<section id="plots"><h2>Plots</h2><div class="plots">' + "".join(figs) + "</div></section>")
    parts.append(story_section)
    return _page(title, "\n".join(parts))
