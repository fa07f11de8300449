"""Themis: finish-time fairness through leases and auctions (Mahajan et al., NSDI'20).

The paper: an app's finish-time fairness is rho = T_shared / T_independent (its finish time
in the shared cluster over its finish time alone on 1/N of it). GPUs are granted in leases;
when leases expire, the fraction 1 - f of apps with the worst rho (f = the fairness knob,
0.8 in the paper's evaluation) bid in a partial-allocation auction with placement-sensitive
valuations, and the GPUs the auction leaves over go to the other apps (work conservation).

Here: rho = ((now - arrival) + remaining / rate) / ``js.isolated_s``, where the rate is the
job's planned throughput on its current placement (on a consolidated one at its requested
size when it is not running) and T_isolated is the job alone on an empty cluster. At every
lease boundary (``lease_s``, default ``nodes.slot_s``; ``periodic = True``) the
ceil((1 - f) x N) jobs with the worst rho win in order of worst rho at their requested
size (the auction's outcome when every bidder values a consolidated placement of its
requested size and nothing less: placement is consolidated); the leftover GPUs then go to
the other jobs, running ones first (their lease is renewed in place), then waiting ones,
each in order of worst rho, so a job that did not bid is only preempted by winners. Chosen
running jobs stay where they are. Between lease boundaries nothing is preempted: freed GPUs
go to waiting jobs by worst rho. Simplified: no hidden-payment auction or per-app agents,
no 1/N-cluster T_independent, rigid sizes.
"""

from __future__ import annotations

import math

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order_fast, running_rate_sps
from ringsched.policies.registry import register

_RATE = "themis_rate"  # (policy, placement, planned samples/s there), cached in js.extra


@register
class Themis(Policy):
    name = "themis"
    periodic = True

    def __init__(self, fairness_knob: float = 0.8, lease_s: float | None = None):
        if not 0.0 <= fairness_knob <= 1.0:
            raise ValueError(f"fairness_knob must be in [0, 1], got {fairness_knob}")
        if lease_s is not None and not (math.isfinite(lease_s) and lease_s > 0):
            raise ValueError(f"lease_s must be a positive number, got {lease_s}")
        self.fairness_knob = fairness_knob
        self.lease_s = lease_s
        self._next_lease_s = -math.inf

    def rho(self, js, nodes) -> float:
        """((now - arrival) + remaining / rate) / T_isolated, the rate cached per placement."""
        p = js.placement
        c = js.extra.get(_RATE)
        if c is None or c[0] is not self or c[1] != p:
            rate = running_rate_sps(js, nodes, p) if p else nodes.throughput_sps(js, self.demand(js))
            c = js.extra[_RATE] = (self, p, rate)
        now = nodes.now_s
        return ((now - js.job.arrival_s) + js.remaining_at(now) / c[2]) / js.isolated_s

    def optimize(self, jobs, nodes, previous_allocations):
        now = nodes.now_s
        if len(previous_allocations) == len(jobs) and all(
                len(previous_allocations.get(js.job.job_id, ())) == self.demand(js) for js in jobs):
            return dict(previous_allocations)  # everyone runs: no auction can change anything
        rho = self.rho
        ranked = sorted(jobs, key=lambda js: (-rho(js, nodes), js.job.arrival_s, js.index))
        if now < self._next_lease_s - 1e-9:  # inside a lease: fill freed GPUs only
            return allocate_in_order_fast([(js, self.demand(js)) for js in ranked], nodes,
                                          previous_allocations, preemptive=False)
        self._next_lease_s = now + (self.lease_s or nodes.slot_s)
        n_bid = math.ceil((1.0 - self.fairness_knob) * len(ranked) - 1e-9)
        rest = ranked[n_bid:]
        order = (ranked[:n_bid] + [js for js in rest if previous_allocations.get(js.job_id)]
                 + [js for js in rest if not previous_allocations.get(js.job_id)])
        return allocate_in_order_fast([(js, self.demand(js)) for js in order], nodes, previous_allocations)
