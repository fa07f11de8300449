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

Speed: between two changes of a job's progress bookkeeping its rho is linear in time, so
two coefficients per job are cached; and after a decision that changed nothing, the same
answer is given without re-ranking until something happens (an arrival, a completion, a
failure) or a waiting job's rising rho can reach the bidders' (a computed time).
"""

from __future__ import annotations

import math
from itertools import chain
from operator import itemgetter

from ringsched.policies.base import Policy
from ringsched.policies.common import allocate_in_order_fast, running_rate_sps
from ringsched.policies.registry import register

_RHO = "themis_rho"  # (policy, progress bookkeeping, planned rate, rho = base + slope x t)


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
        self._hold = None  # (valid until, jobs, servers up, the answer that changed nothing)
        self._now_s = -math.inf

    def rho(self, js, nodes) -> float:
        """((now - arrival) + remaining / rate) / T_isolated."""
        c = self._coef(js, nodes)
        now = nodes.now_s
        if now >= c[5]:
            return c[7] + c[6] * now
        return ((now - js.job.arrival_s) + js.remaining_at(now) / c[4]) / js.isolated_s  # restarting

    def _coef(self, js, nodes) -> tuple:
        """Between two changes of a job's progress bookkeeping its rho is linear in time
        (constant while it runs at the planned rate): base + slope x t, cached in js.extra."""
        c = js.extra.get(_RHO)
        if c is None or c[0] is not self or c[1] != js.mark_s or c[2] != js.rate_sps or c[3] != js.placement:
            p = js.placement
            rate = running_rate_sps(js, nodes, p) if p else nodes.throughput_sps(js, self.demand(js))
            j, iso = js.job, js.isolated_s
            # remaining(t) = work - done - rate_sps x (t - run_from) for t >= run_from
            slope = (1.0 - js.rate_sps / rate) / iso
            base = (-j.arrival_s + (j.work_samples - js.done_samples + js.rate_sps * js.run_from_s) / rate) / iso
            c = js.extra[_RHO] = (self, js.mark_s, js.rate_sps, p, rate, js.run_from_s, slope, base)
        return c

    def optimize(self, jobs, nodes, previous_allocations):
        now, n = nodes.now_s, len(jobs)
        if now < self._now_s:  # time went back: a new run with this instance
            self._next_lease_s, self._hold = -math.inf, None
        self._now_s = now
        up = nodes.up.tobytes()
        h = self._hold
        if ((len(previous_allocations) == n and all(  # everyone runs: no auction changes anything
                len(previous_allocations.get(js.job.job_id, ())) == self.demand(js) for js in jobs))
                or (h is not None and now < h[0] and h[1] == n and h[2] == up  # nothing happened and
                    and h[3] == previous_allocations)):  # no waiting job can have become a bidder
            if now >= self._next_lease_s - 1e-9:  # the auction would renew every lease
                self._next_lease_s = now + (self.lease_s or nodes.slot_s)
            return dict(previous_allocations)
        keyed = []
        for js in jobs:  # self.rho, inlined: this loop is most of the policy's time
            c = js.extra.get(_RHO)
            if (c is None or c[0] is not self or c[1] != js.mark_s or c[2] != js.rate_sps
                    or c[3] != js.placement):
                c = self._coef(js, nodes)
            r = c[7] + c[6] * now if now >= c[5] else self.rho(js, nodes)
            keyed.append((-js.job.priority, -r, js.job.arrival_s, js.index, js))  # priority_first, inlined
        keyed.sort()  # highest priority, then worst rho first, then by arrival; all distinct
        ranked = list(map(itemgetter(4), keyed))
        n_bid = math.ceil((1.0 - self.fairness_knob) * n - 1e-9)
        demand = self.demand
        if now < self._next_lease_s - 1e-9:  # inside a lease: fill freed GPUs only
            out = allocate_in_order_fast([(js, demand(js)) for js in ranked], nodes,
                                         previous_allocations, preemptive=False)
        else:
            self._next_lease_s = now + (self.lease_s or nodes.slot_s)
            rest, get = ranked[n_bid:], previous_allocations.get
            order = chain(ranked[:n_bid], (js for js in rest if get(js.job.job_id)),  # renewals,
                          (js for js in rest if not get(js.job.job_id)))  # then the waiting ones
            # read lazily: the waiting ones are not even listed when the cluster is full
            out = allocate_in_order_fast(((js, demand(js)) for js in order), nodes, previous_allocations)
        self._hold = None
        if out == previous_allocations:
            self._hold = (self._quiet_until(keyed, n_bid, previous_allocations), n, up, dict(out))
        return out

    def _quiet_until(self, keyed, n_bid, running) -> float:
        """After a decision that changed nothing: until when the same jobs give the same answer.

        Every waiting job fitting the free GPUs would have started, so the answer only changes
        when a waiting job becomes a bidder, i.e. its rho (rising at 1 / T_isolated per second)
        passes that of the n_bid-th bidder, a running job, whose rho does not fall (a waiting job
        of a lower priority class never passes it: the time found for it is only early)."""
        bar = None
        for k, (_, neg_rho, _, _, js) in enumerate(keyed):
            if k == n_bid:
                break
            if not running.get(js.job.job_id):
                return -math.inf  # a waiting bidder (that fits nowhere): decide again next time
            bar = -neg_rho
        if bar is None:
            return math.inf  # no bidders: running jobs renew their leases, no job fits
        until = math.inf
        for *_, js in keyed[n_bid:]:
            if not running.get(js.job.job_id):
                c = js.extra[_RHO]
                if c[6] > 0:
                    t = (bar - c[7]) / c[6]
                    until = min(until, t - 1e-9 * (1.0 + abs(t)))
        return until
