"""SIGINT and SIGTERM end a run the same clean way: checkpoint running jobs, then exit.

``terminate_gracefully()`` (installed by ``ringsched run``) turns SIGTERM into an
:class:`Interrupted` exception, as Python already turns SIGINT into ``KeyboardInterrupt``;
the controller catches both, asks every running job to checkpoint and stop, waits for them,
closes the journal, and the command exits with ``128 + signal`` (130 for SIGINT, 143 for
SIGTERM), the shell's convention for "ended by this signal". A second signal while the jobs
checkpoint is not swallowed: it interrupts the wait, and the workers still running are
killed (they keep their previous checkpoint).
"""

from __future__ import annotations

import signal


class Interrupted(BaseException):
    """A signal asked the run to end (like KeyboardInterrupt: not an ``Exception``)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def exit_code(signum: int) -> int:
    return 128 + int(signum)


def _raise(signum, frame) -> None:
    raise Interrupted(signum)


def terminate_gracefully() -> object:
    """Install the SIGTERM handler; returns the previous one (for ``restore``)."""
    return signal.signal(signal.SIGTERM, _raise)


def restore(previous) -> None:
    signal.signal(signal.SIGTERM, previous)
