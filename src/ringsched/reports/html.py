"""Self-contained HTML reports of ``ringsched compare`` and ``ringsched sweep`` (docs/reports.md).

A report is one file: plots are inline SVG drawn by matplotlib's object-oriented API (no
pyplot, no global state), text is the browser's own sans-serif font, there is no script, and
a Content-Security-Policy forbids loading anything, so the file opens offline and makes no
network request. Every plot sits in ``<figure class="plot" id="plot-...">`` (sweep plots:
``id="sweep-<metric>"``) so a browser test can find it.
"""

from __future__ import annotations

import html
import io
import platform
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

HOUR = 3600.0


# ------------------------------------------------------------------------------ metrics
@dataclass(frozen=True)
class Metric:
    key: str  # column of the summary
    label: str  # short label with unit
    better: str | None  # "min", "max" or None (no best)
    scale: float = 1.0  # displayed value = value * scale
    fmt: str = "{:,.2f}"

    def show(self, v) -> str:
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            return "-"
        try:
            return self.fmt.format(float(v) * self.scale)
        except (TypeError, ValueError):
            return str(v)


# The columns of the terminal and HTML summary tables, in order.
TABLE_METRICS: tuple[Metric, ...] = (
    Metric("completed", "completed", "max", fmt="{:,.0f}"),
    Metric("mean_jct_s", "mean JCT (h)", "min", 1 / HOUR),
    Metric("p50_jct_s", "p50 JCT (h)", "min", 1 / HOUR),
    Metric("p99_jct_s", "p99 JCT (h)", "min", 1 / HOUR),
    Metric("makespan_s", "makespan (h)", "min", 1 / HOUR, "{:,.1f}"),
    Metric("total_utility", "total utility", "max", fmt="{:,.1f}"),
    Metric("gpu_utilization", "GPU util", "max", 100.0, "{:.1f}%"),
    Metric("energy_kwh", "energy (kWh)", "min", fmt="{:,.0f}"),
    Metric("worst_ftf_rho", "worst FTF rho", "min"),
    Metric("jain_index", "Jain index", "max", fmt="{:.3f}"),
    Metric("preemptions", "preemptions", "min", fmt="{:,.0f}"),
    Metric("wall_s", "wall (s)", None, fmt="{:,.1f}"),
)

# The metrics a sweep plots against load.
SWEEP_METRICS: tuple[Metric, ...] = (
    Metric("mean_jct_s", "mean JCT (h)", "min", 1 / HOUR),
    Metric("p99_jct_s", "p99 JCT (h)", "min", 1 / HOUR),
    Metric("total_utility", "total utility", "max", fmt="{:,.1f}"),
    Metric("gpu_utilization", "GPU utilisation (%)", "max", 100.0, "{:.1f}%"),
    Metric("energy_kwh", "energy (kWh)", "min", fmt="{:,.0f}"),
    Metric("jain_index", "Jain index", "max", fmt="{:.3f}"),
    Metric("worst_ftf_rho", "worst FTF rho", "min"),
    Metric("makespan_s", "makespan (h)", "min", 1 / HOUR, "{:,.1f}"),
)


def _num(v) -> float:
    try:
        return float("nan") if v is None else float(v)
    except (TypeError, ValueError):
        return float("nan")


def best_rows(values: Sequence, better: str | None, metric: Metric | None = None) -> set[int]:
    """Indices holding the best value (ties: all of them); None/NaN never win. With ``metric``,
    values are compared as displayed (rounded), so equal-looking cells are marked alike."""
    if better is None:
        return set()
    if metric is not None:
        values = [_num(metric.show(v).replace(",", "").rstrip("%")) if metric.show(v) != "-" else None
                  for v in values]
    arr = np.array([_num(v) for v in values], dtype=float)
    if not np.isfinite(arr).any():
        return set()
    best = np.nanmin(arr) if better == "min" else np.nanmax(arr)
    tol = 1e-9 * max(1.0, abs(best))
    return {i for i, v in enumerate(arr) if np.isfinite(v) and abs(v - best) <= tol}


def versions() -> dict[str, str]:
    import matplotlib
    import numpy

    import ringsched

    return {"ringsched": ringsched.__version__, "python": platform.python_version(),
            "numpy": numpy.__version__, "pandas": pd.__version__, "matplotlib": matplotlib.__version__}


