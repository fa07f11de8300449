"""FIFO: first come, first served, at the requested size, never preempting, backfilling.

Jobs are served in arrival order (by priority first, ``common.queue_key``); a job that does not fit in the free GPUs now is passed over
and the jobs behind it are offered the GPUs (backfilling), as the FIFO baselines of the
Tiresias and Alibaba PAI simulators and Blox's FIFO do: the head of the queue never leaves
GPUs idle that a later job could use. Running jobs keep their servers; new ones are placed
consolidated. Strict head-of-line FIFO, where the first job that does not fit blocks all
behind it, is ``fifo-strict`` (fifo_strict.py).
"""

from __future__ import annotations

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order, in_queue_order
from ringsched.policies.registry import register


@register
class Fifo(Policy):
    name = "fifo"

    def optimize(self, jobs, nodes, previous_allocations):
        # a generator keeps a long queue from being walked past the GPUs
        order = ((js, self.demand(js)) for js in in_queue_order(jobs))
        return allocate_in_order(order, nodes, previous_allocations, preemptive=False, backfill=True)
