"""Online jobs: the commands a running controller drains at every turn of its loop.

The controller of a batch (``ringsched run``) knows all its jobs at the start and ends when
they are finished. Given a :class:`CommandSource` (``ringsched serve`` passes one), it runs
until the source is closed, and before each decision it applies what arrived meanwhile:

* ``submit``: a new job (its arrival is the controller clock when it is drained), journaled
  in ``jobs`` like a batch job, so a restarted controller resumes it from its checkpoint;
* ``cancel``: the job ends for good (``cancelled``); running workers checkpoint and stop;
* ``hold``: the job leaves the policy's view (``held``); running workers checkpoint and stop;
* ``release``: a held job is queued again (``pending``: the policy admits it anew).

Every command is idempotent on the state it leaves (a second ``cancel`` or a ``submit`` of a
journaled job does nothing), so a service may replay its whole command log after a crash.
"""

from __future__ import annotations

import dataclasses
import queue
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ringsched.backends.jobs_file import RunJob
from ringsched.errors import InputError

if TYPE_CHECKING:  # the controller imports this module
    from ringsched.backends.controller import Controller
    from ringsched.backends.journal import Journal

ONLINE_DIGEST = "online"  # meta jobs_digest of a service's journal: its jobs arrive while it runs
TERMINAL = ("completed", "failed", "rejected", "cancelled")  # a job in these states never runs again
KINDS = ("submit", "cancel", "hold", "release")


@dataclass(frozen=True)
class Command:
    kind: str  # one of KINDS
    job_id: str
    job: RunJob | None = None  # submit only


class CommandSource(Protocol):
    closed: bool

    def drain(self) -> list[Command]:
        """Commands that arrived since the last call (never blocks)."""


class CommandQueue:
    """A thread-safe CommandSource: an HTTP thread puts, the controller's thread drains."""

    def __init__(self):
        self._q: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self.closed = False

    def put(self, cmd: Command) -> None:
        self._q.put(cmd)

    def drain(self) -> list[Command]:
        out = []
        while True:
            try:
                out.append(self._q.get_nowait())
            except queue.Empty:
                return out


def online_check_journal(journal: "Journal", cluster_spec: str) -> bool:
    """True when ``journal`` is a service's journal on this cluster (to resume), False when it
    is empty; an ``InputError`` when it belongs to a batch run or another cluster."""
    meta = journal.meta()
    if "jobs_digest" not in meta:
        return False
    if meta["jobs_digest"] != ONLINE_DIGEST:
        raise InputError(f"state directory {journal.dir} belongs to a batch run ({meta.get('jobs_source', '?')!r}), "
                         "not to a service", field="state")
    if meta.get("cluster") != cluster_spec:
        raise InputError(f"state directory {journal.dir} belongs to a service on cluster "
                         f"{meta.get('cluster')!r}, not {cluster_spec!r}", field="state")
    return True


def apply_commands(ctl: "Controller", commands: list[Command], t: float) -> bool:
    """Apply commands in order; True when one may let a job start (a submit or a release)."""
    wake = False
    for cmd in commands:
        wake |= _APPLY[cmd.kind](ctl, cmd, t)
    return wake


def _submit(ctl: "Controller", cmd: Command, t: float) -> bool:
    if cmd.job_id in ctl.jobs:
        return False  # journaled before a restart: the journal already has it
    job = dataclasses.replace(cmd.job, arrival_s=t)
    ctl.jobs[job.name] = job
    ctl.add_prior(job.model)
    ctl.register(job, len(ctl.states))
    ctl.journal.add_job(job.name, job.to_dict())
    ctl.journal.event(t, job.name, "submit", f"{job.min_workers}..{job.max_workers} workers, "
                                             f"{job.work_samples} samples")
    ctl.notify(f"{job.name}: submitted")
    return True


def _set_status(ctl: "Controller", js, status: str, reason: str, t: float, verb: str, **journal) -> None:
    """Record a user's command on a job: its state, the journal row and event, a notice."""
    js.status, js.reason = status, reason
    ctl.journal.update_job(js.job_id, status=status, reason=reason, **journal)
    ctl.journal.event(t, js.job_id, verb, "")
    ctl.notify(f"{js.job_id}: {status if verb != 'release' else 'released'}")


def _cancel(ctl: "Controller", cmd: Command, t: float) -> bool:
    js = ctl.states.get(cmd.job_id)
    if js is None or js.status in TERMINAL:
        return False
    js.finish_s = t
    _set_status(ctl, js, "cancelled", "cancelled by user", t, "cancel", finish_s=t)
    ctl.stop_job(js.job_id)
    ctl.roster.end(js)
    return False


def _hold(ctl: "Controller", cmd: Command, t: float) -> bool:
    js = ctl.states.get(cmd.job_id)
    if js is None or js.status in TERMINAL or js.status == "held":
        return False
    _set_status(ctl, js, "held", "held by user", t, "hold")
    ctl.stop_job(js.job_id)
    ctl.roster.leave(js)
    return False


def _release(ctl: "Controller", cmd: Command, t: float) -> bool:
    js = ctl.states.get(cmd.job_id)
    if js is None or js.status != "held":
        return False
    _set_status(ctl, js, "pending", "", t, "release")
    return True


_APPLY = {"submit": _submit, "cancel": _cancel, "hold": _hold, "release": _release}
assert tuple(_APPLY) == KINDS
