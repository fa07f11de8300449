"""The unified trace schema: one pandas DataFrame row per job, whatever the source.

Every loader in this package returns a frame with exactly these columns (``validate``
checks it). A trace says when a job arrived, how many GPUs it asked for and either how long
it ran (``duration_s``) or how much it must train (``work_samples``); turning that into a
:class:`ringsched.job.Job` (model profile, work through the performance model, utility) is
``ringsched.traces.convert``'s job, not the loaders'.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS

# column -> (dtype, meaning). Order is the frame's column order.
COLUMNS: dict[str, tuple[str, str]] = {
    "job_id": ("string", "unique id within the trace"),
    "arrival_s": ("float64", "submission time, seconds from the trace's first submission (>= 0)"),
    "num_gpus": ("int64", "GPUs requested (>= 1)"),
    "duration_s": ("float64", "run time at num_gpus in the source cluster, seconds; NaN when work_samples is given"),
    "work_samples": ("float64", "training work in samples; NaN when duration_s is given"),
    "tenant": ("string", "virtual cluster / user / group; '' when unknown"),
    "model": ("string", "catalogue model name; '' = assigned by the seeded mapping"),
    "local_bsz": ("int64", "per-worker batch; 0 = the model profile's default"),
}


def empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, (t, _) in COLUMNS.items()})


def validate(df: pd.DataFrame, source: str, rows: np.ndarray | None = None) -> pd.DataFrame:
    """Return ``df`` with the schema's columns and dtypes, sorted by (arrival_s, job_id).

    Raises InputError naming ``source``, the first bad row and the field. ``rows`` are the
    file's row numbers of the frame's rows (1-based, as the file shows them); without them a
    row is named by its position, counting from 1. Loaders validate their own source rows
    first, with the file's row numbers; this is the last line of defence, and it applies the
    same bounds (``validation.bounds.LIMITS``) to what loaders derive.
    """
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"trace frame lacks columns {missing}", file=source)
    if len(df) > LIMITS["jobs"].hi:
        raise InputError(f"the trace has {len(df):,} jobs; at most {LIMITS['jobs'].hi:,.0f}", file=source)
    rows = np.arange(1, len(df) + 1) if rows is None else np.asarray(rows)
    out = df[list(COLUMNS)].copy()
    dur, work = out["duration_s"].to_numpy(dtype=float), out["work_samples"].to_numpy(dtype=float)
    has_d, has_w = np.isfinite(dur), np.isfinite(work)
    checks = [
        ("arrival_s", LIMITS["time_s"].bad(out["arrival_s"]), f"must be {LIMITS['time_s'].describe()}"),
        ("num_gpus", LIMITS["job_gpus"].bad(out["num_gpus"]), f"must be {LIMITS['job_gpus'].describe()}"),
        ("local_bsz", (out["local_bsz"].to_numpy(dtype=float) != 0) & LIMITS["local_bsz"].bad(out["local_bsz"]),
         f"must be 0 (the profile's default) or {LIMITS['local_bsz'].describe()}"),
        ("duration_s", has_d == has_w, "exactly one of duration_s and work_samples must be given"),
        ("duration_s", has_d & (LIMITS["duration_s"].bad(dur) | (dur <= 0)),
         f"must be > 0 and {LIMITS['duration_s'].describe()}"),
        ("work_samples", has_w & LIMITS["work_samples"].bad(work), f"must be {LIMITS['work_samples'].describe()}"),
    ]
    for field, bad, msg in checks:
        bad = np.asarray(bad, dtype=bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(msg, file=source, row=int(rows[i]), field=field)
    for c, (t, _) in COLUMNS.items():
        out[c] = out[c].astype(t)
    dup = out["job_id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"duplicate job_id {out['job_id'].iloc[i]!r}", file=source, row=int(rows[i]), field="job_id")
    return out.sort_values(["arrival_s", "job_id"], kind="stable").reset_index(drop=True)
