"""GADGET's work-conserving lending: GPUs the ledger leaves idle in the current slot go to jobs
with nothing committed in it, then to planned jobs on a slower GPU type than idle ones
(``type_upgrade``, ``upgrade.py``), then on top of planned jobs' placements when that pays for
the restarts (``work_conserving``, ``top_up``). Lending reads the ledger and never writes it: no
commitment is touched (``CommitmentBook.commit_early_runs`` may commit a lent run afterwards)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ringsched.embedding import consolidated, counts_to_placement
from ringsched.policies.gadget.book import CommitmentBook
from ringsched.policies.gadget.estimate_error import EstimateError
from ringsched.policies.gadget.gain import lend_gain, ring_rate, slots_to_end
from ringsched.policies.gadget.gpu_types import one_type_free, same_type_only, type_views
from ringsched.policies.gadget.idle import IdleCapacity
from ringsched.policies.gadget.params import GadgetParams, utility_horizon_s, worker_menu
from ringsched.policies.gadget.upgrade import keeps_faster, upgrade


def _nic_need(own: np.ndarray, counts: np.ndarray, base_multi: bool) -> tuple[np.ndarray, bool]:
    """Servers that need a NIC share they do not hold when a ring on ``own`` grows to
    ``counts``, and whether the grown ring crosses servers."""
    multi = bool((counts > 0).sum() > 1)
    need = (counts > 0) & (own == 0) if base_multi else (counts > 0)
    return need, multi


class Lender:
    """Lends idle GPUs slot by slot; remembers each job's speed alone (fixed per job)."""

    def __init__(self, p: GadgetParams, book: CommitmentBook, errors: EstimateError):
        self.p = p
        self.book = book
        self.errors = errors  # the policy's, which it tells of every job that leaves
        self._alone: dict[str, tuple] = {}  # per job until its estimate changes: ``_order``'s (speed, arrival, index, horizon, triage)
        self._views: tuple | None = None  # (cluster, its GPU types ``gpu_types.type_views``, each server's)
        self.lent_base: dict[str, tuple] = {}  # a job without a plan grown on lent GPUs: its placement before

    def forget(self, job_id: str | None = None) -> None:
        """Drop what was cached from the job's speed and utility (its estimate changed), or from
        every job's (``None``: a refitted speed model, a new estimates' bias)."""
        if job_id is None:
            self._alone.clear()
        else:
            self._alone.pop(job_id, None)

    def views(self, cluster) -> tuple:
        """The cluster's GPU types (``gpu_types.type_views``) and each server's, built once per cluster."""
        if self._views is None or self._views[0] is not cluster:
            self._views = (cluster, type_views(cluster), [s.gpu for s in cluster.servers])
        return self._views[1:]

    def lend(self, jobs, nodes, slot: int, out: dict, previous, running_plan) -> None:
        """Idle GPUs of this slot go to jobs with nothing committed in it, shortest first (those
        too late for half their utility after, those past their utility horizon last: ``_order``);
        what is still idle then tops up planned jobs and grows jobs without a plan on their lent
        GPUs (``top_up``)."""
        idle_cap = IdleCapacity.of(self.book.ledger, nodes.capacity, slot, self.p.lend_lookahead, self.p.nic_share)
        if idle_cap.now_free.sum() == 0:
            return
        idle = [js for js in jobs if js.job_id not in out]
        if idle_cap.free.sum() == 0 and not self.p.backfill:  # nothing stays free: only planned jobs can start early
            idle = [js for js in idle if js.job_id in self.book.plans]
        if idle:
            self._lend_idle(idle, nodes, slot, out, previous, idle_cap)
        if self.p.type_upgrade and len(nodes.cluster.gpu_types) > 1 and idle_cap.now_free.sum() > 0:
            upgrade(self, *self.views(nodes.cluster), jobs, nodes, slot, out, previous, idle_cap)
        if self.p.top_up and idle_cap.now_free.sum() > 0:
            self._top_up(running_plan + self._lent_below_max(idle, out), nodes, out, previous, idle_cap)

    def _lent_below_max(self, idle, out: dict) -> list:
        """Jobs that run on lent GPUs below their most workers (with no plan, or before their
        plan starts): a top-up may grow them too. A ring lent where few GPUs were idle kept that
        size for life before (an 8-GPU job on 1 GPU for 8 h beside 30 idle ones, synthetic
        many-short jobs on 4x8)."""
        return [js for js in idle if js.job_id in out and len(out[js.job_id]) < js.job.max_workers]

    def _base_of(self, jid: str, prev: tuple) -> tuple:
        """The placement a lent job keeps in the lending phase: its base when it was grown on top
        of it (and still runs there), else where it runs."""
        base = self.lent_base.get(jid)
        if base is None or len(base) >= len(prev) or Counter(base) - Counter(prev):
            self.lent_base.pop(jid, None)
            return prev
        return base

    def _order(self, idle, nodes) -> np.ndarray:
        """Idle jobs in three tiers, each by remaining time alone at their widest size, then
        arrival, then index: those that can still keep ``lend_triage_share`` of their maximum
        utility if they run alone from now; then those that cannot; last those that could not
        finish before their utility horizon either (``tail_utility``: nothing left to earn).
        The triage test takes the remaining work at the estimates' optimistic factor
        (``estimate_error.py``), the horizon test at the estimate. Under
        overload the short jobs die first; served first they took the lent GPUs from the long
        ones that can still earn. The middle tier is triage: a job already too late for most of
        its value that kept its lent GPUs made the jobs behind it late too (synthetic
        many-short jobs: 91 of 308 long 1-GPU jobs ended below half their value)."""
        now = nodes.now_s
        triage = self.p.lend_triage_share

        total = nodes.cluster.total_gpus

        def fixed(js):  # (speed at its widest consolidated size here, arrival, index, end of utility, end of triage)
            a = js.job.arrival_s
            widest = self.p.most_workers(js.job, total)
            r = self._alone[js.job_id] = (max(nodes.throughput_sps(js, widest), 1e-12), a, js.index,
                                          a + utility_horizon_s(js.job, self.p.tail_utility),
                                          a + utility_horizon_s(js.job, triage) if triage > 0 else np.inf)
            return r

        get = self._alone.get
        meta = np.array([get(js.job_id) or fixed(js) for js in idle])
        # (JobState.remaining_at, inlined: this runs for every idle job at every decision)
        rem = np.array([max(0.0, (w := js.job.work_samples) - min(w, js.done_samples + js.rate_sps *
                                                                   max(0.0, now - js.run_from_s))) for js in idle])
        alone = rem / meta[:, 0]
        end = now + alone
        # (the tier counts the tests failed: a job past its horizon by the estimate but in time
        # for the triage share at the optimistic work is in the middle; docs/theory.md section 9)
        hope = now + alone * self.errors.optimistic() if triage > 0 else end
        tier = (end > meta[:, 3]).astype(np.int8) + (hope > meta[:, 4])
        return np.lexsort((meta[:, 2], meta[:, 1], alone, tier))

    def _lend_idle(self, idle, nodes, slot: int, out: dict, previous, idle_cap: IdleCapacity) -> None:
        """Lend to jobs with nothing committed in this slot (``idle_cap`` is updated)."""
        order = self._order(idle, nodes)
        cap = idle_cap.as_lists()
        free_total = sum(cap.free)
        now_total = sum(cap.now_free)
        sparse = self.book.sparse
        upgrading = self.p.type_upgrade and self.p.upgrade_lent and len(nodes.cluster.gpu_types) > 1
        gpu_of = self.views(nodes.cluster)[1]
        for i in order.tolist():
            if now_total == 0:
                break  # nothing left to lend in this slot
            js = idle[i]
            prev = previous.get(js.job_id, ())
            plan = self.book.plans.get(js.job_id)
            # a planned job starts early where its plan runs it; a lent job stays where it runs
            pl = self._planned_now(js, prev, plan, nodes, cap, gpu_of, upgrading) if plan is not None else None
            work = None
            if pl is None:  # (no plan, or its planned servers are busy now: lent others until it starts)
                work = self._backfill_work(js, nodes, slot)  # None: no backfilling for it
                if free_total < js.job.min_workers and work is None:
                    continue
                pl = self._kept(js, prev, cap) if prev else None
            if pl is not None:
                _, _, multi, pairs = sparse(pl)
                out[js.job_id] = pl
                free_total += cap.take_now(pairs, multi)
                now_total -= len(pl)
                continue
            self.lent_base.pop(js.job_id, None)
            if work is not None and (took := self._backfill(js, work, nodes, slot, cap, out)):
                free_total = sum(cap.free)
                now_total -= took
                continue
            if free_total < js.job.min_workers:
                continue
            found = self._new_ring(js, nodes, cap)
            if found is not None:
                pl, pairs, multi = found
                out[js.job_id] = pl
                cap.take_for_lookahead(pairs, multi)
                free_total = sum(cap.free)
                now_total -= len(pl)
        idle_cap.assign(cap)

    def _planned_now(self, js, prev: tuple, plan, nodes, cap, gpu_of, upgrading: bool) -> tuple | None:
        """Where a planned job runs early in this slot: its plan's first placement when idle now
        (no move later: its own reservations are what the lookahead would see there), or, once
        upgraded onto a faster type (``upgrade.py``), where it runs while that is idle; None
        when its planned servers are busy."""
        first = plan.first_placement
        if upgrading and keeps_faster(self, js, prev, first, nodes, cap, gpu_of):
            return prev
        return self._if_idle_now(first, cap)

    def _kept(self, js, prev: tuple, cap) -> tuple | None:
        """Where a job runs on lent GPUs now, it stays while they are idle in this slot: a
        commitment due later takes them back then, and moving earlier gains nothing. A grown
        ring keeps only its base here: the GPUs it grew on go to waiting jobs first, and the
        top-up phase gives back what they leave idle."""
        return self._if_idle_now(self._base_of(js.job_id, prev), cap)

    def _if_idle_now(self, pl: tuple, cap) -> tuple | None:
        """``pl`` when its GPUs (and NIC shares) are idle in this slot, else None."""
        _, _, multi, pairs = self.book.sparse(pl)
        return pl if cap.fits_now(pairs, multi) else None

    def _new_ring(self, js, nodes, cap) -> tuple | None:
        """(placement, its pairs, crosses servers) of a new lent ring: the widest the idle GPUs
        hold, down to the job's fewest workers, on its fastest GPU type first. A lent ring stays
        inside one server unless the job cannot run on fewer GPUs: lent GPUs may be taken back
        next slot, and a spread ring is slow anyway."""
        nic = self.p.nic_share
        w = min(self.p.most_workers(js.job, nodes.cluster.total_gpus), max(max(cap.free), js.job.min_workers))
        frees = one_type_free(  # one GPU type per ring, the job's fastest first
            np.array(cap.free, dtype=np.int64), self.views(nodes.cluster)[0],
            lambda g: nodes.speed.throughput_sps(js.job.model, js.job.local_bsz, (1, 1, 1, 1), gpu=g))
        while w >= js.job.min_workers:
            for free_arr in frees:
                pl = consolidated(w, free_arr)
                if pl is not None:
                    _, _, multi, pairs = self.book.sparse(pl)
                    if not multi or all(cap.bfree[s] >= nic for s, _ in pairs):
                        return pl, pairs, multi
            w -= 1
        return None

    def _backfill_work(self, js, nodes, slot: int) -> float | None:
        """The job's remaining work at the estimates' pessimistic factor, when alone at its widest
        size here, with a restart, it ends before the lookahead's last slot (only then can a
        backfilled ring beat the lookahead's GPUs); else None."""
        if not self.p.backfill:
            return None
        now = nodes.now_s
        work = js.remaining_at(now) * self.errors.pessimistic()
        end = now + self.p.restart_for(nodes) + work / self._alone[js.job_id][0]
        return work if end < (slot + self.p.lend_lookahead - 1) * nodes.slot_s else None

    def _backfill(self, js, work: float, nodes, slot: int, cap: IdleCapacity, out: dict) -> int:
        """Lend ``js`` a ring, widest first, on GPUs idle now that stay uncommitted until it ends
        (``work`` at the ring's own rate, with a restart) though a commitment takes them within
        the lookahead: EASY backfilling ahead of GADGET's plans. Returns the GPUs lent (0: none;
        the lookahead's rule then)."""
        look = self.p.lend_lookahead
        restart = self.p.restart_for(nodes)
        views = self.views(nodes.cluster)[0]
        frees: dict[int, list] = {}

        def typed(k):  # the window's free GPUs per type, the job's fastest first
            if k not in frees:
                frees[k] = one_type_free(np.array(cap.within(k), dtype=np.int64), views, lambda g: nodes.speed.throughput_sps(
                    js.job.model, js.job.local_bsz, (1, 1, 1, 1), gpu=g))
            return frees[k]

        top = min(self.p.most_workers(js.job, nodes.cluster.total_gpus), max(max(cap.now_free), js.job.min_workers))
        for w in range(top, js.job.min_workers - 1, -1):
            for i, now_arr in enumerate(typed(1)):
                pl = consolidated(w, now_arr)
                if pl is None or (k := slots_to_end(js, pl, work, nodes, slot, restart, look)) >= look:
                    continue
                pl = consolidated(w, typed(k)[i])
                if pl is None or slots_to_end(js, pl, work, nodes, slot, restart, look) > k:
                    continue
                _, _, multi, pairs = self.book.sparse(pl)
                if multi and not all(cap.bfree[s] >= self.p.nic_share for s, _ in pairs):
                    continue
                out[js.job_id] = pl
                cap.take_within(pairs, multi, k)
                return w
        return 0

    def _top_up(self, running_plan, nodes, out: dict, previous, cap: IdleCapacity) -> None:
        """Idle GPUs on top of a planned job's committed placement, shortest job first.

        The job keeps every GPU of its plan (the commitment is untouched) and gains lent ones,
        placed on its own servers first. A top-up starts only on GPUs that stay uncommitted for
        the lookahead and only when, counting a restart to grow and one to shrink back, it
        gains ``top_up_gain`` of the job's progress over the lookahead (or finishes the job
        sooner within it); it lasts while its lent GPUs stay uncommitted. This is what makes
        GADGET work-conserving at light load and lets jobs grow when others finish early."""
        if not running_plan:
            return
        now = nodes.now_s
        S = cap.free.size
        nic = self.p.nic_share
        cands = sorted(running_plan, key=lambda js: (
            js.remaining_at(now) / max(nodes.throughput_sps(js, len(out[js.job_id])), 1e-12),
            js.job.arrival_s, js.index))
        for js in cands:
            if cap.now_free.sum() == 0:
                break
            jid, base = js.job_id, out[js.job_id]
            own = np.bincount(np.asarray(base), minlength=S)
            base_multi = (own > 0).sum() > 1
            prev = previous.get(jid, ())
            if len(prev) > len(base):  # topped up before: keep it while the lent GPUs stay idle
                extra = np.bincount(np.asarray(prev), minlength=S) - own
                new_srv, multi = _nic_need(own, own + extra, base_multi)
                if np.all(extra >= 0) and np.all(extra <= cap.now_free) and \
                        (not multi or np.all(cap.now_bfree[new_srv] >= nic - 1e-12)):
                    out[jid] = prev
                    cap.take_extra(extra, new_srv if multi else None)
                    continue
            best = self._best_top_up(js, base, own, base_multi, nodes, cap)
            if best is not None:
                _, counts, extra, new_srv = best
                out[jid] = counts_to_placement(counts)
                cap.take_extra(extra, new_srv)
                if jid not in self.book.plans:
                    self.lent_base[jid] = base

    def _best_top_up(self, js, base: tuple, own: np.ndarray, base_multi: bool, nodes, cap: IdleCapacity):
        """(gain, counts, extra, new NIC servers) of the best top-up of a planned job, or None."""
        now = nodes.now_s
        restart = self.p.restart_for(nodes)
        window = self.p.lend_lookahead * nodes.slot_s
        S = own.size
        nic = self.p.nic_share
        speed = nodes.speed

        def rate(counts):  # (on the placement's GPU type)
            return ring_rate(speed, js, counts_to_placement(counts), now)

        avail = same_type_only(np.minimum(cap.free, cap.now_free), *self.views(nodes.cluster), base)  # a ring runs on one type
        room = int(avail.sum())
        if room == 0:
            return None
        rem = js.remaining_at(now)
        r0 = rate(own)
        if r0 <= 0 or rem <= 0:
            return None
        t_old = rem / r0
        if t_old <= restart + nodes.slot_s:
            return None  # nearly done: a restart cannot pay
        best = None
        order = np.lexsort((np.arange(S), -avail, own == 0))  # own servers, then the emptiest
        for w in worker_menu(len(base) + 1, min(js.job.max_workers, len(base) + room)):
            need = w - len(base)
            extra = np.zeros(S, dtype=np.int64)
            for s_ in order:
                if need == 0:
                    break
                t_ = min(int(avail[s_]), need)
                extra[s_] += t_
                need -= t_
            if need:
                continue
            counts = own + extra
            new_srv, multi = _nic_need(own, counts, base_multi)
            if multi and not np.all(np.minimum(cap.bfree, cap.now_bfree)[new_srv] >= nic - 1e-12):
                continue
            gain = lend_gain(r0, rate(counts), rem, restart, window)
            if gain >= self.p.top_up_gain and (best is None or gain > best[0]):
                best = (gain, counts, extra, new_srv if multi else None)
        return best
