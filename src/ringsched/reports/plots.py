"""The plots of the reports, drawn by matplotlib's object-oriented API (no pyplot, no global
state) as inline SVG. Compare plots here; sweep plots in ``sweep_html.py``."""

from __future__ import annotations

import io
import re
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ringsched.reports.metrics import HOUR, best_rows

# ------------------------------------------------------------------------------ plotting
def _figure(width_in: float = 7.0, height_in: float = 3.6, ncols: int = 1, *, constrained: bool = False,
            bottom: float = 0.15, right: float = 0.98):
    """A figure with ``ncols`` axes. Fixed margins by default (constrained layout draws every
    figure twice, which doubles the report's rendering time); ``constrained`` where labels vary."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), layout="constrained" if constrained else None)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    if not constrained:
        fig.subplots_adjust(left=0.6 / width_in + 0.03, right=right, bottom=bottom, top=0.9,
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


LEGEND_RIGHT = 0.8  # line plots keep the right fifth for the legend, off the lines


def plot_jct_cdf(jobs: pd.DataFrame, policies: Sequence[str], colors) -> str:
    fig, (ax,) = _figure(right=LEGEND_RIGHT)
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
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    else:
        _no_data(ax, "no completed jobs")
    return _svg(fig, "plot-jct-cdf")


def busy_window(jobs: pd.DataFrame, summary: pd.DataFrame) -> tuple[float, float, float]:
    """(start, busy end, last finish) in seconds: the busy end is the latest of the policies'
    ``busy_end_s`` (when 99% of the jobs had finished: the end of the period the table's busy
    utilisation covers), so one long job cannot stretch the plots."""
    done = jobs[jobs["status"] == "completed"] if "status" in jobs else jobs.iloc[0:0]
    if done.empty:
        return 0.0, 1.0, 1.0
    start = float(jobs["arrival_s"].min())
    last = float(done["finish_s"].max())
    busy = float(pd.to_numeric(summary["busy_end_s"]).max())
    return start, max(busy, start + 1.0), last


def _timeline_plot(timeline: pd.DataFrame, policies: Sequence[str], colors, value: Callable[[pd.DataFrame], np.ndarray],
                   ylabel: str, plot_id: str, t_end: dict[str, float], window: tuple[float, float]) -> str:
    """A step plot per policy over ``window`` (seconds): the busy period, not the tail."""
    fig, (ax,) = _figure(right=LEGEND_RIGHT)
    drawn = False
    lo, hi = window
    for p in policies:
        tl = timeline[timeline["policy"] == p].sort_values("t_s", kind="stable")
        if tl.empty:
            continue
        t, v = tl["t_s"].to_numpy(float), value(tl)
        keep = t <= hi
        x, y = _step_average(t[keep], v[keep], min(t_end.get(p, hi), hi))
        ax.step(x / HOUR, y, where="post", color=colors[p], label=p, lw=1.1, alpha=0.85)
        drawn = True
    if drawn:
        ax.set_xlim(lo / HOUR, hi / HOUR)
        ax.set_xlabel("simulated time (hours), busy period")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    else:
        _no_data(ax)
    return _svg(fig, plot_id)


def _plain_axis(axis) -> None:
    """Tick labels as plain numbers with thousands separators (no 1e6 offset or multiplier)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"))


def _bars(ax, policies: Sequence[str], values: Sequence, colors, xlabel: str, better: str | None,
          fmt: str = "{:,.1f}") -> None:
    """Horizontal bars, one per policy, names readable on the y axis, each bar labelled with its
    value (* where best beyond noise)."""
    vals = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    y = np.arange(len(policies))[::-1]
    bars = ax.barh(y, np.nan_to_num(vals), color=[colors[p] for p in policies], height=0.7)
    best = best_rows(list(vals), better)
    for i, (b, v) in enumerate(zip(bars, vals)):
        label = "-" if not np.isfinite(v) else fmt.format(v)
        ax.annotate(label + (" *" if i in best else ""), (b.get_width(), b.get_y() + b.get_height() / 2),
                    ha="left", va="center", fontsize=7, xytext=(3, 0), textcoords="offset points",
                    fontweight="bold" if i in best else "normal")
    ax.set_yticks(y, policies, fontsize=8)
    ax.set_xlabel(xlabel)
    _plain_axis(ax.xaxis)
    ax.margins(x=0.22)
    ax.grid(True, axis="x", alpha=0.3)


def _bar_height(policies) -> float:
    return max(2.6, 1.0 + 0.28 * len(policies))


def plot_utility(summary: pd.DataFrame, policies, colors) -> str:
    fig, (ax,) = _figure(height_in=_bar_height(policies), constrained=True)
    s = summary.set_index("policy").reindex(policies)
    _bars(ax, policies, s["total_utility"].tolist(), colors, "total utility (sum over jobs)", "max")
    if "max_utility" in s and s["max_utility"].notna().any():
        top = float(s["max_utility"].max())
        ax.axvline(top, color="0.3", ls="--", lw=1)
        ax.annotate("maximum attainable", (top, 1.0), xycoords=("data", "axes fraction"), ha="right", va="bottom",
                    fontsize=7, color="0.3", xytext=(-2, 2), textcoords="offset points")
        ax.set_xlim(right=max(ax.get_xlim()[1], top * 1.12))
    ax.set_title("total utility (* best)", fontsize=10)
    return _svg(fig, "plot-utility")


def plot_jct_bars(summary: pd.DataFrame, policies, colors) -> str:
    fig, axes = _figure(height_in=_bar_height(policies), ncols=2, constrained=True)
    s = summary.set_index("policy").reindex(policies)
    for ax, key, title in ((axes[0], "mean_jct_s", "mean JCT"), (axes[1], "p99_jct_s", "p99 JCT")):
        _bars(ax, policies, (s[key] / HOUR).tolist(), colors, "hours", "min", "{:,.2f}")
        ax.set_title(f"{title} (* best)", fontsize=10)
    return _svg(fig, "plot-jct")


def plot_energy(summary: pd.DataFrame, policies, colors) -> str:
    fig, (ax,) = _figure(height_in=_bar_height(policies), constrained=True)
    s = summary.set_index("policy").reindex(policies)
    _bars(ax, policies, s["energy_kwh"].tolist(), colors, "energy (kWh)", "min", "{:,.0f}")
    ax.set_title("energy (* best)", fontsize=10)
    return _svg(fig, "plot-energy")


def plot_fairness(summary: pd.DataFrame, policies, colors) -> str:
    fig, axes = _figure(height_in=_bar_height(policies), ncols=2, constrained=True)
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
    step = max(1, int(np.ceil(max_w / 12)))  # whole worker counts only, at most ~12 ticks
    cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax, ticks=np.arange(1, max_w + 1, step))
    cb.set_label("workers (GPUs)")
    return _svg(fig, "plot-job-timeline")
