"""SRTF: shortest remaining time first, preemptive, at the requested size.

Remaining time is the job's remaining work over its throughput at the requested size on a
consolidated placement (an oracle: the simulator knows the work). Lower-priority jobs
backfill the GPUs that higher-priority ones cannot use.
"""

from __future__ import annotations

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order_fast
from ringsched.policies.registry import register


@register
class Srtf(Policy):
    name = "srtf"

    def optimize(self, jobs, nodes, previous_allocations):
        now = nodes.now_s

        def remaining_s(js):
            rate = js.extra.get("srtf_rate")  # throughput at the requested size never changes
            if rate is None:
                rate = js.extra["srtf_rate"] = nodes.throughput_sps(js, self.demand(js))
            return js.remaining_at(now) / rate

        order = sorted(jobs, key=lambda js: (remaining_s(js), js.job.arrival_s, js.index))
        return allocate_in_order_fast([(js, self.demand(js)) for js in order], nodes, previous_allocations)
