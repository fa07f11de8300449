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
its oldest job that fits at the requested size. Jobs that no longer fit wait. The resulting
order goes to ``allocate_in_order``, which keeps chosen running jobs in place.

Simplifications: NIC bandwidth enters the shares but is not a hard capacity (rings may share
a NIC, as in the simulator, which slows them); all tenants have equal weight; rigid sizes.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order_fast, arrival_key, tenant_of
from ringsched.policies.registry import register


@register
class Drf(Policy):
    name = "drf"

    def optimize(self, jobs, nodes, previous_allocations):
        cap = nodes.capacity
        total_gpus = float(cap.sum())
        total_nics = float(nodes.up.sum())
        if total_gpus <= 0:
            return {}
        g = nodes.gpus_per_server
        demand = self.demand
        queues: dict[str, list] = defaultdict(list)
        for js in sorted(jobs, key=arrival_key):
            queues[tenant_of(js)].append((js, demand(js)))
        heap = [(0.0, arrival_key(q[0][0]), t) for t, q in queues.items()]
        heapq.heapify(heap)
        pos = dict.fromkeys(queues, 0)
        used = {t: [0, 0] for t in queues}  # GPUs, NICs
        budget = int(total_gpus)
        order = []
        while heap and budget > 0:
            _, _, t = heapq.heappop(heap)
            q, i = queues[t], pos[t]
            while i < len(q) and q[i][1] > budget:  # never fits again in this decision
                i += 1
            if i == len(q):
                continue
            js, w = q[i]
            pos[t] = i + 1
            order.append((js, w))
            budget -= w
            prev = previous_allocations.get(js.job.job_id, ())
            k = len(set(prev)) if len(prev) == w else -(-w // g)
            u = used[t]
            u[0] += w
            u[1] += k if k > 1 else 0
            if i + 1 < len(q):
                share = max(u[0] / total_gpus, u[1] / total_nics if total_nics else 0.0)
                heapq.heappush(heap, (share, arrival_key(q[i + 1][0]), t))
        # jobs left out never fit in what the chosen ones leave, so they need not be listed
        return allocate_in_order_fast(order, nodes, previous_allocations)