# ------------------------------------------------------------------------------ plotting
def _figure(width_in: float = 7.0, height_in: float = 3.6, ncols: int = 1, *, constrained: bool = False,
            bottom: float = 0.15):
    """A figure with ``ncols`` axes. Fixed margins by default (constrained layout draws every
    figure twice, which doubles the report's rendering time); ``constrained`` where labels vary."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), layout="constrained" if constrained else None)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    if not constrained:
        fig.subplots_adjust(left=0.6 / width_in + 0.03, right=0.98, bottom=bottom, top=0.9,
                            wspace=0.32 if ncols > 1 else 0.2)
    return fig, axes


def warm_up() -> None:
    """Import matplotlib and load its fonts by drawing a throw-away figure: call it in a
    background thread while the simulations run, and the report renders ~1 s sooner."""
    fig, (ax,) = _figure(2, 1)
    ax.plot([0, 1], [0, 1], label="x")
    ax.set_xscale("log")
    ax.legend()
    _svg(fig, "warm-up")


def _svg(fig, plot_id: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog; ids salted per plot)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": plot_id}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    # matplotlib names its elements figure_1, axes_1, ... in every figure: make them unique
    text = re.sub(r'id="([A-Za-z][\w.]*_\d+)"', lambda m: f'id="{plot_id}-{m.group(1)}"', text)
    return text


def _colors(names: Sequence[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def _no_data(ax, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _step_average(t: np.ndarray, y: np.ndarray, t_end: float, bins: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted average of the step function y(t) (held until the next t) in ``bins``
    equal bins over [t0, t_end]; returns (bin centres, averages). Few points: exact steps."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.size == 0:
        return t, y
    t_end = max(float(t_end), float(t[-1]))
    if t.size <= bins:
        return np.append(t, t_end), np.append(y, y[-1])
    edges = np.linspace(t[0], t_end, bins + 1)
    seg = np.diff(np.append(t, t_end))
    area = np.concatenate([[0.0], np.cumsum(seg * y)])  # integral up to each t (and t_end)
    knots = np.append(t, t_end)
    cum = np.interp(edges, knots, area)
    width = np.diff(edges)
    avg = np.divide(np.diff(cum), width, out=np.zeros_like(width), where=width > 0)
    return 0.5 * (edges[:-1] + edges[1:]), avg


def _ecdf(x: np.ndarray, points: int = 300) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    if n <= points:
        return x, np.arange(1, n + 1) / n
    q = np.linspace(0.0, 1.0, points)
    return np.quantile(x, q), q


def plot_jct_cdf(jobs: pd.DataFrame, policies: Sequence[str], colors) -> str:
    fig, (ax,) = _figure()
    drawn = False
    for p in policies:
        jct = jobs.loc[(jobs["policy"] == p) & (jobs["status"] == "completed"), "jct_s"].to_numpy(float)
        jct = jct[np.isfinite(jct) & (jct > 0)]
        if jct.size:
            x, y = _ecdf(jct / HOUR)
            ax.plot(x, y, color=colors[p], label=p, lw=1.4, drawstyle="steps-post" if x.size < 300 else "default")
            drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.set_xlabel("job completion time (hours, log scale)")
        ax.set_ylabel("fraction of completed jobs")
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="lower right", fontsize=8, ncols=2)
    else:
        _no_data(ax, "no completed jobs")
    return _svg(fig, "plot-jct-cdf")


def _timeline_plot(timeline: pd.DataFrame, policies: Sequence[str], colors, value: Callable[[pd.DataFrame], np.ndarray],
                   ylabel: str, plot_id: str, t_end: dict[str, float]) -> str:
    fig, (ax,) = _figure()
    drawn = False
    for p in policies:
        tl = timeline[timeline["policy"] == p].sort_values("t_s", kind="stable")
        if tl.empty:
            continue
        x, y = _step_average(tl["t_s"].to_numpy(float), value(tl), t_end.get(p, float(tl["t_s"].max())))
        ax.step(x / HOUR, y, where="post", color=colors[p], label=p, lw=1.1, alpha=0.85)
        drawn = True
    if drawn:
        ax.set_xlabel("simulated time (hours)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8, ncols=2)
    else:
        _no_data(ax)
    return _svg(fig, plot_id)


def _bars(ax, policies: Sequence[str], values: Sequence, colors, ylabel: str, better: str | None,
          fmt: str = "{:,.1f}") -> None:
    vals = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    x = np.arange(len(policies))
    bars = ax.bar(x, np.nan_to_num(vals), color=[colors[p] for p in policies])
    best = best_rows(list(vals), better)
    many = len(policies) > 5
    for i, (b, v) in enumerate(zip(bars, vals)):
        label = "-" if not np.isfinite(v) else fmt.format(v)
        ax.annotate(label + (" *" if i in best else ""), (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=6.5 if many else 7, xytext=(0, 2), textcoords="offset points",
                    rotation=90 if many else 0, fontweight="bold" if i in best else "normal")
    ax.set_xticks(x, policies, rotation=30 if len(policies) > 4 else 0, ha="right" if len(policies) > 4 else "center")
    ax.set_ylabel(ylabel)
    ax.margins(y=0.35 if many else 0.15)
    ax.grid(True, axis="y", alpha=0.3)


def plot_utility(summary: pd.DataFrame, policies, colors) -> str:
    fig, (ax,) = _figure(height_in=3.4, bottom=0.26)
    s = summary.set_index("policy").reindex(policies)
    _bars(ax, policies, s["total_utility"].tolist(), colors, "total utility (sum over jobs)", "max")
    if "max_utility" in s and s["max_utility"].notna().any():
        top = float(s["max_utility"].max())
        ax.axhline(top, color="0.3", ls="--", lw=1)
        ax.annotate("maximum attainable", (1.0, top), xycoords=("axes fraction", "data"), ha="right", va="bottom",
                    fontsize=7, color="0.3", xytext=(-2, 2), textcoords="offset points")
        ax.set_ylim(top=max(ax.get_ylim()[1], top * 1.12))
    ax.set_title("total utility (* best)", fontsize=10)
    return _svg(fig, "plot-utility")


def plot_jct_bars(summary: pd.DataFrame, policies, colors) -> str:
    fig, axes = _figure(height_in=3.4, ncols=2, bottom=0.26)
    s = summary.set_index("policy").reindex(policies)
    for ax, key, title in ((axes[0], "mean_jct_s", "mean JCT"), (axes[1], "p99_jct_s", "p99 JCT")):
        _bars(ax, policies, (s[key] / HOUR).tolist(), colors, "hours", "min", "{:,.2f}")
        ax.set_title(f"{title} (* best)", fontsize=10)
    return _svg(fig, "plot-jct")


def plot_energy(summary: pd.DataFrame, policies, colors) -> str:
    fig, (ax,) = _figure(height_in=3.4, bottom=0.26)
    s = summary.set_index("policy").reindex(policies)
    _bars(ax, policies, s["energy_kwh"].tolist(), colors, "energy (kWh)", "min", "{:,.0f}")
    ax.set_title("energy (* best)", fontsize=10)
    return _svg(fig, "plot-energy")


def plot_fairness(summary: pd.DataFrame, policies, colors) -> str:
    fig, axes = _figure(height_in=3.4, ncols=2, bottom=0.26)
    s = summary.set_index("policy").reindex(policies)
    _bars(axes[0], policies, s["jain_index"].tolist(), colors, "Jain's index of speed (1 = even)", "max", "{:.3f}")
    axes[0].set_title("Jain's fairness index (* best)", fontsize=10)
    _bars(axes[1], policies, s["worst_ftf_rho"].tolist(), colors, "max JCT / isolated time", "min", "{:,.1f}")
    axes[1].set_title("worst finish-time fairness rho (* best)", fontsize=10)
    return _svg(fig, "plot-fairness")


def sample_jobs(changes: pd.DataFrame, jobs: pd.DataFrame, k: int = 12, seed: int = 0) -> list[str]:
    """Up to ``k`` jobs that ran: half the ones with the most placement changes (the elastic
    story), half a seeded random draw of the rest; ordered by arrival."""
    ran = changes.loc[changes["placement"].fillna("").str.len() > 0, "job_id"]
    if ran.empty:
        return []
    counts = changes[changes["job_id"].isin(set(ran))].groupby("job_id", sort=False).size()
    order = {jid: i for i, jid in enumerate(jobs["job_id"])}
    ranked = sorted(counts.index, key=lambda j: (-int(counts[j]), order.get(j, 0)))
    top = ranked[: (k + 1) // 2]
    rest = [j for j in ranked if j not in set(top)]
    rng = np.random.default_rng(seed)
    pick = list(rng.choice(len(rest), size=min(k - len(top), len(rest)), replace=False)) if rest else []
    chosen = top + [rest[i] for i in sorted(pick)]
    return sorted(chosen, key=lambda j: order.get(j, 0))


def _segments(ch: pd.DataFrame, end_s: float) -> list[tuple[float, float, str]]:
    """(start, end, placement) of every running stretch of one job's sorted placement log."""
    out = []
    rows = list(zip(ch["t_s"].to_numpy(float), ch["placement"].fillna("").astype(str)))
    for i, (t, p) in enumerate(rows):
        if p.strip():
            t1 = rows[i + 1][0] if i + 1 < len(rows) else end_s
            if t1 > t:
                out.append((t, t1, p))
    return out


