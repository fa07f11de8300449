"""Signals at the edges of a command: once its outcome is decided, a signal during the
interpreter's teardown must not turn it into "killed by signal" (the race CI once hit: a
SIGTERM landing after every job had completed gave -15 instead of 0 or 143)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SNIPPET = """
import os, signal, sys
from ringsched.backends import signals
signals.terminate_gracefully()
code = {code}
{install}
os.kill(os.getpid(), signal.{sig})
import time; time.sleep(5)  # the teardown a signal interrupts
sys.exit(code)
"""


def run_snippet(code: int, sig: str, install: bool) -> int:
    src = SNIPPET.format(code=code, sig=sig, install="signals.exit_at_signal(code)" if install else "")
    return subprocess.run([sys.executable, "-c", src], capture_output=True, timeout=60).returncode


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("code", [0, 1, 143])
def test_a_signal_after_the_outcome_keeps_the_exit_code(code, sig):
    assert run_snippet(code, sig, install=True) == code


def test_control_without_the_teardown_handler_the_signal_wins():
    """The control: with only the run's handler, the same signal ends the process otherwise
    (an Interrupted traceback, exit 1), so the test above can fail."""
    rc = run_snippet(0, "SIGTERM", install=False)
    assert rc != 0


def test_run_exits_with_the_documented_codes():
    """docs/execution.md's table: 0 all completed; 1 a job failed, was rejected or never ran;
    128 + the signal (130 SIGINT, 143 SIGTERM) when a signal ended the run, whatever else."""
    import signal

    from ringsched.cli.run_cmd import exit_code

    done = {"interrupted": None, "failed": 0, "rejected": 0, "unfinished": 0}
    assert exit_code(done) == 0
    for what in ("failed", "rejected", "unfinished"):
        assert exit_code({**done, what: 1}) == 1, what
    assert exit_code({**done, "interrupted": signal.SIGTERM, "failed": 1}) == 143
    assert exit_code({**done, "interrupted": signal.SIGINT}) == 130
