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


def validate(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Return ``df`` with the schema's columns and dtypes, sorted by (arrival_s, job_id).

    Raises InputError naming ``source`` and the first bad row (0-based position in ``df``)
    and field. Loaders validate their own source rows first, with the file's row numbers;
    this is the last line of defence.
    """
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"trace frame lacks columns {missing}", file=source)
    out = df[list(COLUMNS)].copy()
    for c, (t, _) in COLUMNS.items():
        out[c] = out[c].astype(t)
    checks = [
        ("arrival_s", ~(np.isfinite(out["arrival_s"]) & (out["arrival_s"] >= 0)), "must be a finite number >= 0"),
        ("num_gpus", out["num_gpus"] < 1, "must be >= 1"),
        ("local_bsz", out["local_bsz"] < 0, "must be >= 0"),
    ]
    dur, work = out["duration_s"].to_numpy(), out["work_samples"].to_numpy()
    has_d, has_w = np.isfinite(dur), np.isfinite(work)
    checks.append(("duration_s", pd.Series(has_d == has_w, index=out.index), "exactly one of duration_s and work_samples must be given"))
    checks.append(("duration_s", pd.Series(has_d & ~(dur > 0), index=out.index), "must be > 0"))
    checks.append(("work_samples", pd.Series(has_w & ~(work > 0), index=out.index), "must be > 0"))
    for field, bad, msg in checks:
        bad = np.asarray(bad, dtype=bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(msg, file=source, row=i, field=field)
    dup = out["job_id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"duplicate job_id {out['job_id'].iloc[i]!r}", file=source, row=i, field="job_id")
    return out.sort_values(["arrival_s", "job_id"], kind="stable").reset_index(drop=True)