def _servers(placement: str) -> tuple[int, list[int]]:
    idx = [int(s) for s in placement.split()]
    return len(idx), sorted(set(idx))


def _fmt_servers(servers: list[int], limit: int = 6) -> str:
    s = ",".join(map(str, servers[:limit]))
    return s + (f",+{len(servers) - limit}" if len(servers) > limit else "")


def plot_job_timeline(jobs_p: pd.DataFrame, changes_p: pd.DataFrame, ids: list[str], end_s: float,
                      policy: str) -> str:
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm
    from matplotlib import colormaps

    from matplotlib.figure import Figure

    width_in, height_in = 10.0, max(2.6, 1.2 + 0.36 * len(ids))
    fig = Figure(figsize=(width_in, height_in))
    ax = fig.add_axes((2.0 / width_in, 0.75 / height_in, 1 - 2.9 / width_in, 1 - 0.95 / height_in))
    cax = fig.add_axes((1 - 0.75 / width_in, 0.75 / height_in, 0.12 / width_in, 1 - 0.95 / height_in))
    if not ids:
        cax.remove()
        _no_data(ax, f"no job ran under {policy}")
        return _svg(fig, "plot-job-timeline")
    info = jobs_p.set_index("job_id")
    segs = {j: _segments(changes_p[changes_p["job_id"] == j].sort_values("t_s", kind="stable"), end_s) for j in ids}
    max_w = max([_servers(p)[0] for ss in segs.values() for (_, _, p) in ss] + [1])
    bounds = np.arange(0.5, max_w + 1.5)
    norm = BoundaryNorm(bounds, colormaps["viridis"].N)
    cmap = colormaps["viridis"]
    t_lo = min(float(info.loc[j, "arrival_s"]) for j in ids)
    t_hi = max([t1 for ss in segs.values() for (_, t1, _) in ss] + [t_lo + 1.0])
    span = (t_hi - t_lo) / HOUR
    for lane, j in enumerate(ids):
        y = len(ids) - 1 - lane
        arr = float(info.loc[j, "arrival_s"]) / HOUR
        ax.plot([arr], [y], marker="|", color="0.2", ms=10)
        for t0, t1, p in segs[j]:
            n, servers = _servers(p)
            x0, w = t0 / HOUR, (t1 - t0) / HOUR
            ax.broken_barh([(x0, w)], (y - 0.35, 0.7), facecolors=cmap(norm(n)), edgecolors="white", linewidth=0.5)
            if w > 0.07 * span:
                ax.text(x0 + w / 2, y, f"{n}w s{_fmt_servers(servers)}", ha="center", va="center", fontsize=6.5,
                        color="white" if n <= max_w * 0.6 else "black")
        fin = info.loc[j, "finish_s"]
        if pd.notna(fin):
            ax.plot([float(fin) / HOUR], [y], marker="o", color="0.2", ms=3)
    ax.set_yticks(range(len(ids)), [f"{j} ({info.loc[j, 'model']})" for j in reversed(ids)], fontsize=7)
    ax.set_xlabel(f"simulated time (hours)   | arrival   o finish   label: workers, servers   (policy {policy})")
    ax.set_xlim(t_lo / HOUR - 0.02 * span, t_hi / HOUR + 0.02 * span)
    ax.grid(True, axis="x", alpha=0.3)
    cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax,
                      ticks=np.arange(1, max_w + 1) if max_w <= 16 else None)
    cb.set_label("workers (GPUs)")
    return _svg(fig, "plot-job-timeline")


