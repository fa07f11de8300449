"""One decision loop for simulated and real clusters (SimPy's Environment and
RealtimeEnvironment share one ``run``: only how time passes differs).

The loop owns what must not differ between the worlds: admission (``Policy.admit`` on each
arrival), the stop rule, when the policy is asked (after something changed, at every slot
boundary for ``periodic`` policies, at the time ``wakeup_s`` names when nothing else would
happen), one validation of its answer, and when a run is over. The world (``World``) says
what happens between decisions: the simulator jumps to its next event, a real cluster waits
for its workers' reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from types import MappingProxyType

from ringsched.loop.validate import validated_changes
from ringsched.loop.world import World
from ringsched.policies.base import JobState, Policy

StopRule = Callable[[JobState, float], bool]
"""stop_rule(job_state, now_s) -> True: the job is done early (objectives' convergence)."""


class DecisionLoop:
    """Drives ``world`` under ``policy`` from ``t0``; call ``run`` once.

    The stall guard: more than ``stall_limit`` consecutive steps at one time (a policy or
    event that keeps asking for a decision now) end the run; ``stalled_at_s`` says when."""

    stall_limit = 10_000

    def __init__(self, world: World, policy: Policy, *, slot_s: float, decide_at_events: bool = True,
                 horizon_s: float | None = None, stop_rule: StopRule | None = None):
        self.world = world
        self.policy = policy
        self.roster = world.roster
        self.slot_s = slot_s
        self.decide_at_events = decide_at_events
        self.horizon_s = horizon_s if horizon_s is not None else math.inf
        self.stop_rule = stop_rule
        self.t = 0.0  # the time reached (kept current, so an interrupted run knows it)
        self.decisions = 0
        self.decision_wall_s = 0.0
        self.stalled_at_s: float | None = None
        self.idle_end = False  # ended because nothing could happen any more: the rest wait forever

    # ---------------------------------------------------------------- time
    def boundary_after(self, t: float) -> float:
        """The first slot boundary >= t."""
        return math.ceil(t / self.slot_s - 1e-12) * self.slot_s

    def boundary_past(self, t: float) -> float:
        """The first slot boundary > t."""
        return (math.floor(t / self.slot_s + 1e-12) + 1) * self.slot_s

    def decision_at(self, t: float, x: float) -> float:
        """When to decide, now ``t``, for something that happens at ``x``: at ``x`` itself when
        deciding at events, else at the first boundary at or after it (a slot after ``t`` at least)."""
        if self.decide_at_events:
            return max(x, t)
        return max(t + self.slot_s, self.boundary_after(x))

    def first_time(self, first_arrival_s: float) -> float:
        return first_arrival_s if self.decide_at_events else self.boundary_after(first_arrival_s)

    # ---------------------------------------------------------------- the run
    def run(self, t0: float) -> float:
        """Decide and advance until nothing is left (or the horizon); the time it ended."""
        world, roster, policy = self.world, self.roster, self.policy
        jobs = world.workload()
        if jobs:  # (online, a policy that needs the workload prepares on its first decision)
            policy.prepare(jobs, world.cluster, world.speed)
        horizon = self.horizon_s
        t = self.t = t0
        changed = True
        same_t = 0  # consecutive steps at one time (the stall guard)
        while t <= horizon:
            if self.stop_rule is not None and roster.active and self._stop_early(t):
                changed = True
            changed = self._admit(t) or changed
            if roster.active and (changed or policy.periodic):
                self.decide(t)
            changed = False
            world.record(t)
            b = self.next_decision(t)
            if b is None:
                self.idle_end = True  # nothing runs and nothing can happen: the rest wait forever
                break
            if b > horizon:
                world.advance(t, horizon, stop_at_first=False)
                t = self.t = horizon
                break
            b, changed = world.advance(t, b)
            same_t = same_t + 1 if b <= t else 0
            if same_t > self.stall_limit:
                self.stalled_at_s = t
                break
            t = self.t = b
            if not roster.active and not world.pending():
                break  # every job has finished
        return t

    def _admit(self, t: float) -> bool:
        """Admit (or reject for good) the jobs that arrived by ``t``; whether any arrived."""
        arrived = self.world.arrivals(t)
        nodes = None
        for js in arrived:
            nodes = nodes or self.world.nodes(t)
            reason = self.policy.admit(js.job, nodes)
            if reason is None:
                self.roster.admit(js)
                self.world.admitted(js, t)
            else:
                js.status, js.reason = "rejected", reason
                self.roster.end(js)
                self.world.rejected(js, t)
        return bool(arrived)

    def _stop_early(self, t: float) -> bool:
        rule = self.stop_rule
        stop = [js for js in self.roster.active.values() if js.first_start_s is not None and rule(js, t)]
        if stop:
            self.world.stop_early(stop, t)
        return bool(stop)

    def decide(self, t: float) -> None:
        """Ask the policy, check its answer once, and have the world carry it out."""
        world = self.world
        view = world.view()
        if not view:
            return
        world.fold(view.values(), t)
        nodes = world.nodes(t)
        w0 = time.perf_counter()
        new = self.policy.optimize(view.values(), nodes, MappingProxyType(world.alloc))
        self.decision_wall_s += time.perf_counter() - w0
        self.decisions += 1
        new = {jid: p if type(p) is tuple else tuple(int(s) for s in p) for jid, p in new.items()}
        world.apply(validated_changes(self.policy.name, new, world.alloc, view, world.gpus_used(), world.servers_up(),
                                      world.cluster.gpus, t), t)

    def next_decision(self, t: float) -> float | None:
        """The next time at which something can change (None: nothing ever will)."""
        world = self.world
        cands = []
        arrival = world.next_arrival_s()
        if arrival is not None:
            cands.append(self.decision_at(t, arrival))
        if self.roster.active and (self.policy.periodic or (self.stop_rule is not None and world.alloc)):
            cands.append(self.boundary_past(t))
        ev = world.next_event_s()
        if ev is not None:
            cands.append(self.decision_at(t, ev))
        if not cands or world.idle():
            wake = self.policy.wakeup_s(t, self.slot_s) if self.roster.active else None
            if wake is None or wake <= t:
                return None
            cands.append(self.boundary_after(wake))
        return min(cands)
