"""Where GADGET's GPU-time goes: under committed plans, or on GPUs lent for the slot (issue 15:
how much of what GADGET achieves comes from its plans rather than from lending).

Each decision's placements hold until the next decision (the simulator changes nothing in
between but completions), so a job's GPUs count from one decision until the next or until
the job finished (``JobState.finish_s``), whichever comes first; after the last decision,
until the job finished or else the end of that slot. A job's GPUs count as planned up to the
size of its committed placement in the slot; the rest (jobs without a commitment in the slot,
early starts before a plan, top-ups on top of one) as lent."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GpuTimeSplit:
    planned_gpu_s: float = 0.0
    lent_gpu_s: float = 0.0
    planned_jobs: set = field(default_factory=set)  # jobs that ever ran under a committed plan
    seen_jobs: set = field(default_factory=set)  # jobs that ever ran
    _since_s: float = 0.0
    _slot_end_s: float = 0.0
    _held: list = field(default_factory=list)  # (JobState, planned GPUs, lent GPUs) of the last decision

    def record(self, now_s: float, jobs, out: dict, plans: dict, slot: int, slot_s: float) -> None:
        """Close the previous decision's interval at ``now_s`` and open this one's."""
        self._add(self._close(now_s))
        held = []
        for js in jobs:
            pl = out.get(js.job_id)
            if not pl:
                continue
            plan = plans.get(js.job_id)
            own = min(len(pl), len(plan.at(slot))) if plan is not None else 0
            held.append((js, own, len(pl) - own))
            self.seen_jobs.add(js.job_id)
            if own:
                self.planned_jobs.add(js.job_id)
        self._held, self._since_s, self._slot_end_s = held, now_s, (slot + 1) * slot_s

    def _close(self, until_s: float) -> tuple[float, float]:
        """(planned, lent) GPU-seconds of the last decision up to ``until_s``."""
        planned = lent = 0.0
        for js, own, extra in self._held:
            end = until_s if js.finish_s is None else min(until_s, js.finish_s)
            dt = max(0.0, end - self._since_s)
            planned += own * dt
            lent += extra * dt
        return planned, lent

    def _add(self, split: tuple[float, float]) -> None:
        self.planned_gpu_s += split[0]
        self.lent_gpu_s += split[1]

    def stats(self) -> dict[str, float]:
        """GPU-hours under plans and lent, the planned share, and the share of the jobs that ran
        that ever ran under a plan."""
        p, q = self._close(self._slot_end_s)
        planned, lent = self.planned_gpu_s + p, self.lent_gpu_s + q
        total = planned + lent
        ran = len(self.seen_jobs)
        return {"planned_gpu_h": planned / 3600, "lent_gpu_h": lent / 3600,
                "planned_share": planned / total if total > 0 else 0.0,
                "jobs_ever_planned_share": len(self.planned_jobs) / ran if ran else 0.0}
