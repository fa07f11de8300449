"""The suite's HTML page: the overall figures, the per-workload ratios and the workloads."""

from __future__ import annotations

import html

import pandas as pd

_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "th{background:#f4f4f4}caption{text-align:left;font-weight:bold;padding:4px 0}")


def _table(df: pd.DataFrame, caption: str) -> str:
    if df is None or not len(df):
        return f"<p>{html.escape(caption)}: no rows</p>"
    return df.to_html(index=False, float_format=lambda x: f"{x:,.3f}", na_rep="-", border=0).replace(
        "<table", f"<table><caption>{html.escape(caption)}</caption", 1).replace("<table><caption", "<table>\n<caption", 1)


def suite_page(tables: dict[str, pd.DataFrame], target: str) -> str:
    r = tables["ratios"]
    keep = [c for c in r.columns if c.endswith(("_ratio", "_best"))] if len(r) else []
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>ringsched suite: {html.escape(target)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>Evaluation suite: {html.escape(target)} against the best baseline</h1>",
             "<p>Ratios of means over seeds; utility &gt; 1 and JCT &lt; 1 favour the target. "
             "Paired differences are per workload and seed, relative to the workload's best baseline.</p>",
             _table(tables["overall"], "Geometric means and worst cases"),
             _table(tables["paired"],
                    "Paired per-seed relative differences (Student-t interval, Wilcoxon signed-rank p)"),
             _table(r[["workload", "estimates"] + keep] if len(r) else r, "Per workload"),
             _table(tables["workloads"], "Workloads: offered load and GPU utilisation over the busy period"),
             *([_table(tables["objective_overall"], "The objective's metrics: geometric means over workloads "
                       "(target, target deciding as jct, best baseline; the target's difference to the best baseline "
                       "paired per workload and seed, with its Student-t interval and signed-rank p)"),
                _table(tables["objective"], "The objective's metrics per workload")]
               if len(tables.get("objective", ())) else []),
             "</body></html>"]
    return "\n".join(parts)
