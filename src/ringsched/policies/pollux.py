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

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ringsched.perfmodel.efficiency import noise_scale
from ringsched.perfmodel.goodput import goodput_table
from ringsched.policies import knapsack
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
    """argmax sum_j values[j][i_j] subject to sum_j counts[j][i_j] <= budget (exact DP,
    ``knapsack.solve``; among optima the one found first, which prefers fewer GPUs for later jobs)."""
    return knapsack.solve(*knapsack.flat(values, counts), budget)


@lru_cache(maxsize=4096)
def counts_of(min_w: int, max_w: int, gps: int, total: int) -> tuple[int, ...]:
    """``allowed_counts`` as a tuple, memoised: every round asks it of every job."""
    return tuple(allowed_counts(min_w, max_w, gps, total))


@register
class Pollux(Policy):
    name = "pollux"
    rigid = False
    periodic = True
    Params = PolluxParams

    def __init__(self, params: PolluxParams | None = None, **overrides):
        self.params = params or PolluxParams(**overrides)
        self._speed, self._speed_version = None, 0
        self._tables: dict[tuple, np.ndarray] = {}

    def optimize(self, jobs, nodes, previous_allocations):
        jobs = sorted(jobs, key=queue_key)
        free = nodes.capacity.copy()
        budget, gps = int(free.sum()), nodes.gpus_per_server
        if self._speed is not nodes.speed or self._speed_version != nodes.speed.version:  # refitted: stale
            self._speed, self._speed_version, self._tables = nodes.speed, nodes.speed.version, {}
        counts = [counts_of(js.job.min_workers, js.job.max_workers, gps, budget) for js in jobs]
        if not jobs:
            return {}
        chosen = knapsack.solve(*self._values(jobs, counts, nodes), budget)
        return self._place(jobs, chosen, counts, free, gps, previous_allocations)

    def _values(self, jobs, counts, nodes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Power-mean terms of every job at each allowed count, as ``knapsack.solve``'s flat
        arrays: one elementwise evaluation for all jobs (the same operations per entry as one
        job at a time, so the same floats)."""
        scaled = np.concatenate([self._scaled(js, cnt, nodes) for js, cnt in zip(jobs, counts)])
        cnts = np.fromiter(itertools.chain.from_iterable(counts), dtype=np.int64, count=len(scaled))
        starts = knapsack.starts_of([len(c) for c in counts])
        if self.params.restart_penalty:  # a running job's re-allocation (as sia's)
            now = np.array([len(js.placement) if js.placement else -1 for js in jobs], dtype=np.int64)
            factor = np.array([restart_factor(js, nodes.now_s, nodes.restart_s) if js.placement else 1.0
                               for js in jobs])
            scaled = knapsack.restarted(scaled, cnts, starts, now, factor)
        return power_value(scaled, self.params.p), cnts, starts

    def _scaled(self, js, cnt: tuple[int, ...], nodes) -> np.ndarray:
        """Goodput at each allowed count over goodput on one GPU and per server's GPUs, on
        consolidated placements, cached per (model, batch, progress rounded to DONE_STEP for
        adaptive jobs, counts); the cache is dropped with the speed model it was read from."""
        j = js.job
        adaptive = j.adaptive_batch and noise_scale(j.model) is not None
        done = round(js.done_at(nodes.now_s) / j.work_samples / DONE_STEP) * DONE_STEP if adaptive else 0.0
        key = (j.model, j.local_bsz, j.requested_gpus, adaptive, done, cnt)
        t = self._tables.get(key)
        if t is None:
            table = goodput_table(nodes.speed, j, done, [1, *cnt], nodes.gpus_per_server)
            base, good = float(table[0]), table[1:]
            t = self._tables[key] = good / base / nodes.gpus_per_server if base > 0 else np.zeros_like(good)
        return t

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
