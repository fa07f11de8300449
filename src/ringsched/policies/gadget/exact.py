"""The exact per-job subroutine (``subroutine=exact``; docs/theory.md, section 4).

Every configuration (per-server worker vector within the job's bounds and ``max_per_server``)
on one GPU type (a ring runs on one type; its progress at that type's speed)
is an option in every step it fits (free GPUs, and the ring's NIC share on every server it
crosses), at cost sum_s y_s gp_s + [k > 1] sum_{s: y_s > 0} bp_s; ``plan.best_plan``, a
dynamic program over steps x integer progress, returns the first-completion plan of largest
payoff. Work is counted in whole samples and configurations are enumerated, so it is meant for
small instances (``optimum-check`` drives it); with one slot per step (``max_steps`` at least
the window) it is the theorem's subroutine, beta = 1.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ringsched.embedding import counts_to_placement
from ringsched.errors import InputError
from ringsched.policies.gadget.book import Plan
from ringsched.policies.gadget.gpu_types import same_type_configs
from ringsched.policies.gadget.plan import best_plan

MAX_CONFIGS = 100_000
MAX_UNITS = 1_000_000


def configurations(job, cluster, cap: int | None) -> np.ndarray:
    """(configs, servers) every per-server worker vector of ``job``: at most min(O_s, cap) on
    server s, a total within the job's worker bounds."""
    hi = [int(o) if cap is None else min(int(o), cap) for o in cluster.gpus]
    if math.prod(h + 1 for h in hi) > MAX_CONFIGS:
        raise InputError(f"subroutine=exact: more than {MAX_CONFIGS} configurations on this cluster; "
                         "it is for small instances (optimum-check)", field="policy")
    lo_w, hi_w = job.min_workers, min(job.max_workers, cluster.total_gpus)
    ys = [y for y in itertools.product(*(range(h + 1) for h in hi)) if lo_w <= sum(y) <= hi_w]
    return np.asarray(ys, dtype=np.int64).reshape(len(ys), len(hi))


def _table(search, job, nodes, step_len_s: float):
    """(Y, units per step, crosses servers) of the configurations that progress, lightest first
    (then most progress, then by vector: ties in the dynamic program go to the first)."""
    key = (job.model, job.local_bsz, job.min_workers, job.max_workers, step_len_s)
    t = search.exact_tables.get(key)
    if t is None:
        c = nodes.cluster
        Y = configurations(job, c, search.p.max_per_server)
        Y = Y[Y.sum(axis=1) <= search.p.most_workers(job, c.total_gpus)]  # (the lane, ``lane_gpus``)
        one_type, gpus = same_type_configs(Y, c)  # a ring runs on one GPU type
        views = {v.gpu: v for v in search.views(c)}
        Y, gpus = Y[one_type], [g for g, keep in zip(gpus, one_type) if keep]
        k = (Y > 0).sum(axis=1)
        units = np.array([math.floor(search.plan_rate(nodes, job, int(y.sum()), int(kk), int(y.max()), views[g])
                                     * step_len_s + 1e-9) for y, kk, g in zip(Y, k, gpus)], dtype=np.int64)
        multi = k > 1
        nic = search.p.nic_share if search.ring_aware else 0.0
        demand = np.array([float((y / c.gpus).sum() + (nic * kk if kk > 1 else 0.0)) for y, kk in zip(Y, k)])
        keep = units > 0
        Y, units, multi, demand = Y[keep], units[keep], multi[keep], demand[keep]
        order = np.lexsort(tuple(Y[:, s] for s in range(Y.shape[1] - 1, -1, -1)) + (-units, demand))
        t = search.exact_tables[key] = (Y[order], units[order], multi[order] & search.ring_aware)
    return t


def exact_plan(search, job, remaining: float, nodes, slot: int, win) -> Plan | None:
    """The plan of largest payoff over every configuration in every step of ``win`` (None when
    no plan completes in it)."""
    Y, units, multi = _table(search, job, nodes, win.step_len_s)
    if not len(Y):
        return None
    need = math.ceil(remaining - 1e-9)
    if need > MAX_UNITS:
        raise InputError(f"subroutine=exact: {need} samples of work; it counts work in samples and is for "
                         "small instances (optimum-check)", field="policy")
    used = Y > 0
    cost = Y @ win.gp + (multi[:, None] * (used @ win.bp))  # (configs, steps)
    fit = np.all(Y[:, :, None] <= win.free[None], axis=1)
    nic_ok = win.bfree >= search.p.nic_share - 1e-9
    fit &= np.all(~(used & multi[:, None])[:, :, None] | nic_ok[None], axis=1)
    cost = np.where(fit, cost, np.inf).T
    u = np.broadcast_to(units, cost.shape)
    ch = best_plan(cost, u, u.astype(float), max(need, 1), win.starts_s, win.step_len_s, job.utility, job.arrival_s)
    if ch is None:
        return None
    segments: list[tuple[int, int, tuple]] = []
    for i, o in enumerate(ch.options):
        if o < 0:
            continue
        pl = counts_to_placement(Y[o])
        a, z = slot + i * win.b, slot + (i + 1) * win.b
        if segments and segments[-1][2] == pl and segments[-1][1] == a:
            segments[-1] = (segments[-1][0], z, pl)
        else:
            segments.append((a, z, pl))
    return Plan(segments, ch.finish_s, ch.payoff, ch.cost)
