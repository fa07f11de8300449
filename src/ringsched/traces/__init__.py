"""Job traces: loaders for public cluster traces and the embedded synthetic default, all
returning the unified frame of :mod:`ringsched.traces.schema` (docs/traces.md).

``load_trace(spec, vc=, window=, limit=, seed=)`` is the entry point. ``spec`` is
``FORMAT:ARG``:

    synthetic:N[,key=value...]   the embedded Philly-shaped generator (traces.synthetic)
    philly:PATH                  Pollux's philly.csv (traces.philly)
    pollux:PATH                  a Pollux workload-N.csv (traces.pollux)
    itp:PATH                     Microsoft ITP clusterNN.csv, raw or ElasticFlow form, file or folder
    gavel:PATH                   a Gavel <vc>.trace or a folder of them
    elasticflow:PATH             an ElasticFlow CSV (Philly VC or ITP form), file or folder
    alibaba:PATH                 Alibaba GPU v2023 openb_pod_list_*.csv

Filters, in this order: ``vc`` keeps one tenant; ``window=(START, END)`` keeps jobs submitted
in [START, END) seconds from the trace's first submission (the loader's clock, before any
re-basing); ``limit`` keeps the first N by arrival. Then arrivals are re-based so the first
remaining job arrives at 0. ``ringsched.traces.convert`` turns the frame into jobs.
"""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path
from typing import Callable

import pandas as pd

from ringsched.errors import InputError
from ringsched.traces import _io, alibaba, elasticflow, gavel, itp, philly, pollux, synthetic
from ringsched.traces.schema import COLUMNS, validate
from ringsched.validation.bounds import LIMITS

Loader = Callable[[str, int], pd.DataFrame]


def _path(fmt: str, arg: str) -> Path:
    """The PATH of ``fmt:PATH``; InputError (field 'trace') if none is given."""
    arg = arg.strip()
    if not arg:
        raise InputError(f"'{fmt}:PATH' needs a path", field="trace")
    return Path(arg).expanduser()


def _from_path(fmt: str, read: Callable[[Path], pd.DataFrame]) -> Loader:
    def load(arg: str, seed: int) -> pd.DataFrame:
        return read(_path(fmt, arg))
    return load


def _synthetic(arg: str, seed: int) -> pd.DataFrame:
    n, opts = synthetic.parse_options(arg)
    return synthetic.generate(n, seed, **opts)


def _demo(arg: str, seed: int) -> pd.DataFrame:
    n, opts = synthetic.parse_demo_options(arg)
    return synthetic.generate_demo(n, seed, **opts)


# format name -> (loader(arg, seed), one-line description). Dispatch goes through this table.
FORMATS: dict[str, tuple[Loader, str]] = {
    "synthetic": (_synthetic, "synthetic:N[,rate_per_h=R|load=L,diurnal=A,tenants=K,zipf=S,"
                              "max_duration_s=C] - embedded Philly-shaped generator"),
    "demo": (_demo, "demo:N[,load=L,time_scale=S,max_duration_s=C] - embedded Philly busy-period workload"),
    "philly": (_from_path("philly", philly.read), "philly:PATH - Pollux philly.csv; tenant = VC hash"),
    "pollux": (_from_path("pollux", pollux.read), "pollux:PATH - Pollux workload-N.csv; work to completion"),
    "itp": (_from_path("itp", itp.read), "itp:PATH - Microsoft ITP clusterNN.csv or folder; tenant = clusterNN"),
    "gavel": (_from_path("gavel", gavel.read), "gavel:PATH - Gavel <vc>.trace or folder; tenant = VC"),
    "elasticflow": (_from_path("elasticflow", elasticflow.read),
                    "elasticflow:PATH - ElasticFlow CSV or folder; tenant = file"),
    "alibaba": (_from_path("alibaba", alibaba.read), "alibaba:PATH - Alibaba GPU v2023 pod list"),
}

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([smhd]?)\s*$")


def _seconds(text: str, default: float) -> float:
    if not text.strip():
        return default
    m = _TIME.match(text)
    if not m:
        raise InputError(f"window bound {text.strip()!r} must be a finite time >= 0 (seconds, or with s/m/h/d)",
                         field="window")
    return LIMITS["time_s"].check(float(m.group(1)) * _UNITS[m.group(2)], field="window",
                                  what=f"window bound {text.strip()!r}")