def job_sample_table(jobs_p: pd.DataFrame, changes_p: pd.DataFrame, ids: list[str]) -> str:
    info = jobs_p.set_index("job_id")
    rows = []
    for j in ids:
        ch = changes_p[changes_p["job_id"] == j].sort_values("t_s", kind="stable")
        steps = []
        for t, p in zip(ch["t_s"].to_numpy(float), ch["placement"].fillna("").astype(str)):
            if p.strip():
                n, servers = _servers(p)
                steps.append(f"{t / HOUR:.2f}h: {n} on {_fmt_servers(servers)}")
            else:
                steps.append(f"{t / HOUR:.2f}h: stop")
        r = info.loc[j]
        jct = r["jct_s"]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            j, r["model"], int(r["requested_gpus"]), f"{float(r['arrival_s']) / HOUR:.2f}",
            "-" if pd.isna(jct) else f"{float(jct) / HOUR:.2f}", r["status"], "; ".join(steps))) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("job", "model", "requested GPUs", "arrival (h)", "JCT (h)", "status",
                                               "placement changes: time, workers on servers"))
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


def summary_table_html(summary: pd.DataFrame, table_id: str = "summary-table") -> str:
    head = "<th>policy</th>" + "".join(f"<th>{html.escape(m.label)}</th>" for m in TABLE_METRICS)
    best = {m.key: best_rows(summary[m.key].tolist() if m.key in summary else [], m.better, m) for m in TABLE_METRICS}
    rows = []
    for i, (_, r) in enumerate(summary.iterrows()):
        cells = [f"<td>{html.escape(str(r['policy']))}</td>"]
        for m in TABLE_METRICS:
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


