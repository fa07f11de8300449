"""Pollux: goodput-maximising GPUs per job, with fairness and a restart penalty (Qiao et al., OSDI'21).

The paper: every job's agent reports its goodput (throughput x statistical efficiency) as a
function of its allocation, the batch size being re-tuned for each allocation; the scheduler
picks allocations A that maximise the power mean FITNESS_p(A) = (1/J sum_j SPEEDUP_j(A_j)^p)^(1/p)
(p = -1 by default: a harmonic mean, fairer for smaller p), SPEEDUP_j = goodput on A_j over
goodput on one GPU; a running job whose allocation changes has its speedup multiplied by the restart
factor (age_j - restarts_j x delta) / (age_j + delta) (delta = the restart delay, 30 s); at
most one distributed job per node (interference avoidance). The artifact's scheduler
searches with a genetic algorithm every 60 s; speedups are scaled so that one node of linear
speedup is 1, and 1e-3 is added before the power, so an idle job counts (1e-3)^p.

Here: the speedups come from ringsched's model (``perfmodel/goodput.py``: an oracle of the
job's goodput, where Pollux fits it online), on consolidated placements of the default GPU
type; adaptive-batch jobs (``Job.adaptive_batch``) run at their goodput-best batch, rigid ones
at their own. The allowed counts of a job are 0 and, within [min_workers, max_workers], the powers of
two that divide a server's GPU count, that count, then whole servers (Sia's configurations):
a job that spans servers takes them whole, which enforces the one-distributed-job-per-node
rule by construction (the paper allows e.g. 4 + 2 or 3 GPUs), and the sizes divide each
other, so a chosen set that fits the GPU total always packs onto empty servers (a job whose
bounds hold none of them, e.g. rigid at 3 GPUs, may only run at its minimum). The search
is exact for that count problem: the power mean is a sum of per-job terms under one GPU
budget, so a knapsack dynamic program over (job, GPUs used) finds the maximum (ties: fewer
GPUs), in O(jobs x GPUs x counts); ``tests/test_pollux_sia.py`` checks it against brute force
on small cases, where the genetic algorithm is a heuristic for the same objective. Placement:
jobs whose count is unchanged keep their servers; the others go largest first, a one-server
job on the fullest server that holds it, a multi-server one on the lowest-numbered empty
servers; a job that does not fit (fragmentation around kept jobs) shrinks to the next allowed
count that does. Racks are ignored, as by Pollux. No autoscaling, no online fitting, no
interference model (the simulator has none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ringsched.perfmodel.efficiency import noise_scale
from ringsched.perfmodel.goodput import goodput_table
from ringsched.policies.base import Policy
from ringsched.policies.common import queue_key, take_all
from ringsched.policies.registry import register

IDLE = 1e-3  # added to every scaled speedup before the power (Pollux's artifact)
DONE_STEP = 0.01  # planning reads a job's progress to this fraction (caches its goodput table)


@dataclass(frozen=True)
class PolluxParams:
    p: float = -1.0  # fairness knob: the power mean's exponent (more negative: fairer)
    restart_penalty: bool = True  # discount a changed allocation by the restart factor

    def __post_init__(self) -> None:
        if not math.isfinite(self.p):
            raise ValueError(f"p must be a finite number, got {self.p}")


def server_counts(gps: int, servers: int) -> list[int]:
    """Counts of one type with ``gps`` GPUs per server: the powers of two that divide gps, gps
    itself, then whole servers. The sizes form a divisibility chain, so largest-first best
    fit packs any set of them that fits the GPU total into empty servers (no fragmentation)."""
    out, w = [], 1
    while w < gps:
        if gps % w == 0:
            out.append(w)
        w *= 2
    return out + [gps * k for k in range(1, servers + 1)]


def allowed_counts(min_w: int, max_w: int, gps: int, total: int) -> list[int]:
    """0 and the ``server_counts`` within [min_w, min(max_w, total)]; when none is (e.g. a
    rigid job of 3 GPUs on servers of 4), its ``min_w`` (if it fits the cluster)."""
    top = min(max_w, total)
    inside = [w for w in server_counts(gps, max(1, total // gps)) if min_w <= w <= top]
    return [0] + (inside or ([min_w] if min_w <= total else []))


def restart_factor(js, now_s: float, delay_s: float) -> float:
    """Pollux's discount of a changed allocation: (age - restarts x delay) / (age + delay),
    the share of the job's life so far not lost to restarts, one more included."""
    age = max(0.0, now_s - js.job.arrival_s)
    return max(age - js.restarts * delay_s, 0.0) / (age + delay_s) if age + delay_s > 0 else 1.0


def power_value(x: np.ndarray, p: float) -> np.ndarray:
    """The per-job term whose sum the power mean ranks by (monotone in the mean)."""
    if p == 0:
        return np.log(np.maximum(x, IDLE))
    return np.sign(p) * (x + IDLE) ** p


