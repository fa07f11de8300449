"""GADGET's commitment book: the committed plans, the ledger of what they reserve, the heap of
plan ends, and the only operations that change them (commit, release, move a segment).

A committed plan is never broken by anything else: a release removes only the releasing job's
own later reservations, and a move only the moving job's (docs/theory.md, commitments).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ringsched.policies.gadget.prices import Ledger


@dataclass
class Plan:
    """A committed plan: segments (first slot, end slot exclusive, placement), in order."""

    segments: list[tuple[int, int, tuple]]
    finish_s: float
    payoff: float
    cost: float

    @property
    def first_slot(self) -> int:
        return self.segments[0][0]

    @property
    def last_slot(self) -> int:
        return self.segments[-1][1] - 1

    @property
    def first_placement(self) -> tuple:
        return self.segments[0][2]

    def at(self, slot: int) -> tuple:
        for a, b, pl in self.segments:
            if a <= slot < b:
                return pl
            if slot < a:
                break
        return ()


class CommitmentBook:
    """Plans by job (in commit order), the ledger, and the bookkeeping that keeps decisions cheap:
    plan ends in a heap, plans not yet started, and per server how often capacity was freed."""

    def __init__(self, cluster, ring_aware: bool, nic_share: float):
        self.ledger = Ledger(cluster.gpus, np.array([s.nic_Bps for s in cluster.servers]))
        self.ring_aware = ring_aware
        self.nic_share = nic_share
        self.plans: dict[str, Plan] = {}
        self.plans_made = 0
        self.epoch = 0  # bumps whenever reservations are released
        self.freed = [0] * cluster.num_servers  # per server: ledger changes that freed capacity there
        self.unstarted: dict[str, Plan] = {}  # plans whose first slot may lie ahead (commit order)
        self.early_fail: dict[str, tuple] = {}  # job -> (placement, its servers' freed, up, blocking slot)
        self._seq: dict[str, int] = {}  # each plan's place in commit order (the order of ``plans``)
        self._ends: list[tuple[int, int, str]] = []  # heap of (plan end slot, seq, job)
        self._placement_cache: dict[tuple, tuple] = {}
        # each server's GPU type, on a cluster of several (a ring runs on one: ``same_type``)
        self._gpu = tuple(s.gpu for s in cluster.servers) if len(cluster.gpu_types) > 1 else None

    def same_type(self, a: tuple, b: tuple) -> bool:
        """Whether two (one-type) placements lie on the same GPU type: moving a plan's segment
        onto another type would run it at another speed than planned."""
        return self._gpu is None or self._gpu[a[0]] == self._gpu[b[0]]

    # ------------------------------------------------------------ placements
    def placement(self, pl: tuple) -> tuple:
        """What GADGET reads of a placement, computed once (placements repeat): its servers, the
        workers on each, whether it crosses servers, the (server, workers) pairs as Python ints,
        and the GPUs and NIC share it reserves per server (``sparse``, ``usage``)."""
        r = self._placement_cache.get(pl)
        if r is None:
            if len(self._placement_cache) >= 1 << 16:
                self._placement_cache.clear()
            srv, cnt = np.unique(np.asarray(pl, dtype=np.int64), return_counts=True)
            counts = np.zeros(self.ledger.gpus.size, dtype=np.int64)
            counts[srv] = cnt
            bw = np.zeros(counts.size)
            if self.ring_aware and srv.size > 1:
                bw[srv] = self.nic_share
            r = self._placement_cache[pl] = (srv, cnt, srv.size > 1, tuple(zip(srv.tolist(), cnt.tolist())), counts, bw)
        return r

    def sparse(self, pl: tuple) -> tuple[np.ndarray, np.ndarray, bool, tuple]:
        """(servers, workers on each, crosses servers, the (server, workers) pairs) of a placement."""
        return self.placement(pl)[:4]

    def usage(self, pl: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(GPUs per server, NIC share per server) a placement reserves; shared: read only."""
        return self.placement(pl)[4:]

    # ------------------------------------------------------------ commit and release
    def commit(self, jid: str, plan: Plan) -> None:
        self.plans[jid] = plan
        self.unstarted[jid] = plan
        self._seq[jid] = seq = self.plans_made
        heapq.heappush(self._ends, (plan.segments[-1][1], seq, jid))  # (segment ends never move)
        for a, z, pl in plan.segments:
            counts, bw = self.usage(pl)
            self.ledger.add_range(a, z, counts, bw)
        self.plans_made += 1

    def release(self, jid: str, from_slot: int) -> None:
        """Free a job's reservations from ``from_slot`` on and forget its plan."""
        plan = self.plans.pop(jid, None)
        if plan is None:
            return
        self.unstarted.pop(jid, None)
        del self._seq[jid]
        for a, z, pl in plan.segments:
            if z > from_slot:
                self.free(max(a, from_slot), z, pl)
        self.epoch += 1
        self.early_fail.pop(jid, None)

    def release_counts(self) -> tuple:
        """The release counts (``epoch``, ``freed``) as they are, for ``reset_release_counts``."""
        return self.epoch, list(self.freed)

    def reset_release_counts(self, mark: tuple) -> None:
        """The release counts as they were at ``mark``: releases that were undone freed nothing,
        so they must not make deferred jobs due for an offer or failed early-run checks worth
        repeating."""
        self.epoch, self.freed = mark[0], list(mark[1])  # (a copy: the book goes on counting in it)

    def fits(self, plan: Plan) -> bool:
        """Whether every segment of ``plan`` still has room in the ledger, at the cluster's
        capacity (a plan lies ahead, where a server down now may be back)."""
        return all(self.ledger.first_overflow(a, z, *self.usage(pl), self.ledger.gpus) is None
                   for a, z, pl in plan.segments)

    def commit_seq(self, jid: str) -> int:
        """The plan's place in commit order (the order releases go in)."""
        return self._seq[jid]

    def release_gone(self, active, slot: int) -> None:
        """Release the plans of jobs no longer active (finished early), in commit order."""
        for jid in sorted(self.plans.keys() - active, key=self._seq.__getitem__):
            self.release(jid, slot)

    def over(self, slot: int, up: np.ndarray) -> list[str]:
        """Jobs whose plan is over by ``slot`` (in commit order), and, when a server is down,
        also those whose plan runs on a failed server now."""
        ends, seq = self._ends, self._seq
        over = []  # (from the heap of plan ends: stale entries are dropped)
        while ends and ends[0][0] <= slot:
            _, k, jid = heapq.heappop(ends)
            if jid in self.plans and seq[jid] == k:
                over.append((k, jid))
        out = [jid for _, jid in sorted(over)]
        if not up.all():
            done = set(out)
            out = [jid for jid, plan in self.plans.items() if jid in done or
                   ((pl := plan.at(slot)) and not up[list(set(pl))].all())]
        return out

    def free(self, a: int, z: int, pl: tuple) -> None:
        """Remove placement ``pl``'s reservation from slots [a, z); its servers count a release
        (``freed``: failed early-run checks there may pass now)."""
        self.ledger.add_range(a, z, *self.usage(pl), sign=-1)
        for s, _ in self.sparse(pl)[3]:
            self.freed[s] += 1

    def move_segment(self, plan: Plan, i: int, pl: tuple) -> None:
        """Segment i of a committed plan runs on ``pl`` instead; only the job's own reservation
        moves, and what it left is free again."""
        a, z, old = plan.segments[i]
        self.free(a, z, old)
        self.ledger.add_range(a, z, *self.usage(pl))
        plan.segments[i] = (a, z, pl)

    # ------------------------------------------------------------ moves that save restarts
    def stay_put(self, plan: Plan, slot: int, prev: tuple, nodes) -> tuple:
        """A plan segment that starts now moves to where its job already runs (on lent GPUs,
        or its previous segment's servers) when that placement has the same shape and GPU type and is free
        in the ledger for the whole segment: the job keeps running instead of restarting.
        Only the job's own reservation moves; the placement the job gets is returned."""
        i = next((k for k, (a, _, _) in enumerate(plan.segments) if a == slot), None)
        if i is None:
            return plan.at(slot)
        a, z, pl = plan.segments[i]
        if nodes.speed.shape(prev) != nodes.speed.shape(pl) or not self.same_type(prev, pl):
            return pl
        old = self.usage(pl)
        new = self.usage(prev)
        if self.ledger.first_overflow(a, z, *new, nodes.capacity, (a, *old)) is None:
            self.move_segment(plan, i, prev)
            return prev
        return pl

    def commit_early_runs(self, out: dict, slot: int, nodes, within: int) -> None:
        """A planned job that runs early on lent GPUs, on its plan's first placement or on one of
        the same shape and GPU type, gets its first segment moved there and started now when the ledger has
        room for it: the slots until its plan starts are committed too. Lent GPUs are invisible
        to prices, so new plans would otherwise land there and move the job (with late starts, a
        long job restarted dozens of times). A check that failed is not repeated until the
        ledger frees something on the servers it would take or the slot that blocked it has
        passed (commits only fill it). Only plans that have not started are looked at, and only
        those that start within ``within`` slots (the lending lookahead): committing an early
        run blocks its GPUs from now until the plan starts, and a plan that starts far ahead (a
        long job started late) would hold them against every later arrival; its early run stays
        lent, and a new plan may take those GPUs (docs/theory.md, late starts)."""
        cap = nodes.capacity
        up = nodes.up.tobytes()
        freed = self.freed
        for jid, plan in list(self.unstarted.items()):
            a, z, pl = plan.segments[0]
            if a <= slot:  # started (its first slot only ever moves earlier)
                del self.unstarted[jid]
                continue
            now = out.get(jid)
            if not now or a - slot > within:
                continue  # (a plan that starts later than ``within`` slots keeps its early run lent)
            same = now == pl
            if not same and (len(now) != len(pl) or nodes.speed.shape(now) != nodes.speed.shape(pl)
                             or not self.same_type(now, pl)):
                continue
            # only freed capacity on the servers it would take can make a failed check pass
            mark = sum(freed[s] for s, _ in self.sparse(now)[3])
            failed = self.early_fail.get(jid)
            if failed is not None and failed[:3] == (now, mark, up) and slot <= failed[3]:
                continue
            new = self.usage(now)
            old = None if same else self.usage(pl)
            # the slots it would newly take: until its plan starts (same placement), or, moving,
            # until its first segment ends, less its own reservation there
            block = self.ledger.first_overflow(slot, a if same else z, *new, cap, None if same else (a, *old))
            if block is not None:
                self.early_fail[jid] = (now, mark, up, block)
                continue
            if not same:
                self.move_segment(plan, 0, now)
            self.ledger.add_range(slot, a, *new)
            plan.segments[0] = (slot, z, now)
            del self.unstarted[jid]
            self.early_fail.pop(jid, None)