def timeline_policy(policies: Sequence[str]) -> str | None:
    """The policy whose job timeline is shown: gadget when compared, else the first elastic
    (``rigid = False``) policy, else the first."""
    if not policies:
        return None
    if "gadget" in policies:
        return "gadget"
    try:
        from ringsched.policies import policy_class

        for p in policies:
            if not getattr(policy_class(p), "rigid", True):
                return p
    except Exception:  # noqa: BLE001 - an unknown name simply is not elastic
        pass
    return policies[0]


def render_compare(summary: pd.DataFrame, jobs: pd.DataFrame, timeline: pd.DataFrame, placements: pd.DataFrame,
                   meta: dict) -> str:
    """The compare report. ``summary`` has one row per finished policy (in display order);
    ``jobs``, ``timeline`` and ``placements`` hold every finished policy's rows with a
    ``policy`` column; ``meta`` names trace, cluster, seed, objective, ... (docs/reports.md)."""
    policies = [str(p) for p in summary["policy"]] if len(summary) else []
    colors = _colors(policies)
    s_idx = summary.set_index("policy") if len(summary) else pd.DataFrame()
    total_gpus = {p: float(s_idx.loc[p, "total_gpus"]) for p in policies} if policies else {}
    t_end = {p: float(s_idx.loc[p, "simulated_s"]) for p in policies} if "simulated_s" in s_idx else {}
    tl_policy = timeline_policy(policies)

    vers = meta.get("versions") or versions()
    title = f"ringsched compare: {meta.get('trace', '')} on {meta.get('cluster', '')}"
    items = [("trace", meta.get("trace", "")), ("cluster", meta.get("cluster_description") or meta.get("cluster", "")),
             ("seed", meta.get("seed", "")), ("objective", meta.get("objective", "")),
             ("jobs", meta.get("jobs", "")), ("policies", ", ".join(meta.get("policies", policies))),
             ("simulator", meta.get("simulator", "")),
             ("versions", ", ".join(f"{k} {v}" for k, v in vers.items()))]
    if meta.get("wall_s") is not None:
        items.append(("wall time", f"{meta['wall_s']:.1f} s with {meta.get('workers', '?')} worker processes"))
    parts = [f'<header id="report-header"><h1>{html.escape(title)}</h1>{_meta_list(items)}</header>']
    unfinished = meta.get("unfinished") or []
    if unfinished:
        parts.append(f'<p class="note" id="unfinished">Interrupted: only the finished policies are reported. '
                     f'Not finished: {html.escape(", ".join(unfinished))}.</p>')
    if not policies:
        parts.append('<p class="note">No policy finished: nothing to plot.</p>')
        return _page(title, "\n".join(parts))

    parts.append('<section id="summary"><h2>Summary</h2>' + summary_table_html(summary) +
                 '<p class="caption">Best value per column highlighted. JCT = finish - arrival over completed jobs; '
                 'definitions in docs/metrics.md.</p></section>')
    util = _timeline_plot(timeline, policies, colors,
                          lambda tl: tl["busy_gpus"].to_numpy(float) / total_gpus[str(tl["policy"].iloc[0])] * 100.0,
                          "GPUs busy (%)", "plot-gpu-util", t_end)
    queue = _timeline_plot(timeline, policies, colors, lambda tl: tl["waiting"].to_numpy(float),
                           "jobs waiting (queue length)", "plot-queue", t_end)
    figs = [
        _figure_html("plot-jct-cdf", plot_jct_cdf(jobs, policies, colors),
                     "JCT CDF per policy: fraction of completed jobs done within a time."),
        _figure_html("plot-gpu-util", util, "GPU utilisation over time: busy GPUs / cluster GPUs "
                     "(time-weighted averages when there are many decisions)."),
        _figure_html("plot-queue", queue, "Queue length over time: admitted jobs holding no GPU."),
        _figure_html("plot-utility", plot_utility(summary, policies, colors),
                     "Total utility: sum of every job's utility of its JCT (unfinished jobs count 0)."),
        _figure_html("plot-jct", plot_jct_bars(summary, policies, colors), "Mean and p99 JCT per policy."),
        _figure_html("plot-energy", plot_energy(summary, policies, colors),
                     "Energy: busy GPUs, idle GPUs on powered servers and powered servers."),
        _figure_html("plot-fairness", plot_fairness(summary, policies, colors),
                     "Fairness: Jain's index of jobs' speed (isolated time / JCT) and the worst finish-time "
                     "fairness rho = JCT / isolated time."),
    ]
    jobs_p = jobs[jobs["policy"] == tl_policy]
    ch_p = placements[placements["policy"] == tl_policy]
    ids = sample_jobs(ch_p, jobs_p, k=12, seed=int(meta.get("seed", 0) or 0))
    end_s = t_end.get(tl_policy, float(ch_p["t_s"].max()) if len(ch_p) else 0.0)
    why = ("GADGET" if tl_policy == "gadget" else
           f"{tl_policy} (GADGET was not among the compared policies; first elastic policy shown)"
           if tl_policy and not getattr(_safe_class(tl_policy), "rigid", True) else
           f"{tl_policy} (GADGET and elastic policies were not among the compared policies)")
    figs.append(_figure_html(
        "plot-job-timeline", plot_job_timeline(jobs_p, ch_p, ids, end_s, tl_policy),
        f"Timeline of a sample of {len(ids)} jobs under {html.escape(why)}: each bar is a stretch at one "
        "placement, coloured by worker count and labelled with the servers it used.", wide=True))
    parts.append('<section id="plots"><h2>Plots</h2><div class="plots">' + "".join(figs) + "</div></section>")
    parts.append(f'<section id="job-sample" data-policy="{html.escape(str(tl_policy))}"><h2>Sampled jobs under '
                 f"{html.escape(str(tl_policy))}</h2>{job_sample_table(jobs_p, ch_p, ids)}</section>")
    return _page(title, "\n".join(parts))


