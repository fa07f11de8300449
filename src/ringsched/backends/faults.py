"""How an attempt ended, and whose fault it was.

Three kinds of failure are kept apart, because they call for different responses:

* ``user``: the job's own code raised (an ``error`` event of kind "user"). The job fails with
  that error and is not retried: running it again would raise again.
* ``crash``: a worker died on its own without saying why (a native crash such as SIGSEGV, an
  ``os._exit`` with a non-zero code). Maybe the job's, maybe not: retried, and the job fails
  after ``RunConfig.max_failures`` of these.
* ``infra``: the machinery failed, not the job: a worker killed from outside (SIGKILL,
  SIGTERM: the OOM killer, an operator, a lost node), its zygote or channel lost, a launch
  that failed, a broken collective with no other cause, a checkpoint that failed verification
  or could not be written. Retried with exponential backoff (``backoff_s``), never failing the
  job.

A peer's "connection reset" after another rank died is a consequence, not a cause; so the
cause is looked for in this order: a user error, a rank that died without a word, any other
error, exit codes.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from ringsched.backends.worker import (EXIT_ABORTED, EXIT_CKPT_ERROR, EXIT_COMM_ERROR, EXIT_INFRA_ERROR,
                                       EXIT_ORPHANED)

ZYGOTE_LOST = -1000  # the exit code of a local worker whose zygote died before forking or reporting it
CHANNEL_LOST = -1001  # ... of one whose channel ended with its code unknown
LAUNCH_FAILED = -1002  # ... of a worker whose launch failed (Ray: placement group, actor)
INFRA_EXITS = {EXIT_COMM_ERROR, EXIT_CKPT_ERROR, EXIT_INFRA_ERROR, EXIT_ABORTED, EXIT_ORPHANED, ZYGOTE_LOST,
               CHANNEL_LOST, LAUNCH_FAILED, -signal.SIGKILL, -signal.SIGTERM, -signal.SIGHUP}
INFRA_ERROR_KINDS = {"comm", "ckpt", "infra", "launch"}
BACKOFF_FIRST_S, BACKOFF_MAX_S = 1.0, 30.0


@dataclass(frozen=True)
class Ending:
    outcome: str  # done | stopped | failed | crashed | infra
    fault: str | None  # None | user | crash | infra
    error: str | None


def backoff_s(consecutive_faults: int) -> float:
    """Delay before the n-th consecutive retry of a job: 1, 2, 4, ... seconds, at most 30."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2.0 ** max(0, consecutive_faults - 1))


def _describe_exit(rank: int, rc: int) -> str:
    if rc == ZYGOTE_LOST:
        return f"worker rank {rank} was lost with its zygote"
    if rc == CHANNEL_LOST:
        return f"worker rank {rank} ended with its channel"
    if rc < 0:
        return f"worker rank {rank} was killed (signal {-rc})"
    return f"worker rank {rank} exited with code {rc}"


def classify(exits: dict[int, int], errors: list[dict], ended_hint: str | None) -> Ending:
    """The outcome of an attempt from its ranks' exit codes, error events and rank 0's last word."""
    if ended_hint == "done":
        return Ending("done", None, None)
    user = [e for e in errors if e.get("kind") == "user"]
    if user:
        return Ending("failed", "user", user[0].get("error") or "the entry point raised")
    if ended_hint == "stopped" and exits and all(rc == 0 for rc in exits.values()):
        return Ending("stopped", None, None)
    said = {e.get("rank") for e in errors}
    silent = [(r, rc) for r, rc in sorted(exits.items()) if rc != 0 and r not in said]
    for r, rc in silent:  # died without a word: the cause; the others then lost the ring
        fault = "infra" if rc in INFRA_EXITS else "crash"
        return Ending("infra" if fault == "infra" else "crashed", fault, _describe_exit(r, rc))
    errs = [e for e in errors if e.get("error")]
    if errs:
        fault = "infra" if errs[0].get("kind") in INFRA_ERROR_KINDS else "crash"
        return Ending("infra" if fault == "infra" else "crashed", fault, errs[0]["error"])
    bad = {r: rc for r, rc in sorted(exits.items()) if rc != 0}
    if bad and all(rc in INFRA_EXITS for rc in bad.values()):
        return Ending("infra", "infra", f"worker exit codes {bad}")
    return Ending("crashed", "crash", f"worker exit codes {bad}" if bad else "workers ended without finishing or stopping")
