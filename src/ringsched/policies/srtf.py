"""SRTF: shortest remaining time first, preemptive, at the requested size, re-placing.

Remaining time is the job's remaining work (as the world shows it: the truth under exact
estimates, an estimate otherwise) over its throughput at the requested size on a
consolidated placement. At every decision the jobs are served in that order: those that fit
in the cluster's GPUs run, the rest are preempted (Tiresias' SRTF baseline, Gandiva's and
Themis' evaluations). Lower-priority jobs backfill the GPUs that higher-priority ones cannot
use. Running jobs keep their servers, except that a job whose ring is spread over more
servers than its size needs is moved to a consolidated placement as soon as one with fewer
servers is free (it pays a checkpoint-restart): no job keeps a fragmented placement for life.
"""

from __future__ import annotations

import math

import numpy as np

from ringsched.embedding import consolidated
from ringsched.policies.base import Allocations, Policy
from ringsched.policies.common import allocate_in_order_fast, priority_first
from ringsched.policies.registry import register


def replace_fragmented(out: Allocations, order, nodes) -> Allocations:
    """Move every ring of ``out`` spread over more servers than it needs to a placement on
    fewer servers when the free GPUs (plus its own) allow, in priority ``order``."""
    gps = nodes.gpus_per_server
    spread = [js.job_id for js in order
              if (p := out.get(js.job_id)) and len(set(p)) > math.ceil(len(p) / gps)]
    if not spread:
        return out
    free = nodes.capacity.copy()
    for p in out.values():
        np.subtract.at(free, list(p), 1)
    rack = nodes.cluster.rack_index if nodes.cluster.racks else None
    for jid in spread:
        p = out[jid]
        np.add.at(free, list(p), 1)
        q = consolidated(len(p), free, rack)
        if q is not None and len(set(q)) < len(set(p)):
            out[jid] = p = q
        np.subtract.at(free, list(p), 1)
    return out


@register
class Srtf(Policy):
    name = "srtf"

    def optimize(self, jobs, nodes, previous_allocations):
        now = nodes.now_s

        version = nodes.speed_version

        def remaining_s(js):
            # throughput at the requested size changes only when the speed model is refitted
            c = js.extra.get("srtf_rate")
            if c is None or c[0] != version:
                c = js.extra["srtf_rate"] = (version, nodes.throughput_sps(js, self.demand(js)))
            return js.remaining_at(now) / c[1]

        order = sorted(jobs, key=lambda js: priority_first(js, (remaining_s(js), js.job.arrival_s, js.index)))
        out = allocate_in_order_fast([(js, self.demand(js)) for js in order], nodes, previous_allocations)
        return replace_fragmented(out, order, nodes)