def _safe_class(name: str):
    try:
        from ringsched.policies import policy_class

        return policy_class(name)
    except Exception:  # noqa: BLE001
        return None


# ------------------------------------------------------------------------------ sweep
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
    """One row per (cluster, load, policy, metric): n seeds, mean, std, t-interval low/high."""
    rows = []
    keys = ["cluster", "load", "policy"]
    for (cl, load, pol), g in cells.groupby(keys, sort=False):
        for m in metrics:
            if m.key not in g:
                continue
            vals = pd.to_numeric(g[m.key], errors="coerce").to_numpy(float)
            mean, lo, hi, n = t_interval(vals, confidence)
            std = float(np.nanstd(vals, ddof=1)) if n > 1 else 0.0 if n == 1 else float("nan")
            rows.append({"cluster": cl, "load": float(load), "policy": pol, "metric": m.key, "n": n,
                         "mean": mean, "std": std, "ci_low": lo, "ci_high": hi, "confidence": confidence})
    return pd.DataFrame(rows, columns=["cluster", "load", "policy", "metric", "n", "mean", "std", "ci_low",
                                       "ci_high", "confidence"])


def plot_sweep_metric(agg: pd.DataFrame, metric: Metric, clusters: Sequence[str], policies: Sequence[str],
                      colors) -> str:
    plot_id = f"sweep-{metric.key.replace('_', '-')}"
    fig, axes = _figure(width_in=max(6.0, 4.6 * len(clusters)), height_in=3.4, ncols=len(clusters), bottom=0.16)
    d = agg[agg["metric"] == metric.key]
    for ax, cl in zip(axes, clusters):
        dc = d[d["cluster"] == cl]
        drawn = False
        for p in policies:
            g = dc[dc["policy"] == p].sort_values("load")
            if g.empty or not np.isfinite(g["mean"].to_numpy(float)).any():
                continue
            x = g["load"].to_numpy(float)
            ax.plot(x, g["mean"] * metric.scale, marker="o", ms=3.5, color=colors[p], label=p, lw=1.4)
            ax.fill_between(x, g["ci_low"] * metric.scale, g["ci_high"] * metric.scale, color=colors[p], alpha=0.18,
                            lw=0)
            drawn = True
        if drawn:
            loads = sorted(set(dc["load"].astype(float)))
            if len(loads) > 1 and loads[-1] / loads[0] >= 4:
                ax.set_xscale("log", base=2)
            ax.set_xticks(loads, [f"{x:g}" for x in loads])
            ax.minorticks_off()
            ax.set_xlabel("load factor (arrival rate x)")
            ax.set_ylabel(metric.label)
            ax.grid(True, alpha=0.3)
            ax.set_title(cl, fontsize=9)
        else:
            _no_data(ax)
    if len(axes) and axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7, ncols=2)
    return _svg(fig, plot_id)


