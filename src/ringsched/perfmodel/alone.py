"""A job's fastest run alone on the empty cluster: the reference of Themis' rho and of the
isolated time every world reports (``loop.world.isolated_run_s``).

Every worker count, every set of GPU types, every number k of servers, the ring spread as
evenly as the servers' sizes allow over the first k servers of those types, largest first
(with racks, also rack by rack: ``_orders``), at the speed model's rate of that placement from
the start (``progress_sps``: a ring that spans types runs at its slowest). An adaptive-batch
job's goodput differs by epoch and so may its fastest placement (yolov3 on 4x8 T4: one GPU
early, 32 later): its time alone takes, in every epoch, the fastest placement's goodput, as if
it moved between them for free, a bound no run beats (a run that moved once was 29% faster
than the best single placement, rho 0.72 against that). Packing onto the fewest servers is not
always fastest: on GPUs that share a PCIe switch (T4) more workers per server slow every step,
and 3+3+3 ran a 9-GPU resnet50 ring 1.46x faster than 8+1 (the consolidated run alone then
gave rho < 1 for evenly spread jobs)."""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from ringsched.perfmodel.efficiency import constant_rate, left_after, noise_scale
from ringsched.perfmodel.speed import SpeedModel

_BEST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # speed model -> {key: samples/s}


def fastest_alone_sps(speed: SpeedModel, job, lo: int, hi: int) -> float:
    """The most samples/s (at the job's own batch) of a ``lo``..``hi``-worker ring of ``job``
    run alone on ``speed``'s cluster from its start (0 when no count fits); per worker count,
    cached on the speed model (a refit, which bumps ``speed.version``, starts afresh)."""
    memo = _BEST.setdefault(speed, {})
    orders = memo.get("orders")
    if orders is None:  # (the cluster's, fixed for the speed model)
        orders = memo["orders"] = _server_orders(speed.cluster)
    kind = (job.model, job.local_bsz, job.adaptive_batch, job.requested_gpus if job.adaptive_batch else 0)
    best = 0.0
    for w in range(max(lo, 1), hi + 1):
        key = (speed.version, kind, w)
        r = memo.get(key)
        if r is None:
            r = memo[key] = _fastest_at(speed, job, w, orders)
        best = np.maximum(best, r)
    if np.ndim(best) == 0:
        return float(best)
    ends = noise_scale(job.model).epoch_ends(job.requested_gpus * job.local_bsz)
    return float(constant_rate(left_after(ends, 0.0), best))


def _server_orders(cluster) -> list[list[int]]:
    """For every set of GPU types, the orders to take its servers in (``_orders``)."""
    out = []
    for r in range(1, len(cluster.gpu_types) + 1):
        for chosen in itertools.combinations(cluster.gpu_types, r):
            out += _orders([i for i, s in enumerate(cluster.servers) if s.gpu in chosen], cluster)
    return out


def _fastest_at(speed: SpeedModel, job, w: int, orders: list[list[int]]):
    """The most samples/s of a ``w``-worker ring spread evenly over the first k servers of any
    of ``orders``, for every k that has room (for an adaptive-batch job, per epoch)."""
    c = speed.cluster
    best = 0.0
    for order in orders:
        room = 0
        for k in range(1, min(w, len(order)) + 1):
            room += c.servers[order[k - 1]].gpus
            if room >= w:
                pl = even_placement(w, order[:k], c)
                run = speed.adaptive_run(job, pl)  # (per epoch; None: one rate for the run)
                best = np.maximum(best, speed.progress_sps(job, 0.0, pl) if run is None else run.epoch_sps)
    return best


def _orders(usable: list[int], cluster) -> list[list[int]]:
    """Orders to take servers in: the largest first and, on a cluster with racks, also rack by
    rack starting from each rack (its largest servers first, then the other racks by their
    GPUs): a ring that crosses a rack is never faster, so the k largest servers alone missed
    one-rack rings when racks interleave or a larger server sits in another rack."""
    size = [s.gpus for s in cluster.servers]
    orders = [sorted(usable, key=lambda i: (-size[i], i))]
    racks = cluster.rack_index.tolist()
    if len(cluster.racks) > 1:
        total = {}
        for i in usable:
            total[racks[i]] = total.get(racks[i], 0) + size[i]
        for first in sorted(total):
            orders.append(sorted(usable, key=lambda i: (racks[i] != first, -total[racks[i]], racks[i], -size[i], i)))
    # orders alike server by server (size, links, rack uplink, where a rack starts) give the same
    # rings: one of each (evenly split racks of equal servers leave one or two)
    seen, out = set(), []
    for order in orders:
        sig = tuple((cluster.servers[i].gpus, cluster.servers[i].gpu, cluster.servers[i].intra_Bps,
                     cluster.servers[i].nic_Bps, _uplink(cluster, racks[i]), n == 0 or racks[i] != racks[order[n - 1]])
                    for n, i in enumerate(order))
        if sig not in seen:
            seen.add(sig)
            out.append(order)
    return out


def _uplink(cluster, rack: int) -> float | None:
    return cluster.racks[rack].uplink_Bps if rack >= 0 else None


def even_placement(w: int, servers: list[int], cluster) -> tuple:
    """``w`` workers over every one of ``servers``, as evenly as their sizes allow (the
    smallest servers filled to their share first)."""
    placement, left = [], w
    by_size = sorted(servers, key=lambda i: (cluster.servers[i].gpus, i))
    for n, i in enumerate(by_size):
        take = min(cluster.servers[i].gpus, -(-left // (len(by_size) - n)))
        placement += [i] * take
        left -= take
    return tuple(sorted(placement))
