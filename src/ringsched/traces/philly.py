"""Philly job trace as shipped with Pollux (adaptdl ``simulator/traces/philly.csv``).

Columns: ``timestamp`` ("YYYY-MM-DD HH:MM:SS", Philly local time, rows NOT sorted),
``duration`` (s of execution, summed over scheduling attempts), ``num_gpus``, ``gpu_time``
(= duration x num_gpus, not used), ``cluster`` (the virtual-cluster hash).

Mapping: job_id = ``philly-<row>`` (the file's spreadsheet row), arrival_s = seconds from the
earliest timestamp in the file, num_gpus, duration_s = duration, tenant = cluster,
model '' and local_bsz 0 (assigned later).

Dropped (a real-data quirk, counted in ``attrs["dropped"]``): jobs with duration 0 (none in
the shipped file). Errors (malformed input): a missing column, an unparsable or empty
timestamp, a missing, non-numeric, negative or infinite duration, num_gpus missing, not a
whole number or < 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.traces import _io
from ringsched.validation.bounds import LIMITS

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
REQUIRED = ["timestamp", "duration", "num_gpus", "cluster"]


def read(path: Path) -> pd.DataFrame:
    path = Path(path)
    _io.require_file(path, suffix_hint=".csv")
    raw = _io.read_table(path, REQUIRED, text=("timestamp", "cluster"))
    off = 2
    ts_text = _io.strings(raw, "timestamp", path, off)
    ts = pd.to_datetime(ts_text, format=TIMESTAMP_FORMAT, errors="coerce")
    _io.fail(ts.isna().to_numpy(),
             lambda i: f"unparsable timestamp {ts_text.iloc[i]!r} (expected YYYY-MM-DD HH:MM:SS)",
             path, "timestamp", off)
    duration = _io.numbers(raw, "duration", path, off, LIMITS["duration_s"])
    gpus = _io.numbers(raw, "num_gpus", path, off, LIMITS["job_gpus"])
    tenant = _io.strings(raw, "cluster", path, off, required=False)

    arrival = (ts - ts.min()).dt.total_seconds().to_numpy(dtype=float)
    _io.fail(LIMITS["time_s"].bad(arrival), lambda i: f"is {arrival[i]:g} s after the first submission; "
             f"a trace may span {LIMITS['time_s'].hi:g} s", path, "timestamp", off)
    rows = _io.file_rows(path, len(raw), off)
    keep = duration > 0
    job_id = "philly-" + pd.Series(rows[keep]).astype(str)
    df = _io.frame(job_id=job_id, arrival_s=arrival[keep], num_gpus=gpus[keep],
                   duration_s=duration[keep], tenant=tenant[keep].reset_index(drop=True))
    return _io.finish(df, path, fmt="philly", dropped={"zero duration": int((~keep).sum())}, rows=rows[keep],
                      description="Philly trace (Pollux/adaptdl philly.csv); tenant = VC hash")
