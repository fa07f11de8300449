"""SJF-BCO: smallest job first with balanced contention and overhead (Yu, Liu et al.,
"On Scheduling Ring-All-Reduce Learning Jobs in Multi-Tenant GPU Clusters with
Communication Contention", MobiHoc'22).

The paper: rings that cross servers share NICs, so a job's speed depends on how many other
rings use the NICs of its servers (contention), while spreading a ring over more servers
adds communication overhead. SJF-BCO schedules jobs smallest first, once each, and places
each one by trying server counts and picking the placement that balances contention (the
least-loaded servers) against overhead (fewer servers).

Here: jobs run at their requested size and are never preempted or moved (running jobs keep
their placements). Waiting jobs are served smallest first, size = remaining samples /
throughput at the requested size on a consolidated placement (ties by arrival), and a job
that does not fit is skipped (the next smaller ones may start). A job that fits on one
server goes to the fullest server that can hold it (no NIC use). Otherwise the trade-off
between contention and overhead is searched by contention level: for every level L (a
number of cross-server rings already on a NIC, counted from the kept placements and those
made earlier in this decision), the candidate uses only servers with at most L rings,
as few of them as possible (most free GPUs first, then least ring load, then lowest index):
a low L means little contention but possibly many servers, a high L fewer servers but
shared NICs. Its predicted step time is ``nodes.speed.step_time_s(model, bsz, shape,
inter_Bps=nic_Bps / (1 + rings on the busiest chosen NIC))``; the fastest candidate wins
(ties: fewer servers, then lower L). Server counts between these candidates are not tried:
at the same contention, more servers only add overhead. Simplified: one NIC per server,
rings counted equal whatever their traffic, no time-slotted offline analysis.
"""

from __future__ import annotations

import heapq

import numpy as np

from ringsched.embedding.consolidated import counts_to_placement
from ringsched.policies.base import Policy
from ringsched.policies.common import priority_first, take_all, take_placement
from ringsched.policies.registry import register

_KEY = "sjf_bco_key"  # (policy, done_samples, (-priority, size, arrival, index), speed version) in js.extra


@register
class SjfBco(Policy):
    name = "sjf-bco"

    def optimize(self, jobs, nodes, previous_allocations):
        free = nodes.capacity.copy()
        rings = np.zeros(free.size, dtype=np.int64)  # cross-server rings using each NIC
        kept = list(previous_allocations.items())
        out = {}
        for (jid, p), ok in zip(kept, take_all(free, [p for _, p in kept])):
            if ok:  # running jobs stay (always, unless their servers' capacity shrank)
                out[jid] = p
                if p[0] != p[-1]:
                    rings[list(set(p))] += 1
        left = int(free.sum())
        if left == 0:
            return out
        demand = self.demand
        heap = [(self._key(js, nodes), js) for js in jobs
                if js.job.job_id not in out and demand(js) <= left]
        heapq.heapify(heap)  # smallest first, popped only while GPUs are left
        nic = None
        while heap and left > 0:
            js = heapq.heappop(heap)[1]
            w = demand(js)
            if w > left:
                continue
            if nic is None:
                nic = np.array([s.nic_Bps for s in nodes.cluster.servers], dtype=float)
            p = self._place(js, w, free, rings, nic, nodes)
            if p is None:
                continue
            take_placement(free, p)
            left -= w
            out[js.job.job_id] = p
            if p[0] != p[-1]:
                rings[list(set(p))] += 1
        return out

    def _key(self, js, nodes):
        """(-priority, size, arrival, index); a waiting job's size only changes when its progress does."""
        c = js.extra.get(_KEY)
        if c is None or c[0] is not self or c[1] != js.done_samples or c[3] != nodes.speed_version:
            size = js.remaining_at(nodes.now_s) / nodes.throughput_sps(js, self.demand(js))
            c = js.extra[_KEY] = (self, js.done_samples, priority_first(js, (size, js.job.arrival_s, js.index)),
                                  nodes.speed_version)
        return c[2]

    @staticmethod
    def _place(js, w, free, rings, nic, nodes):
        fits = np.flatnonzero(free >= w)
        if fits.size:  # one server: best fit, no NIC
            return (int(fits[np.argmin(free[fits])]),) * w
        cand = np.flatnonzero(free > 0)
        j = js.job
        best, best_key = None, None
        for level in np.unique(rings[cand]):  # allow NICs with at most `level` rings
            ok = cand[rings[cand] <= level]
            order = ok[np.lexsort((ok, rings[ok], -free[ok]))]  # most free, then least loaded
            cum = np.cumsum(free[order])
            k = int(np.searchsorted(cum, w)) + 1
            if k > order.size:
                continue
            chosen = order[:k]
            counts = np.zeros_like(free)
            counts[chosen] = np.minimum(free[chosen], w - np.concatenate(([0], cum[:k - 1])))
            p = counts_to_placement(counts)
            bw = float(nic[chosen].min()) / (1 + int(rings[chosen].max()))
            t = nodes.speed.step_time_s(j.model, j.local_bsz, nodes.speed.shape(p), inter_Bps=bw)
            key = (round(t, 12), k)
            if best_key is None or key < best_key:
                best, best_key = p, key
        return best
