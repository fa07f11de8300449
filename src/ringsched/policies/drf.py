"""DRF: Dominant Resource Fairness across tenants (Ghodsi et al., NSDI'11).

The paper: each user's dominant share is its largest share of any resource; progressive
filling repeatedly gives the next task to the user with the smallest dominant share, which
is Pareto-efficient, strategy-proof and envy-free for divisible, per-task demands.

Here: the users are tenants (``job.tenant``; a job with tenant "" is a tenant on its own)
and the resources are GPUs and NIC bandwidth. A ring over k > 1 servers uses one NIC's
worth of bandwidth on each of its k servers (a running job counts its current servers, a
waiting one ceil(w / GPUs per server) servers); a single-server ring uses none. The cluster
has one NIC per server in service. A tenant's dominant share is max(GPU share, NIC share).

Progressive filling is at job granularity and recomputed from scratch at every decision
(preemptive): repeatedly pick the tenant with the smallest dominant share that has a job
that still fits in the free GPUs (ties: the tenant whose next job arrived first), and start
its oldest job that fits at the requested size. Priority comes before fairness: a tenant's
jobs queue by priority, then arrival (``queue_key``), and the tenant whose next job has the
highest priority is picked first, by smallest dominant share among those. Jobs that no longer fit wait. The resulting
order goes to ``allocate_in_order``, which keeps chosen running jobs in place.

Simplifications: NIC bandwidth enters the shares but is not a hard capacity (rings may share
a NIC, as in the simulator, which slows them); all tenants have equal weight; rigid sizes.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order_fast, queue_key, tenant_of
from ringsched.policies.registry import register


@register
class Drf(Policy):
    name = "drf"

    def optimize(self, jobs, nodes, previous_allocations):
        total_gpus = float(nodes.capacity.sum())
        total_nics = float(nodes.up.sum()) or 1.0
        if total_gpus <= 0:
            return {}
        queues = self._queues(jobs)
        g, demand, get = nodes.gpus_per_server, self.demand, previous_allocations.get
        heap = [(-q[0].job.priority, 0.0, queue_key(q[0]), t) for t, q in queues.items()]
        heapq.heapify(heap)
        pos = dict.fromkeys(queues, 0)
        used = {t: [0, 0] for t in queues}  # GPUs, NICs
        budget = int(total_gpus)
        order = []
        while heap and budget > 0:
            t = heapq.heappop(heap)[3]
            q, i = queues[t], pos[t]
            while i < len(q) and demand(q[i]) > budget:  # never fits again in this decision
                i += 1
            if i == len(q):
                continue
            js = q[i]
            w = demand(js)
            pos[t] = i + 1
            order.append((js, w))
            budget -= w
            prev = get(js.job.job_id, ())
            if len(prev) == w:
                k = 1 if prev[0] == prev[-1] else len(set(prev))
            else:
                k = -(-w // g)
            u = used[t]
            u[0] += w
            if k > 1:
                u[1] += k
            if i + 1 < len(q):
                share = max(u[0] / total_gpus, u[1] / total_nics)
                heapq.heappush(heap, (-q[i + 1].job.priority, share, queue_key(q[i + 1]), t))
        # jobs left out never fit in what the chosen ones leave, so they need not be listed
        return allocate_in_order_fast(order, nodes, previous_allocations)

    @staticmethod
    def _queues(jobs) -> dict[str, list]:
        """Tenant -> its jobs in queue order (``queue_key``)."""
        queues: dict[str, list] = defaultdict(list)
        last_p, last_a, last_i = math.inf, -math.inf, -1
        for js in jobs:  # the simulator lists jobs oldest first: check (queue_key, inlined) rather than sort
            p, a = js.job.priority, js.job.arrival_s
            if p > last_p or (p == last_p and (a < last_a or (a == last_a and js.index < last_i))):
                break
            last_p, last_a, last_i = p, a, js.index
            queues[js.job.tenant or tenant_of(js)].append(js)
        else:
            return queues
        queues = defaultdict(list)
        for js in sorted(jobs, key=queue_key):
            queues[tenant_of(js)].append(js)
        return queues
