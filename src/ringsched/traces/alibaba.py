"""Alibaba GPU cluster trace v2023 ("openb", FGD, ATC'23): ``openb_pod_list_*.csv``.

Columns used: ``name`` (pod id), ``num_gpu`` (0..8), ``gpu_milli`` (share of one GPU, in
thousandths, for GPU-sharing pods), ``creation_time``, ``scheduled_time`` (empty when never
scheduled), ``deletion_time`` (s from trace start). ``cpu_milli``, ``memory_mib``,
``gpu_spec``, ``qos`` and ``pod_phase`` are not used.

Mapping: job_id = name, arrival_s = creation_time minus the earliest creation_time in the file,
num_gpus = num_gpu with a fractional request rounded up: a 1-GPU pod asking for gpu_milli < 1000
of one GPU (3,078 pods in the default list, 2,573 of them kept) counts as 1 whole GPU (this
scheduler does not share GPUs; ``attrs["fractional_gpu_pods"]`` counts the kept ones), duration_s = deletion_time - scheduled_time
(the run time; queueing before scheduling excluded), tenant '' (the trace has no users or VCs),
model '' and local_bsz 0.

Dropped (real-trace facts, counted in ``attrs["dropped"]`` / ``attrs["dropped_reasons"]``):

* ``no GPU``: num_gpu == 0, CPU-only pods (1,088 in the default list);
* ``never scheduled``: GPU pods with an empty scheduled_time (Pending: 861 GPU pods) — they
  never ran, so they have no duration;
* ``no deletion time``: an empty deletion_time (never finished; none in the default list);
* ``zero duration``: deletion_time == scheduled_time (none in the default list).

So the default list (8,152 pods) gives 6,203 jobs. Running pods are kept: their
deletion_time is recorded (the trace's end for the few still running, so their duration is a
lower bound). Errors (malformed): missing columns, an empty/repeated name, creation_time
missing/not a number/negative, num_gpu missing/not whole/negative, gpu_milli not a number or
negative, scheduled/deletion time not a number, deletion_time < scheduled_time or
scheduled_time < creation_time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.traces import _io
from ringsched.validation.bounds import LIMITS

REQUIRED = ["name", "num_gpu", "gpu_milli", "creation_time", "scheduled_time", "deletion_time"]


def read(path: Path) -> pd.DataFrame:
    path = Path(path)
    _io.require_file(path, suffix_hint="openb_pod_list_*.csv")
    raw = _io.read_table(path, REQUIRED, text=("name",))
    off = 2
    name = _io.strings(raw, "name", path, off)
    _io.unique_ids(name, path, "name", off)
    gpus = _io.numbers(raw, "num_gpu", path, off, LIMITS["pod_gpus"])
    milli = _io.numbers(raw, "gpu_milli", path, off, LIMITS["gpu_milli"], allow_missing=True)
    created = _io.numbers(raw, "creation_time", path, off, LIMITS["time_s"])
    sched = _io.numbers(raw, "scheduled_time", path, off, LIMITS["time_s"], allow_missing=True)
    deleted = _io.numbers(raw, "deletion_time", path, off, LIMITS["time_s"], allow_missing=True)
    has_s, has_d = np.isfinite(sched), np.isfinite(deleted)
    _io.fail(has_s & (sched < created), "is before creation_time", path, "scheduled_time", off)
    _io.fail(has_s & has_d & (deleted < sched), "is before scheduled_time", path, "deletion_time", off)

    no_gpu = gpus == 0
    never = ~no_gpu & ~has_s
    unfinished = ~no_gpu & has_s & ~has_d
    dur = deleted - sched
    zero = ~no_gpu & has_s & has_d & (dur == 0)
    keep = ~(no_gpu | never | unfinished | zero)
    fractional = keep & (gpus == 1) & np.isfinite(milli) & (milli > 0) & (milli < 1000)
    df = _io.frame(job_id=name.to_numpy()[keep], arrival_s=(created - created.min())[keep],
                   num_gpus=gpus[keep], duration_s=dur[keep])
    return _io.finish(df, path, fmt="alibaba", rows=_io.file_rows(path, len(raw), off)[keep],
                      dropped={"no GPU": int(no_gpu.sum()), "never scheduled": int(never.sum()),
                               "no deletion time": int(unfinished.sum()), "zero duration": int(zero.sum())},
                      fractional_gpu_pods=int(fractional.sum()),
                      description="Alibaba GPU v2023 pods; fractional GPUs rounded up to 1; "
                                  "CPU-only and never-scheduled pods dropped")