def best_counts(values: list[np.ndarray], counts: list[list[int]], budget: int) -> list[int]:
    """argmax sum_j values[j][i_j] subject to sum_j counts[j][i_j] <= budget (exact DP;
    among optima the one found first, which prefers fewer GPUs for later jobs)."""
    best = np.full(budget + 1, -np.inf)
    best[0] = 0.0
    g_all = np.arange(budget + 1)
    choices = []
    for vals, cnt in zip(values, counts):
        c = np.asarray(cnt)
        src = g_all[None, :] - c[:, None]  # (counts, budget + 1): GPUs used before this job
        cand = np.where(src >= 0, best[np.maximum(src, 0)] + np.asarray(vals)[:, None], -np.inf)
        pick = np.argmax(cand, axis=0)  # the first maximum: the smallest count among ties
        best = cand[pick, g_all]
        choices.append(pick)
    g = int(np.argmax(best))
    out = [0] * len(values)
    for j in range(len(values) - 1, -1, -1):
        i = int(choices[j][g])
        out[j] = counts[j][i]
        g -= out[j]
    return out


@register
class Pollux(Policy):
    name = "pollux"
    rigid = False
    periodic = True
    Params = PolluxParams

    def __init__(self, params: PolluxParams | None = None, **overrides):
        self.params = params or PolluxParams(**overrides)
        self._speed = None
        self._tables: dict[tuple, np.ndarray] = {}

    def optimize(self, jobs, nodes, previous_allocations):
        jobs = sorted(jobs, key=queue_key)
        free = nodes.capacity.copy()
        budget, gps = int(free.sum()), nodes.gpus_per_server
        if self._speed is not nodes.speed:
            self._speed, self._tables = nodes.speed, {}
        counts, values = [], []
        for js in jobs:
            cnt = allowed_counts(js.job.min_workers, js.job.max_workers, gps, budget)
            counts.append(cnt)
            values.append(self._values(js, cnt, nodes))
        chosen = best_counts(values, counts, budget)
        return self._place(jobs, chosen, counts, free, gps, previous_allocations)

    def _values(self, js, cnt: list[int], nodes) -> np.ndarray:
        """Per-job power-mean terms at each allowed count."""
        base, good = self._goodput(js, cnt, nodes)
        scaled = good / base / nodes.gpus_per_server if base > 0 else np.zeros_like(good)
        if self.params.restart_penalty and js.placement:  # a running job's re-allocation (as sia's)
            factor = restart_factor(js, nodes.now_s, nodes.restart_s)
            scaled = np.where(np.asarray(cnt) != len(js.placement), scaled * factor, scaled)
        return power_value(scaled, self.params.p)

    def _goodput(self, js, cnt: list[int], nodes) -> tuple[float, np.ndarray]:
        """(goodput on one GPU, goodput at each allowed count) on consolidated placements,
        cached per (model, batch, progress rounded to DONE_STEP for adaptive jobs)."""
        j = js.job
        adaptive = j.adaptive_batch and noise_scale(j.model) is not None
        done = round(js.done_at(nodes.now_s) / j.work_samples / DONE_STEP) * DONE_STEP if adaptive else 0.0
        key = (j.model, j.local_bsz, j.requested_gpus, adaptive, done, tuple(cnt))
        t = self._tables.get(key)
        if t is None:
            t = self._tables[key] = goodput_table(nodes.speed, j, done, [1] + cnt, nodes.gpus_per_server)
        return float(t[0]), t[1:]

    def _place(self, jobs, chosen, counts, free, gps, previous):
        out = {}
        keep = [(js.job_id, p) for js, w in zip(jobs, chosen)
                if w and len(p := previous.get(js.job_id, ())) == w]
        for (jid, p), ok in zip(keep, take_all(free, [p for _, p in keep])):
            if ok:
                out[jid] = p
        order = sorted((i for i, w in enumerate(chosen) if w and jobs[i].job_id not in out),
                       key=lambda i: (-chosen[i],) + queue_key(jobs[i]))
        for i in order:
            cnt = counts[i]
            for w in reversed([c for c in cnt if 0 < c <= chosen[i]]):
                p = place_one(w, free, gps)
                if p is not None:
                    out[jobs[i].job_id] = p
                    break
        return out


def place_one(w: int, free: np.ndarray, gps: int):
    """One server (the fullest that holds w) when w <= gps, else w / gps whole empty servers."""
    if w <= gps:
        fits = np.flatnonzero(free >= w)
        if not fits.size:
            return None
        s = int(fits[np.argmin(free[fits])])  # the first (lowest index) of the fullest
        free[s] -= w
        return (s,) * w
    empty = np.flatnonzero(free >= gps)
    need = -(-w // gps)
    if empty.size < need:
        return None
    take = empty[:need]
    out = []
    left = w
    for s in take:
        n = min(gps, left)
        free[s] -= n
        out += [int(s)] * n
        left -= n
    return tuple(out)
