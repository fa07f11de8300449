"""Optimus: greedy marginal-gain resource allocation (Peng et al., EuroSys'18).

The paper: fit each job's convergence curve (remaining steps) and speed function, then
allocate resources greedily: every job first gets one unit (a parameter server and a worker
there), then repeatedly the unit goes to the job whose estimated completion time drops the
most per unit of resource, until resources run out or no job gains; tasks are then placed
on the fewest servers, largest jobs first.

Here (elastic, ``rigid = False``): the remaining work is known (the simulator's oracle, as
for SRTF) and the speed function is ``nodes.throughput_sps(js, w)`` (consolidated). Every
active job first gets ``min_workers`` (one worker for elastic jobs; in order of arrival,
skipping jobs that do not fit, while GPUs last); then a max-heap repeatedly adds one worker
to the job with the largest marginal gain remaining_time(w) - remaining_time(w + 1) (per
GPU; ties by arrival), up to ``max_workers``, until the GPUs run out or no gain is positive.
A job whose gain is not positive stops growing (gains are not assumed to be concave). Placement: jobs whose
worker count is unchanged keep their servers; the others are placed consolidated, largest
first (ties by arrival); a job that cannot be placed shrinks one worker at a time (down to
``min_workers``) until it fits, or waits. ``admit`` rejects only jobs whose min_workers
exceed the cluster. No parameter servers (rings), no online curve fitting.
"""

from __future__ import annotations

import heapq
import math

from ringsched.embedding import consolidated
from ringsched.perfmodel.speed import consolidated_shape
from ringsched.policies.base import Policy
from ringsched.policies.common import queue_key, take_all, take_placement
from ringsched.policies.registry import register


@register
class Optimus(Policy):
    name = "optimus"
    rigid = False

    def __init__(self):
        self._speed, self._speed_version = None, -1  # the model (and its version) of the tables
        self._inv: dict[tuple[str, int], list[float]] = {}  # 1 / throughput at w workers

    def optimize(self, jobs, nodes, previous_allocations):
        free = nodes.capacity.copy()
        budget = int(free.sum())
        workers: dict[str, int] = {}
        growing = []
        for js in sorted(jobs, key=queue_key):
            w0 = js.job.min_workers
            if w0 > budget:
                continue
            workers[js.job.job_id] = w0
            budget -= w0
            if w0 < js.job.max_workers:
                growing.append(js)
        if budget > 0 and growing:  # marginal gains, largest first
            budget = self._grow(growing, workers, budget, nodes)

        by_id = {js.job.job_id: js for js in jobs}
        out = {}
        keep = [(jid, p) for jid, w in workers.items() if len(p := previous_allocations.get(jid, ())) == w]
        for (jid, p), ok in zip(keep, take_all(free, [p for _, p in keep])):
            if ok:  # unchanged sizes keep their servers
                out[jid] = p
        rest = sorted((jid for jid in workers if jid not in out),
                      key=lambda jid: (-workers[jid],) + queue_key(by_id[jid]))
        rack = nodes.cluster.rack_index if nodes.cluster.racks else None
        for jid in rest:
            for w in range(workers[jid], by_id[jid].job.min_workers - 1, -1):
                p = consolidated(w, free, rack)
                if p is not None:
                    take_placement(free, p)
                    out[jid] = p
                    break
        return out

    def _grow(self, growing, workers, budget, nodes) -> int:
        """Add one worker at a time to the job with the largest gain (a max-heap; a job keeps
        taking workers without heap operations while its gain still beats the best other)."""
        now, gps = nodes.now_s, nodes.gpus_per_server
        if self._speed is not nodes.speed or self._speed_version != nodes.speed_version:
            self._speed, self._speed_version, self._inv = nodes.speed, nodes.speed_version, {}  # refitted: stale
        heap, tables = [], self._inv
        for js in growing:
            j = js.job
            inv = tables.get((j.model, j.local_bsz))
            if inv is None or len(inv) <= j.max_workers:
                inv = self._table(j, j.max_workers, nodes, gps)
            w, rem = workers[j.job_id], js.remaining_at(now)
            gain = rem * (inv[w] - inv[w + 1])
            if gain > 0:
                heap.append((-gain, j.arrival_s, js.index, w, rem, inv, j))
        heapq.heapify(heap)
        while heap and budget > 0:
            _, arr, idx, w, rem, inv, j = heapq.heappop(heap)
            w += 1
            budget -= 1
            top = heap[0] if heap else (0.0, math.inf, 0)
            while budget > 0 and w < j.max_workers:
                gain = rem * (inv[w] - inv[w + 1])
                if gain <= 0:
                    break
                if (-gain, arr, idx) < top[:3]:  # it would be popped again right away
                    w += 1
                    budget -= 1
                else:
                    heapq.heappush(heap, (-gain, arr, idx, w, rem, inv, j))
                    break
            workers[j.job_id] = w
        return budget

    def _table(self, j, w_max, nodes, gps) -> list[float]:
        """1 / throughput of (model, batch) at 0..w_max workers, consolidated (cached)."""
        inv = self._inv.setdefault((j.model, j.local_bsz), [math.inf])
        while len(inv) <= w_max:
            inv.append(1.0 / nodes.speed.throughput_sps(j.model, j.local_bsz, consolidated_shape(len(inv), gps)))
        return inv
