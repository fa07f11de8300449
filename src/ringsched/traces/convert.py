"""From a trace frame (``schema.COLUMNS``) to :class:`ringsched.job.Job` objects.

* Model: the trace's own when it names a catalogue model, else a seeded draw, uniform over
  the built-in catalogue (``perfmodel.catalogue``): row i of the frame (sorted by arrival)
  gets ``MODELS[rng.integers(len(MODELS))]`` with ``rng = numpy.random.default_rng(seed)``
  drawn in row order, so the same trace and seed always give the same mapping.
* Batch: the trace's, else the profile's default per-worker batch.
* Work: ``work_samples`` when given, else the duration turned into samples through the
  performance model: duration x throughput of the job at its requested GPU count on a
  consolidated placement of this cluster. So a trace job takes, alone and at its requested
  size, the time it took in the source cluster.
* Worker bounds: elastic jobs may run on 1..requested GPUs; ``elastic=False`` pins them to the
  requested count (rigid).
* Utility: ``utility.defaults.jct_utility`` of the job's run time alone at its size: its
  value from that run on the first type (the work's reference), its knee from the run on the
  fastest GPU type that can host the size (``knee_run_s``; the same on a one-type cluster).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ringsched.cluster.model import Cluster
from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.utility.defaults import jct_utility
from ringsched.perfmodel.catalogue import get_profile, profile_names
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape


def model_pool() -> list[str]:
    return sorted(profile_names())


def to_jobs(frame: pd.DataFrame, cluster: Cluster, *, seed: int = 0, elastic: bool = True,
            speed: SpeedModel | None = None, source: str = "trace") -> list[Job]:
    speed = speed or SpeedModel(cluster)
    pool = model_pool()
    n = len(frame)
    rng = np.random.default_rng(seed)
    draws = rng.integers(len(pool), size=n)
    given = frame["model"].fillna("").to_numpy(dtype=object)
    models = np.where(given == "", np.asarray(pool, dtype=object)[draws], given)
    canon = {}
    for i, m in enumerate(models):
        if m not in canon:
            try:
                canon[m] = get_profile(m)
            except InputError as e:
                raise InputError(e.message, file=source, row=i + 1, field="model") from None  # job position, from 1
    bsz = frame["local_bsz"].to_numpy(dtype=np.int64).copy()
    for i in np.flatnonzero(bsz == 0):
        bsz[i] = canon[models[i]].default_local_bsz
    gpus = frame["num_gpus"].to_numpy(dtype=np.int64)
    gps = int(cluster.gpus.max())
    keys = list(zip(models, bsz.tolist(), gpus.tolist()))
    tput = {}
    for k in set(keys):
        m, b, g = k
        tput[k] = speed.throughput_sps(canon[m].name, b, consolidated_shape(g, gps))
    rate = np.array([tput[k] for k in keys], dtype=float) if n else np.zeros(0)
    dur = frame["duration_s"].to_numpy(dtype=float)
    work = frame["work_samples"].to_numpy(dtype=float)
    work = np.where(np.isfinite(work), work, dur * rate)
    run_s = work / rate
    knee_s = run_s  # on one type the run on the fastest type is that run
    if n and len(cluster.gpu_types) > 1:
        fast = _fastest_type_rates(speed, cluster, keys)
        knee_s = work / np.array([fast[k] or tput[k] for k in keys], dtype=float)
    ids = frame["job_id"].astype(str).to_numpy()
    arrival = frame["arrival_s"].to_numpy(dtype=float)
    tenant = frame["tenant"].fillna("").astype(str).to_numpy()
    jobs = []
    for i in range(n):
        g = int(gpus[i])
        jobs.append(Job(job_id=ids[i], arrival_s=float(arrival[i]), model=canon[models[i]].name,
                        local_bsz=int(bsz[i]), work_samples=float(work[i]),
                        min_workers=1 if elastic else g, max_workers=g,
                        utility=jct_utility(float(run_s[i]), g, knee_run_s=float(knee_s[i])),
                        requested_gpus=g, tenant=tenant[i]))
    return jobs


def _fastest_type_rates(speed: SpeedModel, cluster: Cluster, keys) -> dict:
    """Per (model, batch, GPUs): the most samples/s of the ring packed onto as few servers of
    one GPU type as its servers allow (largest first), over the types with that many GPUs (0:
    none has)."""
    sizes = {t: sorted((s.gpus for s in cluster.servers if s.gpu == t), reverse=True) for t in cluster.gpu_types}
    return {k: max([speed.throughput_sps(k[0], k[1], _packed_shape(k[2], sz), gpu=t)
                    for t, sz in sizes.items() if sum(sz) >= k[2]], default=0.0) for k in set(keys)}


def _packed_shape(workers: int, sizes_desc: list[int]) -> tuple:
    """The shape of ``workers`` on the fewest of these servers, largest first."""
    k = int(np.searchsorted(np.cumsum(sizes_desc), workers)) + 1
    return (workers, k, min(workers, sizes_desc[0]), 1)
