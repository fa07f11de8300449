"""What the objectives (docs/objectives.md) change in GADGET's decisions, kept in one place.

* convergence (``GadgetParams.stop_converged``): a job's work is planned up to its estimated
  convergence point (``Job.converge_samples``), not the epochs its user typed; the world
  stops the job there (the objective's stop rule), so the plan's reservations match the work
  that will run;
* fairness (``rho_guard``): a job about to pass the guard's rho is planned whatever its payoff."""

from __future__ import annotations

from ringsched.policies.base import JobState


def planned_remaining(js: JobState, now_s: float, stop_converged: bool) -> float:
    """The samples a plan for ``js`` must still provide: what is left to the job's estimated
    convergence point when GADGET takes the stop and the job has not passed it, else what is
    left of its work (the estimate the world shows)."""
    rem = js.remaining_at(now_s)
    c = js.job.converge_samples
    if not stop_converged or c is None:
        return rem
    left = min(c, js.job.work_samples) - js.done_at(now_s)
    return left if left > 0 else rem


def overdue(jobs, now_s: float, rho_guard: float, planned) -> set[str]:
    """Jobs without a plan whose finish-time fairness is about to pass ``rho_guard`` (fairness,
    ``GadgetParams.rho_guard``; 0: none): they have waited (rho_guard - 1) x their isolated
    time since arrival, so even run alone from now their rho would exceed the guard. GADGET
    plans them whatever the payoff, as jobs behind their plan: a price-driven admission alone
    keeps deferring the widest jobs under load (a 16-GPU job on 2x8 waited 61 h, rho 143)."""
    if rho_guard <= 0:
        return set()
    return {js.job_id for js in jobs
            if js.job_id not in planned and now_s - js.job.arrival_s >= (rho_guard - 1.0) * js.isolated_s}


def past_commitments_s(plans, slot_s: float) -> float:
    """The end of the last committed plan: an overdue job's window reaches past it, so that
    a plan exists even where every GPU it needs is committed until then."""
    return max((p.last_slot + 1 for p in plans.values()), default=0) * slot_s


