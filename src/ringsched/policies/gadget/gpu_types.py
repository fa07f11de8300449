"""GADGET on a cluster of several GPU types (docs/policies.md, docs/theory.md section 11).

A ring runs on one type (perfmodel/gpus.py), so a plan's ring in a step is embedded on the
servers of one type: the search prices each type's servers with the same per-(server, slot)
prices, computes the ring's progress at that type's step time (the speed model's per-type
parameters), and keeps the plan of largest payoff over the types. The type is therefore
chosen from the prices, per plan, like the servers: a faster type earns its higher price by
finishing sooner with fewer GPU-slots, an idle slower type wins when the fast one is dear.
Plans that run on one type and then on another (``type_switch.py``) are built from the same
per-type searches.

On a cluster of one type there is one view, with no mask: the search is the one it was
before types existed, decision for decision.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TypeView:
    """The servers of one GPU type as the plan search sees them."""

    gpu: str | None  # the type (None: the cluster has one type, the speed model's default)
    mask: np.ndarray | None  # (servers,) bool: servers of this type (None: every server)
    nic_Bps: float  # NIC bandwidth of the type's servers (its first server's)


def type_views(cluster) -> tuple[TypeView, ...]:
    """One view per GPU type of ``cluster``, in order of first appearance."""
    if len(cluster.gpu_types) == 1:
        return (TypeView(None, None, cluster.servers[0].nic_Bps),)
    gpu = np.array([s.gpu for s in cluster.servers])
    return tuple(TypeView(t, gpu == t, next(s.nic_Bps for s in cluster.servers if s.gpu == t))
                 for t in cluster.gpu_types)


def restrict(win, view: TypeView):
    """The price window ``win`` with the servers of other types full (no free GPU, no free NIC
    share): every embedding of the search then lies on ``view``'s type."""
    if view.mask is None:
        return win
    other = ~view.mask
    free, bfree = win.free.copy(), win.bfree.copy()
    free[other] = 0
    bfree[other] = 0.0
    return dataclasses.replace(win, free=free, bfree=bfree)


def placement_gpu(cluster, placement) -> str | None:
    """The GPU type of a placement's servers; None for an empty one or one that mixes types."""
    types = {cluster.servers[s].gpu for s in placement}
    return types.pop() if len(types) == 1 else None


def same_type_configs(Y: np.ndarray, cluster) -> tuple[np.ndarray, list[str | None]]:
    """For per-server worker vectors ``Y`` (configs, servers): which put the ring on one type,
    and that type (None on a one-type cluster) -- the exact subroutine's configurations."""
    views = type_views(cluster)
    if views[0].mask is None:
        return np.ones(len(Y), dtype=bool), [None] * len(Y)
    used = Y > 0
    keep = np.zeros(len(Y), dtype=bool)
    gpus: list[str | None] = [None] * len(Y)
    for v in views:
        on = used.any(axis=1) & ~used[:, ~v.mask].any(axis=1)
        keep |= on
        for i in np.flatnonzero(on):
            gpus[i] = v.gpu
    return keep, gpus


def one_type_free(free: np.ndarray, views: tuple[TypeView, ...], rate_of) -> list[np.ndarray]:
    """Free GPUs per server restricted to each of the cluster's types (``type_views``), the type of
    highest ``rate_of(gpu)`` first (ties: order of first appearance): where lent GPUs are taken
    from, one type per ring."""
    if views[0].mask is None:
        return [free]
    order = sorted(range(len(views)), key=lambda i: -rate_of(views[i].gpu))
    return [np.where(views[i].mask, free, 0) for i in order]


def same_type_only(free: np.ndarray, views: tuple[TypeView, ...], gpu_of: list, placement) -> np.ndarray:
    """``free`` with the servers of other types than ``placement``'s at 0: what a running ring
    may grow onto (a top-up stays on the ring's type); ``views`` and ``gpu_of``: the cluster's
    types and each server's."""
    if views[0].mask is None or not placement:
        return free
    gpu = gpu_of[placement[0]]
    return np.where(next(v.mask for v in views if v.gpu == gpu), free, 0)
