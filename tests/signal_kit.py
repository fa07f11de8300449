"""Run a ringsched command and signal it at a line of its progress, as Ctrl-C (or Slurm's
SIGTERM) would: the shared part of the interrupt tests of compare and suite."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass
class Signalled:
    returncode: int
    matched: str | None  # the stderr line at which the signal was sent (None: never)
    stdout: str
    stderr: str  # every stderr line, before and after the signal


def signal_at(args: list[str], sig: int, at, timeout_s: float = 120) -> Signalled:
    """Start ``ringsched ARGS``, send ``sig`` at the first stderr line for which ``at(line)`` holds,
    and wait for the end (each phase within ``timeout_s``; the process is killed otherwise)."""
    proc = subprocess.Popen([sys.executable, "-m", "ringsched.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            # a shell running the tests in the background ignores SIGINT, and the
                            # child would inherit that: give it the default a terminal gives
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines, matched = [], None
    deadline = time.monotonic() + timeout_s
    try:
        for line in proc.stderr:
            lines.append(line)
            if at(line):
                matched = line
                proc.send_signal(sig)  # as Ctrl-C does, to the command's process
                break
            assert time.monotonic() < deadline, "".join(lines)
        stdout, rest = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    return Signalled(proc.returncode, matched, stdout, "".join(lines) + rest)
