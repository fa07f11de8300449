"""Reports of comparisons and sweeps: self-contained HTML with inline SVG plots (docs/reports.md)."""

from ringsched.reports.html import (COMPARE_PLOTS, SWEEP_METRICS, TABLE_METRICS, Metric, aggregate_sweep,
                                    best_rows, render_compare, render_sweep, t_interval, timeline_policy,
                                    versions)

__all__ = ["COMPARE_PLOTS", "SWEEP_METRICS", "TABLE_METRICS", "Metric", "aggregate_sweep", "best_rows",
           "render_compare", "render_sweep", "t_interval", "timeline_policy", "versions"]
