"""Gavel (OSDI'20) Philly-derived per-VC traces: ``scheduler/traces/msr/seed=N/<vc>.trace``.

Tab-separated, no header, 7 fields per line (Gavel's legacy ``parse_trace`` format):
``job_type`` (e.g. "ResNet-50 (batch size 64)", "CycleGAN", "A3C"), ``command`` (template,
not used), ``num_steps_arg`` (not used), ``needs_data_dir`` (not used), ``total_steps``,
``arrival_time`` (s since the VC's first job), ``scale_factor`` (GPUs).
Row numbers in errors are line numbers (no header: the first line is row 1).

Mapping: job_id = ``<vc>-<line>``, arrival_s = arrival_time minus the earliest in the trace,
num_gpus = scale_factor, work_samples = total_steps x batch size (below), duration_s = NaN,
model = ``MODELS[family]``, local_bsz = the job type's batch size, tenant = the file name
without ``.trace`` (the Philly VC hash).

Why work and not a duration: the file has no duration. ``total_steps`` is the job's work;
Gavel's ``simulation_throughputs.json`` turns it into time only for scale factors 1/2/4/8
and only on K80/P100/V100, and SOURCE.md notes that the implied V100 times do not reproduce
the Philly durations. In that table a job of scale factor s runs about s times the steps per
second of one GPU (e.g. ResNet-50 batch 64 on V100: 4.4 steps/s at s=1, 17.3 at s=8), so a
step is one worker's iteration on one batch of the type's size, and the job's training work is
total_steps x batch size samples. The throughput table is only used to check (in the tests)
that every Gavel job type has a mapping.

``gavel:PATH`` is a ``.trace`` file or a folder of them (every ``*.trace``; tenant = file
name, so ``--vc ee9e8c`` picks that VC's file). Every Gavel VC file starts at its own first
job (arrival 0), so a folder overlays the VCs on one clock starting at 0.

Job type -> catalogue model (nearest equivalent where the catalogue lacks the model; batch
from the job type's name, else the default below):

=============================  ==================  =======================================
Gavel job type                 catalogue model     note
=============================  ==================  =======================================
ResNet-18 (batch size B)       resnet18_cifar10    Gavel trains ResNet-18 on CIFAR-10
ResNet-50 (batch size B)       resnet50            ImageNet
Transformer (batch size B)     transformer         Multi30k translation, Transformer base
LM (batch size B)              lstm_lm             word LSTM language model, WikiText-2
Recommendation (batch size B)  ncf                 Gavel's is an autoencoder on ML-20M;
                                                   NCF is the catalogue's recommender
CycleGAN                       resnet50            nearest: conv image model, ~28M params
                                                   (2 ResNet generators + 2 PatchGANs) vs
                                                   ResNet-50's 25.6M; batch 1 (Gavel's
                                                   cyclegan.py default --batch_size)
A3C                            mobilenet_v2        nearest: small conv policy net (Pong,
                                                   ~2-3M params) vs MobileNet-v2's 3.5M;
                                                   batch 1 (one rollout per step)
=============================  ==================  =======================================

Nothing is dropped. Errors: a line without 7 fields, an unknown job type, total_steps
missing/not whole/< 1, arrival_time missing/not a number/negative, scale_factor
missing/not whole/< 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.traces import _io
from ringsched.validation.bounds import LIMITS

FIELDS = ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time",
          "scale_factor"]

# family -> (catalogue model, batch size when the job type names none)
MODELS: dict[str, tuple[str, int | None]] = {
    "ResNet-18": ("resnet18_cifar10", None),
    "ResNet-50": ("resnet50", None),
    "Transformer": ("transformer", None),
    "LM": ("lstm_lm", None),
    "Recommendation": ("ncf", None),
    "CycleGAN": ("resnet50", 1),
    "A3C": ("mobilenet_v2", 1),
}
_JOB_TYPE = r"^(?P<family>.+?)(?: \(batch size (?P<bsz>\d+)\))?$"


def job_type_model(job_type: str) -> tuple[str, int] | None:
    """(catalogue model, batch size) for a Gavel job type, or None when unknown."""
    m = pd.Series([job_type]).str.extract(_JOB_TYPE).iloc[0]
    model, default = MODELS.get(m["family"], (None, None))
    if model is None:
        return None
    bsz = int(m["bsz"]) if isinstance(m["bsz"], str) else default
    return None if bsz is None else (model, bsz)


def _read_file(path: Path) -> _io.Part:
    raw = _io.read_table(path, FIELDS, text=("job_type", "command", "num_steps_arg"), sep="\t",
                         names=FIELDS)
    off = 1
    jt = _io.strings(raw, "job_type", path, off)
    parts = jt.str.extract(_JOB_TYPE)
    fam = parts["family"].fillna("")
    model = fam.map({k: v[0] for k, v in MODELS.items()})
    default = fam.map({k: v[1] for k, v in MODELS.items()})
    bsz = pd.to_numeric(parts["bsz"], errors="coerce").fillna(default)
    known = ", ".join(k + ("" if v[1] else " (batch size N)") for k, v in MODELS.items())
    _io.fail((model.isna() | bsz.isna()).to_numpy(), lambda i: f"unknown Gavel job type {jt.iloc[i]!r}; known: {known}",
             path, "job_type", off)
    bsz_v = bsz.to_numpy(dtype=float)
    _io.fail(LIMITS["local_bsz"].bad(bsz_v), lambda i: f"batch size of job type {jt.iloc[i]!r} must be "
             f"{LIMITS['local_bsz'].describe()}", path, "job_type", off)
    steps = _io.numbers(raw, "total_steps", path, off, LIMITS["steps"])
    _io.fail(LIMITS["work_samples"].bad(steps * bsz_v), lambda i: f"total_steps x batch = {steps[i] * bsz_v[i]:g} "
             f"samples; the work must be {LIMITS['work_samples'].describe()}", path, "total_steps", off)
    t = _io.numbers(raw, "arrival_time", path, off, LIMITS["time_s"])
    gpus = _io.numbers(raw, "scale_factor", path, off, LIMITS["job_gpus"])
    vc = path.stem
    rows = _io.file_rows(path, len(raw), off)
    ids = (vc + "-" + pd.Series(rows).astype(str)).to_numpy()
    df = _io.frame(job_id=ids, arrival_s=t, num_gpus=gpus, work_samples=steps * bsz_v, tenant=vc,
                   model=model.to_numpy(dtype=object), local_bsz=bsz_v.astype(np.int64))
    return _io.Part(df, rows, path, {})


def read(path: Path) -> pd.DataFrame:
    path = Path(path)
    if path.is_dir():
        files = _io.folder_files(path, pattern=r".+\.trace", glob="*.trace", what="Gavel .trace")
    else:
        files = [_io.require_file(path, suffix_hint=".trace")]
    return _io.combine([_read_file(f) for f in files], path, fmt="gavel", id_field="job_type",
                       description="Gavel Philly-derived trace; job types assigned by Gavel; "
                                   "work = total_steps x batch; tenant = VC file")
