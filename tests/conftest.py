"""Shared test helpers: where ../shared lives, and running the CLI in-process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RINGSCHED_SHARED", REPO.parent / "shared"))
POLLUX = SHARED / "profiles" / "pollux-measured"


def needs_shared(path: Path = SHARED):
    return pytest.mark.skipif(not path.exists(), reason=f"shared data not present at {path}")


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `ringsched ARGS...` in-process; returns (exit_code, stdout, stderr)."""
    from ringsched.cli.main import main

    def run(*args: str):
        monkeypatch.setattr(sys, "argv", ["ringsched", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def pytest_configure(config):
    # issue 20: real runs of the fault suite (select with -m backend, skip with -m "not backend")
    config.addinivalue_line("markers", "backend: runs real workers (PyTorch processes); minutes, not seconds")
