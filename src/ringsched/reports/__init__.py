"""Reports of comparisons and sweeps (docs/reports.md): the metrics catalogue and statistics
(``metrics.py``), plots (``plots.py``), HTML (``html.py``, ``sweep_html.py``) and terminal
tables (``terminal.py``). Reads result tables only: no policy, simulator or trace is imported."""

from ringsched.reports.html import COMPARE_PLOTS, render_compare, timeline_policy
from ringsched.reports.metrics import (SWEEP_METRICS, TABLE_METRICS, TIE_SHARE, Metric, aggregate_sweep, best_rows,
                                       headline, paired_differences, t_interval, versions)
from ringsched.reports.sweep_html import render_sweep

__all__ = ["COMPARE_PLOTS", "SWEEP_METRICS", "TABLE_METRICS", "TIE_SHARE", "Metric", "aggregate_sweep", "best_rows",
           "headline", "paired_differences", "render_compare", "render_sweep", "t_interval", "timeline_policy",
           "versions"]
