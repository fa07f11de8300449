"""Microsoft ITP cluster traces (microsoft/elasticflow-traces, ElasticFlow ASPLOS'23).

Two forms of the same 69,351 jobs, chosen per file from its header:

* raw (``raw-traces/clusterNN.csv``): ``job_id, submission_time, duration, num_gpu``.
  job_id, arrival_s = submission_time minus the earliest in the trace, num_gpus = num_gpu,
  duration_s = duration, model '' and local_bsz 0 (assigned later).
* ElasticFlow (``elasticflow-traces/clusterNN.csv``; a ``model_name`` column): parsed by
  :mod:`ringsched.traces.elasticflow` (same jobs and durations, plus generated model_name and
  global batch_size -> model, local_bsz).

``itp:PATH`` is a file or a folder:

* a file: its jobs; tenant = the file name without ``.csv`` (``cluster04``);
* a folder of per-cluster files: all its ``clusterNN.csv`` (other CSVs such as ``195job.csv``,
  a 195-job testbed sample whose ids repeat the clusters', are skipped; if there are no
  clusterNN files every ``*.csv`` is read), tenant = file name, so ``--vc cluster04`` picks one
  cluster; arrivals share one clock (the traces' submission_time is relative to the common
  collection start), re-based to the earliest job of all files;
* the dataset folder itself (holding ``raw-traces/``): its ``raw-traces`` folder.

So ``itp:.../raw-traces --vc cluster04`` and ``itp:.../raw-traces/cluster04.csv`` give the same
15,802 jobs (after load_trace re-bases arrivals).

The traces have no user, VC, status or model fields (raw form). Dropped (counted in
``attrs["dropped"]``): duration 0 (none in the shipped files; ITP kept only jobs >= 600 s).
Errors: missing columns, empty/repeated job_id (also across the files of a folder),
submission_time or duration missing/not a number/negative, num_gpu missing/not whole/< 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.traces import _io, elasticflow
from ringsched.validation.bounds import LIMITS

RAW_REQUIRED = ["job_id", "submission_time", "duration", "num_gpu"]
FOLDER_PATTERN = r"cluster\d+\.csv"


def _parse_raw(raw: pd.DataFrame, path: Path, tenant: str) -> _io.Part:
    off = 2
    ids = _io.strings(raw, "job_id", path, off)
    _io.unique_ids(ids, path, "job_id", off)
    t = _io.numbers(raw, "submission_time", path, off, LIMITS["time_s"])
    dur = _io.numbers(raw, "duration", path, off, LIMITS["duration_s"])
    gpus = _io.numbers(raw, "num_gpu", path, off, LIMITS["job_gpus"])
    keep = dur > 0
    df = _io.frame(job_id=ids.to_numpy()[keep], arrival_s=t[keep], num_gpus=gpus[keep],
                   duration_s=dur[keep], tenant=tenant)
    return _io.Part(df, _io.file_rows(path, len(raw), off)[keep], path, {"zero duration": int((~keep).sum())})


def read_part(path: Path) -> tuple[_io.Part, str]:
    if "model_name" in _io.header(path):
        raw = _io.read_table(path, elasticflow.REQUIRED, text=("job_id", "model_name"))
        return elasticflow.parse(raw, path, path.stem), "elasticflow"
    raw = _io.read_table(path, RAW_REQUIRED, text=("job_id",))
    return _parse_raw(raw, path, path.stem), "raw"


def files_of(path: Path) -> list[Path]:
    if not path.is_dir():
        return [_io.require_file(path, suffix_hint="clusterNN.csv")]
    if not any(path.glob("*.csv")) and (path / "raw-traces").is_dir():
        path = path / "raw-traces"
    return _io.folder_files(path, pattern=FOLDER_PATTERN, glob="*.csv", what="ITP CSV")


def read(path: Path) -> pd.DataFrame:
    path = Path(path)
    read_parts = [read_part(f) for f in files_of(path)]
    forms = sorted({form for _, form in read_parts})
    return _io.combine([p for p, _ in read_parts], path, fmt="itp", itp_form="+".join(forms),
                       description=f"Microsoft ITP trace ({'+'.join(forms)} form); tenant = cluster file")
