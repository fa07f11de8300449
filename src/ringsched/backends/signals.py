"""SIGINT and SIGTERM end a run the same clean way: checkpoint running jobs, then exit.

``terminate_gracefully()`` (installed by the ``ringsched`` entry point for every command, and
again by ``run`` and ``serve`` after Ray replaced it) turns SIGTERM into an :class:`Interrupted`
exception, a ``KeyboardInterrupt`` that remembers its signal, so every command's Ctrl-C path
(partial results kept) serves SIGTERM too. The controller catches it, asks every running job to checkpoint and stop, waits for them,
closes the journal, and the command exits with ``128 + signal`` (130 for SIGINT, 143 for
SIGTERM), the shell's convention for "ended by this signal". A second signal while the jobs
checkpoint is not swallowed: it interrupts the wait, and the workers still running are
killed (they keep their previous checkpoint).
"""

from __future__ import annotations

import os
import signal


class Interrupted(KeyboardInterrupt):
    """SIGTERM asked the run to end: handled wherever Ctrl-C is, with its signal kept."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def exit_code(signum: int) -> int:
    return 128 + int(signum)


received: int | None = None  # the last signal turned into Interrupted (typer reports any interrupt as 130)


def _raise(signum, frame) -> None:
    global received
    received = signum
    raise Interrupted(signum)


def terminate_gracefully() -> object:
    """Install the SIGTERM handler; returns the previous one (for ``restore``)."""
    return signal.signal(signal.SIGTERM, _raise)


def restore(previous) -> None:
    signal.signal(signal.SIGTERM, previous)


def exit_at_signal(code: int) -> None:
    """The command's outcome is decided: a signal from now on (during the interpreter's
    teardown, which takes a while with torch or Ray loaded) ends the process at once with that
    same code instead of the default "killed by signal"."""
    def _exit(signum, frame) -> None:
        os._exit(code)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit)
