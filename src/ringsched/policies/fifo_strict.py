"""Strict FIFO: first come, first served, at the requested size, never preempting, no backfill.

Head-of-line order (by priority first, then arrival: ``common.queue_key``): a job that does not fit blocks those behind it, as in a plain FIFO queue
(the policy ``fifo`` was this one before it backfilled). Placement is consolidated.
"""

from __future__ import annotations

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order, in_queue_order
from ringsched.policies.registry import register


@register
class FifoStrict(Policy):
    name = "fifo-strict"

    def optimize(self, jobs, nodes, previous_allocations):
        order = ((js, self.demand(js)) for js in in_queue_order(jobs))
        return allocate_in_order(order, nodes, previous_allocations, preemptive=False, backfill=False)
