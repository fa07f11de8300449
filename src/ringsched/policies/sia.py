"""Sia: goodput-optimised allocation over several GPU types, one MILP per round
(Jayaram Subramanya et al., SOSP'23).

The paper and its artifact (siasosp23/artifacts, ``sia-simulator/sia.py``): each job has a
goodput (throughput x statistical efficiency, Pollux's) for every configuration (GPU type,
number of GPUs), where the counts of a type with G GPUs per node are 1, 2, 4, ... up to G on
one node, then whole nodes (2G, 3G, ...; here ``pollux.server_counts``: the powers of two
that divide G); a rigid job has one configuration per type (its
GPU count). Goodputs are normalised by the job's smallest positive one, raised to the power
p (default -0.5) and clipped at 3,000; every configuration but the job's current one is
multiplied by Pollux's restart factor (age - restarts x delay) / (age + delay) (1 while the
job is younger than the delay); one integer program per round picks at most one
configuration per job under each type's GPU count, minimising (p < 0) the sum of the chosen
terms plus lambda_n = 1.1 per job left without GPUs (for p > 0 it maximises the terms minus
that penalty).

Here: goodputs come from ringsched's model (``perfmodel/goodput.py``) on consolidated
placements of each type; the program is solved by HiGHS (``scipy.optimize.milp``, relative
gap 1e-4 as the artifact's, time limit ``time_limit_s``), or, on a cluster of one GPU type,
where it has a single capacity row, exactly by Pollux's knapsack DP (``knapsack.solve``); the artifact's rounding of the
terms to two decimals and its migration and non-preemptible rules are left out. Placement, per
type: jobs whose (type, count) is unchanged keep their servers; the others go largest first,
one node (the fullest that holds it) or whole empty nodes of their type, shrinking to a
smaller configuration of that type when fragmentation leaves no room. Periodic, like Pollux.
"""

from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix

from ringsched.perfmodel.efficiency import noise_scale
from ringsched.perfmodel.goodput import goodput_table
from ringsched.policies import knapsack
from ringsched.policies.base import Policy
from ringsched.policies.common import queue_key, take_all
from ringsched.policies.pollux import DONE_STEP, place_one, restart_factor, server_counts
from ringsched.policies.registry import register

CLIP = 3000.0  # largest term (the artifact's sia_goodput_clip_val)


