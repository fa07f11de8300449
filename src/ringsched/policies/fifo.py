"""FIFO: first come, first served, at the requested size, never preempting.

Strict head-of-line order (no backfilling): a job that does not fit blocks those behind it,
as in a plain FIFO queue. Placement is consolidated.
"""

from __future__ import annotations

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order
from ringsched.policies.registry import register


@register
class Fifo(Policy):
    name = "fifo"

    def optimize(self, jobs, nodes, previous_allocations):
        # jobs arrive in arrival order; a generator keeps a long queue from being walked
        order = ((js, self.demand(js)) for js in jobs)
        return allocate_in_order(order, nodes, previous_allocations, preemptive=False, backfill=False)
