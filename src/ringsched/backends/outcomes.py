"""What an attempt's ending means for its job: completed, stopped (its checkpoint is its
progress), back to the queue after a backoff from its last good checkpoint (a crash or an
infrastructure fault), or failed (its entry raised, or its workers crashed ``max_failures``
times; infrastructure faults never fail a job). Every outcome is journaled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringsched.backends import ckpt_store, faults
from ringsched.backends.launcher import Attempt
from ringsched.policies.base import JobState

if TYPE_CHECKING:  # the controller imports this module
    from ringsched.backends.controller import Controller


def attempt_ended(ctl: "Controller", att: Attempt, end: faults.Ending, t: float) -> None:
    """The job's state at ``t`` after its attempt ended ``end``."""
    jid = att.job.name
    js = ctl.states[jid]
    js.attained_gpu_s = js.attained_at(t)
    js.mark_s = js.run_from_s = t
    js.last_stop_s = t
    js.placement = ()
    js.rate_sps = 0.0
    ctl.alloc.pop(jid, None)
    if end.outcome == "done":
        ctl.consecutive_faults[jid] = 0
        mark_completed(ctl, js, t)
    elif end.outcome == "failed":
        js.done_samples = float(att.samples)
        js.finish_s = t
        _fail(ctl, js, end.error, t, finish_s=t, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)
        ctl.journal.event(t, jid, "failed", end.error)
    elif end.outcome == "stopped":
        ctl.consecutive_faults[jid] = 0
        js.done_samples = js.ckpt_samples = float(att.samples)
        ctl.journal.update_job(jid, done_samples=js.done_samples, attained_gpu_s=js.attained_gpu_s)
    else:
        _on_fault(ctl, att, end, t)


def _fail(ctl: "Controller", js: JobState, reason: str, t: float, **journal) -> None:
    js.status, js.reason = "failed", reason
    ctl.journal.update_job(js.job_id, status="failed", reason=reason, **journal)
    ctl.notify(f"{js.job_id}: failed: {reason}")
    ctl.roster.end(js)


def _on_fault(ctl: "Controller", att: Attempt, end: faults.Ending, t: float) -> None:
    """A crash or an infrastructure fault: back to the queue (after a backoff) from the
    last good checkpoint; only repeated crashes (not infrastructure faults) fail a job."""
    jid = att.job.name
    js = ctl.states[jid]
    if any(e.get("kind") == "ckpt" for e in att.errors) and att.resume_seq is not None:
        ctl.journal.mark_checkpoint_bad(att.resume_seq)  # failed verification in the worker
    ck_samples = ckpt_store.choose(ctl.journal.checkpoints(jid)).samples
    js.failures += 1
    infra = ctl.counters[jid]["infra_faults"] + (end.fault == "infra")
    ctl.counters[jid]["infra_faults"] = infra
    js.lost_samples += max(0.0, att.samples - ck_samples)
    js.done_samples = js.ckpt_samples = ck_samples
    n = ctl.consecutive_faults[jid] = ctl.consecutive_faults.get(jid, 0) + 1
    if end.fault == "crash" and js.failures - infra >= ctl.cfg.max_failures:
        js.finish_s = t
        _fail(ctl, js, f"workers crashed {js.failures - infra} times; last: {end.error}", t, finish_s=t)
    else:
        wait = faults.backoff_s(n)
        ctl.retry_at[jid] = t + wait
        ctl.notify(f"{jid}: {end.fault} fault ({end.error}); retried in {wait:g} s from its checkpoint "
                   f"at {int(ck_samples)} samples")
    ctl.journal.update_job(jid, failures=js.failures, infra_faults=infra, lost_samples=js.lost_samples,
                           done_samples=js.done_samples, ckpt_samples=js.ckpt_samples,
                           attained_gpu_s=js.attained_gpu_s)
    ctl.journal.event(t, jid, "infra" if end.fault == "infra" else "crash", end.error or "")


def mark_completed(ctl: "Controller", js: JobState, t: float, note: str = "") -> None:
    jid = js.job_id
    js.status = "completed"
    js.finish_s = t
    js.done_samples = float(js.job.work_samples)
    ctl.roster.end(js)
    ctl.counters[jid]["completions"] += 1
    ctl.journal.update_job(jid, status="completed", finish_s=t, done_samples=js.done_samples,
                           attained_gpu_s=js.attained_gpu_s, completions=ctl.counters[jid]["completions"])
    ctl.journal.event(t, jid, "completed", note)
    ctl.notify(f"{jid}: completed" + (f" ({note})" if note else "")
               + (f", loss {ctl.loss_first[jid]:.3g} -> {ctl.loss_last[jid]:.3g}"
                  if ctl.loss_first[jid] is not None and ctl.loss_last[jid] is not None else ""))