@contextmanager
def _quiet_stdout():
    """HiGHS' MIP code prints debug lines to file descriptor 1 whatever its options say
    ("HighsMipSolverData::transformNewIntegerFeasibleSolution ..."), which would corrupt
    ``--json`` output: point fd 1 at /dev/null while it solves."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


@dataclass(frozen=True)
class SiaParams:
    p: float = -0.5  # fairness knob: the power of the normalised goodput
    lambda_n: float = 1.1  # cost of leaving a job without GPUs
    time_limit_s: float = 1.5  # HiGHS time limit per round (the best solution found is used)

    def __post_init__(self) -> None:
        if not math.isfinite(self.p) or self.p == 0:
            raise ValueError(f"p must be a finite non-zero number, got {self.p}")
        if not (math.isfinite(self.lambda_n) and self.lambda_n >= 0):
            raise ValueError(f"lambda_n must be >= 0, got {self.lambda_n}")
        if not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise ValueError(f"time_limit_s must be > 0, got {self.time_limit_s}")


@register
class Sia(Policy):
    name = "sia"
    rigid = False
    periodic = True
    Params = SiaParams

    def __init__(self, params: SiaParams | None = None, **overrides):
        self.params = params or SiaParams(**overrides)
        self._speed, self._speed_version = None, 0
        self._cache: dict[tuple, np.ndarray] = {}
        self._types_memo = None  # (cluster, servers up, types, kinds) of the last round
        self.last_status = ""  # how the last round was solved (benchmarks/pollux_sia_speed.py counts it)

    def optimize(self, jobs, nodes, previous_allocations):
        jobs = sorted(jobs, key=queue_key)
        if not jobs:
            return {}
        if self._speed is not nodes.speed or self._speed_version != nodes.speed.version:  # refitted: stale
            self._speed, self._speed_version, self._cache = nodes.speed, nodes.speed.version, {}
        types, kinds = self._types(nodes)
        configs = [self._configs(js, types, kinds, nodes) for js in jobs]
        chosen = self._solve(jobs, configs, types)
        return self._place(jobs, chosen, configs, types, nodes, previous_allocations)

    def _types(self, nodes) -> tuple[dict[str, tuple[np.ndarray, int, int]], tuple]:
        """type -> (its servers, GPUs per server, GPUs up), and the same without the server
        lists (what goodput tables depend on: a cache key); kept while the servers up are."""
        up = nodes.up.tobytes()
        memo = self._types_memo
        if memo is None or memo[0] is not nodes.cluster or memo[1] != up:
            out = {}
            gpu = np.array([s.gpu for s in nodes.cluster.servers])
            cap = nodes.capacity
            for t in nodes.cluster.gpu_types:
                idx = np.flatnonzero(gpu == t)
                out[t] = (idx, int(nodes.cluster.gpus[idx].max()), int(cap[idx].sum()))
            kinds = tuple((t, gps, len(idx), n_up) for t, (idx, gps, n_up) in out.items())
            memo = self._types_memo = (nodes.cluster, up, out, kinds)
        return memo[2], memo[3]

    def _configs(self, js, types, kinds, nodes) -> list[tuple[str, int, float]]:
        """(type, count, term) of every configuration the job may get; a job without GPUs has
        no restart factor, so its list is cached whole (the same floats as computed afresh)."""
        j = js.job
        adaptive = j.adaptive_batch and noise_scale(j.model) is not None
        done = round(js.done_at(nodes.now_s) / j.work_samples / DONE_STEP) * DONE_STEP if adaptive else 0.0
        key = (j.model, j.local_bsz, j.requested_gpus, j.min_workers, j.max_workers, j.rigid, adaptive, done, kinds)
        norms = self._cache.get(key)
        if norms is None:
            norms = self._cache[key] = self._norms(j, done, types, nodes)
        if not js.placement:
            terms = self._cache.get(("terms", key))
            if terms is None:
                terms = self._cache[("terms", key)] = [(t, w, self._term(n)) for t, w, n in norms]
            return terms
        now = (nodes.speed.cluster.servers[js.placement[0]].gpu, len(js.placement))
        factor = restart_factor(js, nodes.now_s, nodes.restart_s)
        if nodes.now_s - j.arrival_s < nodes.restart_s:
            factor = 1.0
        return [(t, w, self._term(n * (1.0 if (t, w) == now else factor))) for t, w, n in norms]

    def _term(self, norm: float) -> float:
        try:
            return min(max(norm, 1e-12) ** self.params.p, CLIP)
        except OverflowError:  # (a large |p|: the power passes the float range, so it is past the clip)
            return CLIP

    @staticmethod
    def _norms(j, done: float, types, nodes) -> list[tuple[str, int, float]]:
        """(type, count, goodput over the job's smallest positive goodput) of each configuration."""
        raw = []
        for t, (idx, gps, up) in types.items():
            top = min(j.max_workers, up)
            counts = [j.requested_gpus] if j.rigid else server_counts(gps, len(idx))
            counts = tuple(w for w in counts if j.min_workers <= w <= top) or \
                ((j.min_workers,) if j.min_workers <= top else ())
            g = goodput_table(nodes.speed, j, done, counts, gps, t)
            raw += [(t, w, float(x)) for w, x in zip(counts, g) if x > 0]
        low = min((g for _, _, g in raw), default=1.0)
        return [(t, w, g / low) for t, w, g in raw]

    def _solve(self, jobs, configs, types) -> list[tuple[str, int] | None]:
        """The MILP: one binary per (job, configuration); None for a job left without GPUs."""
        n = sum(len(c) for c in configs)
        if n == 0:
            return [None] * len(jobs)
        lam, p = self.params.lambda_n, self.params.p
        if len(types) == 1:  # one capacity row: the knapsack DP solves it exactly, faster
            gain = [0.0] * (n + len(configs))  # each job's options: count 0 (no GPUs), then its configurations
            cnts = [0] * len(gain)
            k = 0
            for cfg in configs:
                for _, w, term in cfg:
                    k += 1
                    gain[k], cnts[k] = (lam - term if p < 0 else term + lam), w
                k += 1
            t = next(iter(types))
            got = knapsack.solve(np.array(gain), np.array(cnts, dtype=np.int64),
                                 knapsack.starts_of([1 + len(c) for c in configs]), types[t][2])
            self.last_status = "knapsack (one GPU type)"
            return [(t, w) if w else None for w in got]
        cost = np.empty(n)
        rows, cols, vals = [], [], []  # job rows, then one capacity row per type
        tindex = {t: i for i, t in enumerate(types)}
        k = 0
        for ji, cfg in enumerate(configs):
            for t, w, term in cfg:
                cost[k] = term - lam if p < 0 else -(term + lam)
                rows += [ji, len(jobs) + tindex[t]]
                cols += [k, k]
                vals += [1.0, float(w)]
                k += 1
        a = csr_matrix((vals, (rows, cols)), shape=(len(jobs) + len(types), n))
        upper = np.concatenate([np.ones(len(jobs)), [float(types[t][2]) for t in types]])
        with _quiet_stdout():
            res = milp(cost, constraints=LinearConstraint(a, -np.inf, upper), integrality=np.ones(n),
                       bounds=Bounds(0, 1), options={"time_limit": self.params.time_limit_s, "mip_rel_gap": 1e-4})
        self.last_status = res.message
        if res.x is None:
            return [None] * len(jobs)
        x = res.x > 0.5
        out, k = [], 0
        for cfg in configs:
            pick = None
            for t, w, _ in cfg:
                if x[k]:
                    pick = (t, w)
                k += 1
            out.append(pick)
        return out

    def _place(self, jobs, chosen, configs, types, nodes, previous):
        free = nodes.capacity.copy()
        servers = nodes.cluster.servers
        out = {}
        keep = [(js.job_id, p) for js, c in zip(jobs, chosen) if c is not None
                and len(p := previous.get(js.job_id, ())) == c[1] and servers[p[0]].gpu == c[0]]
        for (jid, p), ok in zip(keep, take_all(free, [p for _, p in keep])):
            if ok:
                out[jid] = p
        order = sorted((i for i, c in enumerate(chosen) if c is not None and jobs[i].job_id not in out),
                       key=lambda i: (-chosen[i][1],) + queue_key(jobs[i]))
        for i in order:
            t, w = chosen[i]
            idx, gps, _ = types[t]
            sub = free[idx]
            for c in sorted((c for tt, c, _ in configs[i] if tt == t and c <= w), reverse=True):
                p = place_one(c, sub, gps)
                if p is not None:
                    free[idx] = sub
                    out[jobs[i].job_id] = tuple(int(idx[s]) for s in p)
                    break
        return out
