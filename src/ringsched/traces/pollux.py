"""Pollux evaluation workloads (adaptdl ``osdi21-artifact`` ``simulator/workloads/workload-N.csv``).

Columns: ``name`` (``<application>-<index>``), ``time`` (arrival, s from the workload's
start), ``application`` (cifar10, imagenet, ncf, yolov3, bert, deepspeech2), ``num_replicas``
(initial GPUs), ``batch_size`` (initial total batch). There is no duration: a Pollux job
trains until its application is done, so each job gets ``work_samples`` = the application's
training work (below) and ``duration_s`` = NaN.

Mapping: job_id = name, arrival_s = time - min(time), num_gpus = num_replicas,
local_bsz = max(1, batch_size // num_replicas), model = ``MODELS[application]``,
work_samples = ``work_at_batch(application, num_replicas x local_bsz)`` (below), tenant ''
(the workloads have no VCs).

Nothing is dropped. Errors: a missing column; an empty name or a repeated one; time missing,
not a number or negative; an application not in the table; num_replicas or batch_size missing,
not a whole number or < 1.

Work per application
--------------------
In the Pollux artifact simulator (adaptdl ``simulator/applications.py`` at commit
de25dcc90c350b8ade3a710e437a651a8d2efae6, ``APPLICATIONS``) every application has
``target_metric=None``, so a job is complete after ``max_epochs`` epochs: bert 2, cifar10 100,
ncf 10, imagenet 90, deepspeech2 80, yolov3 50. Its progress is measured in the
``validation-<B>.csv`` curves' ``progress`` column: samples seen, in units of the
application's smallest (initial) batch M0 and weighted by statistical efficiency, so
progress x M0 = samples of training at batch M0. The job needs
``get_progress(max_epochs) = min over the curves of progress[max_epochs - 1]``. Hence

    WORK_SAMPLES[app] = M0 x min_B progress_B[max_epochs - 1]

= dataset size x epochs (a sample-equivalent at the initial batch; e.g. CIFAR-10 50,000 x 100).
The validation metric reached at that point is about the Pollux paper's (OSDI'21, Table 1)
quality target (94% top-1 CIFAR-10, 75% top-1 ImageNet, 88% F1 SQuAD, ~24% WER
DeepSpeech2). ``tests/test_traces.py`` re-derives the four shared curves' values.

ringsched counts a job's work in samples at the job's own total batch M (docs/model.md), so a
job gets the samples at M that are worth ``WORK_SAMPLES[app]`` samples at M0: with Pollux's
statistical efficiency E_e(M) = (phi_e + M0) / (phi_e + M) in epoch e (perfmodel/efficiency.py),

    work_samples = WORK_SAMPLES[app] x NoiseScale.samples_at(1, M),  samples_at(1, M) = mean_e 1 / E_e(M)

(1 at M = M0; 1.02-1.76 for the workloads' batches: cifar10 at 2,048 1.37, imagenet at 6,400
1.39). M is num_replicas x local_bsz, the batch the world counts the job's progress at (it
equals batch_size unless batch_size is not a multiple of num_replicas).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.perfmodel.efficiency import noise_scale
from ringsched.traces import _io
from ringsched.validation.bounds import LIMITS

# application -> catalogue model (ringsched.perfmodel.catalogue.profile_names()).
MODELS: dict[str, str] = {
    "cifar10": "resnet18_cifar10",   # ResNet-18 on CIFAR-10
    "imagenet": "resnet50",          # ResNet-50 on ImageNet
    "ncf": "ncf",                    # NeuMF on MovieLens
    "yolov3": "yolov3",              # YOLOv3 on PASCAL VOC
    "bert": "bert_base",             # BERT-base fine-tuning on SQuAD
    "deepspeech2": "deepspeech2",    # DeepSpeech2 on CMU-ARCTIC
}

# application -> (M0 = smallest validated batch, max_epochs, min progress after max_epochs,
#                 where the curve is). WORK_SAMPLES = M0 x progress, rounded to whole samples.
WORK_PROVENANCE: dict[str, tuple[int, int, float, str]] = {
    "cifar10": (128, 100, 39_062.90816659533,
                "shared/profiles/pollux-measured/cifar10/validation-*.csv (min at B=256)"),
    "imagenet": (200, 90, 576_525.594895604,
                 "shared/profiles/pollux-measured/imagenet/validation-*.csv (min at B=400)"),
    "ncf": (256, 10, 194_174.0,
            "shared/profiles/pollux-measured/ncf/validation-*.csv (min at B=256)"),
    "yolov3": (8, 50, 103_443.97796253164,
               "shared/profiles/pollux-measured/yolov3/validation-*.csv (min at B=16)"),
    # Not in the shared folder: read from the adaptdl repository, branch osdi21-artifact,
    # commit de25dcc90c350b8ade3a710e437a651a8d2efae6, simulator/traces/bert/validation-{12,96,384}.csv
    # (progress after epoch 2: 14,774.0 / 14,778.2 / 14,789.7; the minimum is B=12 = M0,
    # Pollux paper Table 1: 12 sequences). 14,774 x 12 = 177,288 ~ 2 epochs of SQuAD v1.1's
    # 88,641 training features.
    "bert": (12, 2, 14_774.0,
             "adaptdl@de25dcc simulator/traces/bert/validation-12.csv (not in shared)"),
    # Same commit, simulator/traces/deepspeech2/validation-{160,320,640}.csv: progress after
    # epoch 80 = 28,538.62 / 28,541.32 / 28,553.36 (min B=160). M0 = 20 utterances, the initial
    # batch of the Pollux paper's Table 1 and the AdaptDL DeepSpeech2 benchmark's --batch-size
    # (progress 357.8/epoch x 20 = 7,156 utterances per epoch of CMU-ARCTIC). M0 is a documented
    # default, not read from a curve file (the artifact's smallest stored curve is B=160).
    "deepspeech2": (20, 80, 28_538.622542890822,
                    "adaptdl@de25dcc simulator/traces/deepspeech2/validation-160.csv (not in "
                    "shared); M0 = 20 from Pollux Table 1"),
}
WORK_SAMPLES: dict[str, float] = {app: float(round(m0 * prog))
                                  for app, (m0, _, prog, _) in WORK_PROVENANCE.items()}

REQUIRED = ["name", "time", "application", "num_replicas", "batch_size"]


def work_at_batch(app: str, total_batch: int) -> float:
    """Samples at total batch ``total_batch`` that complete ``app``: its M0-samples
    (``WORK_SAMPLES``) over the statistical efficiency of that batch (module docstring)."""
    return WORK_SAMPLES[app] * noise_scale(MODELS[app]).samples_at(1, total_batch)


def read(path: Path) -> pd.DataFrame:
    path = Path(path)
    _io.require_file(path, suffix_hint="workload-N.csv")
    raw = _io.read_table(path, REQUIRED, text=("name", "application"))
    off = 2
    name = _io.strings(raw, "name", path, off)
    _io.unique_ids(name, path, "name", off)
    t = _io.numbers(raw, "time", path, off, LIMITS["time_s"])
    app = _io.strings(raw, "application", path, off).str.lower()
    _io.fail(~app.isin(list(MODELS)).to_numpy(),
             lambda i: f"unknown application {app.iloc[i]!r}; known: {', '.join(sorted(MODELS))}", path, "application", off)
    reps = _io.numbers(raw, "num_replicas", path, off, LIMITS["job_gpus"])
    bsz = _io.numbers(raw, "batch_size", path, off, LIMITS["global_bsz"])
    local = np.maximum(1, bsz.astype(np.int64) // reps.astype(np.int64))
    _io.fail(LIMITS["local_bsz"].bad(local), lambda i: f"gives a per-GPU batch of {local[i]:,}, above "
             f"{LIMITS['local_bsz'].hi:,.0f}", path, "batch_size", off)
    work = np.array([work_at_batch(a, int(r) * int(b)) for a, r, b in zip(app, reps, local)], dtype=float)
    df = _io.frame(job_id=name.to_numpy(), arrival_s=t - t.min(), num_gpus=reps, work_samples=work,
                   model=app.map(MODELS).to_numpy(dtype=object), local_bsz=local)
    return _io.finish(df, path, fmt="pollux", dropped={}, rows=_io.file_rows(path, len(raw), off),
                      description="Pollux workload (adaptdl osdi21-artifact); work = application's "
                                  "samples to completion at the job's batch")
