"""Goodput: throughput x statistical efficiency, and the batch an adaptive job picks.

Goodput is counted in samples **at the job's own batch** per second (perfmodel/efficiency.py):
a job at its user's total batch M_u = requested GPUs x local batch has goodput = throughput.
A rigid-batch job (the default) always runs its user's per-GPU batch and the world credits
its throughput (efficiency 1), also when an elastic policy resizes it: that keeps every result
of before statistical efficiency, and is optimistic for such policies (docs/model.md). An
**adaptive-batch** job (``Job.adaptive_batch``, as under AdaptDL/Pollux) runs, in every epoch
of its training, the per-GPU batch among ``batch_candidates`` with the highest goodput on its
placement (Pollux's simulator re-tunes the batch between epochs, without a restart). Models
without a measured noise scale have efficiency 1 everywhere, so their jobs keep their batch.
"""

from __future__ import annotations

import numpy as np

from ringsched.perfmodel.efficiency import AdaptiveRun, NoiseScale, constant_rate, left_after, noise_scale
from ringsched.perfmodel.ring import step_time_s
from ringsched.perfmodel.speed import Placement, Shape, SpeedModel, consolidated_shape

CANDIDATES = 12  # per-GPU batches tried per worker count, geometrically spaced


def batch_candidates(job, workers: int, max_local_bsz: int) -> list[int]:
    """Per-GPU batches an adaptive job may run on ``workers`` GPUs: a geometric grid over
    [max(min measured, ceil(M0 / w)), min(max local batch, largest measured batch / w)], plus
    the user's own per-GPU batch when inside."""
    ns = noise_scale(job.model)
    if ns is None or not job.adaptive_batch:
        return [job.local_bsz]
    lo = max(ns.min_local_bsz, -(-ns.ref_batch // workers), 1)
    hi = max(lo, min(max_local_bsz, ns.max_batch // workers))
    grid = {int(round(x)) for x in np.geomspace(lo, hi, CANDIDATES)} if hi > lo else {lo}
    if lo <= job.local_bsz <= hi:
        grid.add(job.local_bsz)
    return sorted(grid)


def _max_local_bsz(speed: SpeedModel, job, gpu: str | None) -> int:
    """The largest per-GPU batch an adaptive job may take on ``gpu``; a rigid job keeps its own
    (and a job type outside the catalogue, a real run's, has no typed profile to ask)."""
    if not job.adaptive_batch or noise_scale(job.model) is None:
        return job.local_bsz
    return speed.typed(job.model, gpu).max_local_bsz


def epoch_goodputs(job, ns: NoiseScale, totals, tputs) -> tuple[np.ndarray, np.ndarray]:
    """Per epoch: the best goodput among candidate total batches ``totals`` run at throughputs
    ``tputs`` (an adaptive job re-tunes its batch at every epoch), and which candidate it is."""
    g = np.asarray(tputs, dtype=float)[:, None] * ns.gains(job.requested_gpus * job.local_bsz, totals)
    best = np.argmax(g, axis=0)  # ties: the smaller batch
    return g[best, np.arange(g.shape[1])], best


def goodput_of(speed: SpeedModel, job, done_fraction: float, shape: Shape, gpu: str | None = None,
               inter_Bps: float | None = None) -> tuple[int, float]:
    """(per-GPU batch now, goodput in samples at the user's batch per second) of ``job`` on a
    placement of ``shape``: for an adaptive job the constant rate that finishes its remaining
    work when it re-tunes at every epoch (``AdaptiveRun``), else its own batch's throughput."""
    w = shape[0]
    if w == 0:
        return job.local_bsz, 0.0
    cands = batch_candidates(job, w, _max_local_bsz(speed, job, gpu))
    tput = [w * m / speed.step_time_s(job.model, m, shape, inter_Bps, gpu) for m in cands]
    ns = noise_scale(job.model)
    if ns is None or not job.adaptive_batch:
        return cands[0], float(tput[0])
    per_epoch, best = epoch_goodputs(job, ns, [w * m for m in cands], tput)
    ends = ns.epoch_ends(job.requested_gpus * job.local_bsz)
    now = min(int(np.searchsorted(ends, done_fraction, side="right")), len(ends) - 1)
    return cands[best[now]], float(constant_rate(left_after(ends, done_fraction), per_epoch))


def adaptive_run(speed: SpeedModel, job, placement: Placement, inter_Bps: float | None = None) -> AdaptiveRun:
    """An adaptive job's run on ``placement``: per epoch, the best candidate batch's goodput."""
    ns, w = noise_scale(job.model), len(placement)
    cands = batch_candidates(job, w, _max_local_bsz(speed, job, speed.cluster.servers[placement[0]].gpu))
    tput = [w * m / speed.step_time_on(job.model, m, placement, inter_Bps) for m in cands]
    per_epoch, _ = epoch_goodputs(job, ns, [w * m for m in cands], tput)
    return AdaptiveRun(ns.epoch_ends(job.requested_gpus * job.local_bsz), per_epoch, job.work_samples)


def goodput_table(speed: SpeedModel, job, done_fraction: float, counts, gpus_per_server: int,
                  gpu: str | None = None) -> np.ndarray:
    """``goodput_of`` at each of ``counts`` GPUs on consolidated placements of one type, in
    one vectorised evaluation of the step-time model (planning: policies search many counts;
    equal to ``goodput_of`` up to floating-point rounding)."""
    max_bsz = _max_local_bsz(speed, job, gpu)
    params = speed.params(job.model, gpu)
    ws, ms, owner = [], [], []
    for i, w in enumerate(counts):
        if w > 0:
            c = batch_candidates(job, w, max_bsz)
            ws += [w] * len(c)
            ms += c
            owner += [i] * len(c)
    out = np.zeros(len(counts))
    if not ws:
        return out
    w = np.array(ws, dtype=float)
    m = np.array(ms, dtype=float)
    shape = [consolidated_shape(int(x), gpus_per_server) for x in ws]
    k = np.array([s[1] for s in shape], dtype=float)
    d = np.array([s[2] for s in shape], dtype=float)
    tput = w * m / step_time_s(params, m, w, k, d, 1)
    ns = noise_scale(job.model)
    if ns is None or not job.adaptive_batch:
        np.maximum.at(out, np.array(owner), tput)
        return out
    user = job.requested_gpus * job.local_bsz
    per_epoch = np.zeros((len(counts), ns.epochs))
    np.maximum.at(per_epoch, np.array(owner), tput[:, None] * ns.gains(user, w * m))
    return constant_rate(ns.left(user, done_fraction), per_epoch)
