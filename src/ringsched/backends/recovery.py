"""Recovery: a controller on the state directory of one that stopped (or was killed).

The journal decides: orphaned workers are reaped and their attempts closed, journaled
measurements refit the speed model again, finished jobs stay finished, and every other job
resumes from its newest good journaled checkpoint (a checkpoint its dead scheduler never
journaled, written by workers that saw it die, is adopted only if ``ckpt_store.adoptable``
accepts it). The clock goes on from the latest time anything was journaled.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ringsched.backends import ckpt_store
from ringsched.backends.jobs_file import RunJob, jobs_digest
from ringsched.backends.journal import Journal
from ringsched.backends.launcher import MIN_STEPS
from ringsched.backends.online import TERMINAL
from ringsched.backends.refit import Measurement
from ringsched.errors import InputError

if TYPE_CHECKING:  # the controller imports this module
    from ringsched.backends.controller import Controller


def check_journal(journal: Journal, jobs: list[RunJob], cluster_spec: str) -> bool:
    """True when ``journal`` holds an earlier run of these jobs on this cluster (to resume),
    False when it is empty; an ``InputError`` when it belongs to another run."""
    meta = journal.meta()
    if "jobs_digest" not in meta:
        return False
    if meta.get("jobs_digest") != jobs_digest(jobs):
        raise InputError(f"state directory {journal.dir} belongs to another run (its jobs differ; "
                         f"it ran {meta.get('jobs_source', '?')!r})", field="state")
    if meta.get("cluster") != cluster_spec:
        raise InputError(f"state directory {journal.dir} belongs to a run on cluster "
                         f"{meta.get('cluster')!r}, not {cluster_spec!r}", field="state")
    return True


def choose_checkpoint(ctl: "Controller", jid: str, rows: list[dict], t: float) -> ckpt_store.Choice:
    """The newest good journaled checkpoint; corrupt ones are marked bad (and logged)."""
    choice = ckpt_store.choose(rows)
    for r in choice.bad:
        ctl.journal.mark_checkpoint_bad(r["seq"])
        ctl.journal.event(t, jid, "ckpt-bad", f"{r['path']} (step {r['step']}) changed or vanished; "
                                              "falling back to the previous checkpoint")
        ctl.notify(f"{jid}: checkpoint {Path(r['path']).name} is corrupt or missing; using the previous one")
    return choice


def recover(ctl: "Controller", meta: dict) -> None:
    """Resume every job of ``ctl``'s journal (see the module's docstring)."""
    journal = ctl.journal
    ctl.resume_clock(max(float(meta.get("clock_s", 0.0)), journal.last_time_s()))
    t = ctl.now()
    stale = journal.attempts(open_only=True)
    if stale:
        ctl.notify(f"recovering: {len(stale)} attempt(s) of the previous scheduler")
        ctl.launcher.reap(stale)
    ckpt_store.remove_temporaries(journal.dir / "ckpt")  # a writer the old scheduler's end killed
    for a in stale:
        journal.update_attempt(a["id"], ended_s=t, outcome="orphaned")
    for a in journal.attempts():
        if a["measured_step_s"] and a["measured_steps"] >= MIN_STEPS:
            ctl.model.add(a["model"], Measurement(a["workers"], a["servers"], a["max_per_server"], a["local_bsz"],
                                                  a["measured_step_s"], a["measured_steps"]))
    for row in journal.jobs():
        if row["job_id"] in ctl.states:
            _recover_job(ctl, row, [a for a in stale if a["job_id"] == row["job_id"]], t)
    ctl.model.refit()


def _recover_job(ctl: "Controller", row: dict, stale: list[dict], t: float) -> None:
    jid = row["job_id"]
    js = ctl.states[jid]
    for k in ("done_samples", "attained_gpu_s", "restarts", "preemptions", "failures", "lost_samples"):
        setattr(js, k, type(getattr(js, k))(row[k]))
    js.first_start_s = row["first_start_s"]
    js.finish_s = row["finish_s"]
    js.reason = row["reason"]
    js.ckpt_samples = row["ckpt_samples"]
    ctl.loss_first[jid], ctl.loss_last[jid] = row["loss_first"], row["loss_last"]
    ctl.losses[jid] = ctl.journal.losses(jid)
    ctl.counters[jid] = {"resizes": row["resizes"], "completions": row["completions"],
                         "last_workers": row["last_workers"], "infra_faults": row["infra_faults"]}
    status = row["status"]
    js.mark_s = js.run_from_s = js.last_stop_s = t
    if status in TERMINAL:
        js.status = status
        return
    samples = resume_point(ctl, jid, stale, t)
    if samples is None:
        ctl.mark_completed(js, t, note="completed by its final checkpoint before the restart")
        return
    js.ckpt_samples = js.done_samples = samples
    js.status = status if status in ("active", "held") else "pending"
    ctl.journal.update_job(jid, status=js.status, done_samples=js.done_samples, ckpt_samples=js.ckpt_samples)
    if js.status == "active":
        ctl.journal.event(t, jid, "resume", f"from checkpoint at {int(js.ckpt_samples)} samples")
        ctl.notify(f"{jid}: resumes from its checkpoint at {int(js.ckpt_samples)} samples")


def resume_point(ctl: "Controller", jid: str, stale: list[dict], t: float) -> float | None:
    """The samples a job resumes from (None: its final checkpoint is journaled)."""
    rows = ctl.journal.checkpoints(jid)
    if any(r["done"] and not r["bad"] for r in rows):
        return None
    choice = choose_checkpoint(ctl, jid, rows, t)
    work = ctl.jobs[jid].work_samples
    got = ckpt_store.adoptable(ctl.ckpt_folder(jid), {a["id"]: a["workers"] * a["local_bsz"] for a in stale},
                               choice.samples, work)
    if got is None:
        return choice.samples
    ctl.journal.add_checkpoint(jid, got["attempt"], got["step"], min(got["samples"], work), got["done"],
                               got["path"], t, sha256=got["sha256"], size_bytes=got["bytes"])
    ctl.journal.event(t, jid, "adopt", f"checkpoint of attempt {got['attempt']} at {got['samples']} samples, "
                                       "written after the previous scheduler died")
    adopt_losses(ctl, jid, got["losses"])
    return None if got["done"] else float(got["samples"])


def adopt_losses(ctl: "Controller", jid: str, record: dict | None) -> None:
    """Journal the losses an adopted checkpoint's sidecar carries past the journal's last one:
    a job that ran to its end while its scheduler was dead (a fast one started just before a
    kill -9) had no loss journaled at all, and kept none."""
    if record is None:
        return
    last = max((s for s, _ in ctl.losses[jid]), default=-1)
    new = [p for p in record["points"] if p[0] > last]
    if new:
        ctl.record_losses(jid, new, record["first"], record["last"])