def parse_window(text: str) -> tuple[float, float]:
    """``"START:END"`` -> (start_s, end_s). Bounds are seconds from the trace's first
    submission, optionally with a unit s/m/h/d (``"0:7d"``); an empty bound is 0 / the end."""
    if text.count(":") != 1:
        raise InputError(f"window must be START:END, got {text!r}", field="window")
    a, b = text.split(":")
    start, end = _seconds(a, 0.0), _seconds(b, math.inf)
    if not end > start:
        raise InputError(f"window END must be after START, got {text!r}", field="window")
    return start, end


def split_spec(spec: str) -> tuple[str, str]:
    """``FORMAT:ARG`` -> (format, arg); InputError (field 'trace') for an unknown format."""
    fmt, sep, arg = str(spec).partition(":")
    key = fmt.strip().lower()
    if not sep or key not in FORMATS:
        what = f"unknown trace format {fmt.strip()!r}" if sep else f"trace spec {spec!r} has no FORMAT:"
        raise InputError(f"{what}; use one of: {', '.join(f + ':' for f in FORMATS)}", field="trace")
    return key, arg


# the formats whose argument is checked without loading (the others' is a path, read on loading)
_CHECKS: dict[str, Callable[[str], None]] = {"synthetic": synthetic.check_options, "demo": synthetic.check_demo_options}


def check_spec(spec: str) -> None:
    """``spec`` checked without loading the trace: its format, a generator's count and options
    (as loading checks them), a path's presence. InputError (field 'trace') if wrong."""
    fmt, arg = split_spec(spec)
    if fmt in _CHECKS:
        _CHECKS[fmt](arg)
    else:
        _path(fmt, arg)


def load_trace(spec: str, *, vc: str | None = None, window: tuple[float, float] | None = None,
               limit: int | None = None, seed: int = 0, skip_bad_rows: bool = False) -> pd.DataFrame:
    """Load a trace (``FORMAT:ARG``), filter it (vc, then window, then limit) and re-base
    arrivals to the first remaining job. ``seed`` only matters for ``synthetic``. With
    ``skip_bad_rows`` a row that fails a check is left out and counted (attrs ``bad_rows``,
    ``bad_row_examples``) instead of stopping the load."""
    fmt, arg = split_spec(spec)
    loader, _ = FORMATS[fmt]
    df = _io.skipping_bad_rows(lambda: loader(arg, seed)) if skip_bad_rows else loader(arg, seed)
    attrs = dict(df.attrs)
    loaded = len(df)
    span = float(df["arrival_s"].max()) if loaded else 0.0

    if vc is not None:
        vc = str(vc).strip()
        counts = df["tenant"].value_counts()
        counts = counts[counts.index != ""]
        if vc not in counts.index:
            if counts.empty:
                raise InputError(f"unknown VC {vc!r}: this trace has no tenants", field="vc")
            shown = ", ".join(f"{t} ({n:,})" for t, n in counts.sort_index().items())
            raise InputError(f"unknown VC {vc!r}; available: {shown}", field="vc")
        df = df[(df["tenant"] == vc).to_numpy()]
    if window is not None:
        try:
            start, end = (float(window[0]), float(window[1]))
        except (TypeError, ValueError, IndexError):
            raise InputError(f"window must be (START, END) seconds, got {window!r}", field="window") from None
        if not (start >= 0 and end > start) or math.isnan(start) or math.isnan(end):
            raise InputError(f"window must have 0 <= START < END, got {window!r}", field="window")
        arr = df["arrival_s"].to_numpy()
        df = df[(arr >= start) & (arr < end)]
        if df.empty:
            raise InputError(f"no jobs submitted in [{start:g}, {end:g}) s"
                             f"{' in VC ' + repr(vc) if vc is not None else ''} "
                             f"(the trace's submissions span 0..{span:g} s)", field="window")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 1:
            raise InputError(f"limit must be a whole number >= 1, got {limit!r}", field="limit")
        limit = int(limit)
        df = df.iloc[:limit]
    if df.empty:
        reasons = attrs.get("dropped_reasons") or {}
        why = f" ({', '.join(f'{n:,} dropped: {r}' for r, n in reasons.items())})" if reasons else ""
        raise InputError(f"the trace has no usable jobs{why}", file=str(attrs.get("source", spec)))

    df = df.reset_index(drop=True).copy()
    df["arrival_s"] = df["arrival_s"] - float(df["arrival_s"].min())
    df.attrs = {**attrs, "trace": spec, "rows_loaded": loaded,
                "filters": {"vc": vc, "window": None if window is None else (start, end), "limit": limit}}
    return df


__all__ = ["COLUMNS", "FORMATS", "load_trace", "parse_window", "split_spec", "validate"]