def render_sweep(cells: pd.DataFrame, agg: pd.DataFrame, meta: dict) -> str:
    """The sweep report: one plot per metric against load, one line per policy, shaded
    t-intervals across seeds, one panel per cluster."""
    policies = list(dict.fromkeys(meta.get("policies") or cells.get("policy", pd.Series(dtype=str)).tolist()))
    clusters = list(dict.fromkeys(meta.get("clusters") or cells.get("cluster", pd.Series(dtype=str)).tolist()))
    colors = _colors(policies)
    vers = meta.get("versions") or versions()
    conf = float(meta.get("confidence", 0.95))
    title = f"ringsched sweep: {meta.get('trace', '')}"
    items = [("trace", meta.get("trace", "")), ("clusters", "; ".join(clusters)),
             ("loads", ", ".join(f"{x:g}" for x in meta.get("loads", []))),
             ("seeds", ", ".join(map(str, meta.get("seeds", [])))), ("objective", meta.get("objective", "")),
             ("policies", ", ".join(policies)), ("engine", meta.get("engine", "")),
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
    figs = []
    if len(cells):
        for m in SWEEP_METRICS:
            if m.key in set(agg["metric"]):
                pid = f"sweep-{m.key.replace('_', '-')}"
                figs.append(_figure_html(pid, plot_sweep_metric(agg, m, clusters, policies, colors),
                                         f"{html.escape(m.label)} against load, per policy.", wide=len(clusters) > 1))
        parts.append('<section id="plots"><h2>Plots</h2><div class="plots">' + "".join(figs) + "</div></section>")
    else:
        parts.append('<p class="note">No cell finished: nothing to plot.</p>')
    return _page(title, "\n".join(parts))
