"""One scheduler per state directory: an exclusive lock held for the whole run.

Two schedulers on one ``--state`` would each launch the same jobs from the same checkpoint
(and each mark the other's live attempts orphaned). So before anything in the directory is
read, the scheduler takes an exclusive ``flock`` on ``STATE/ringsched.lock`` and writes its
pid, host and start time into it. The kernel drops the lock when the owner dies however it
dies, so a lock file left by a dead owner is simply taken over (its old contents are kept as
``previous_owner`` for the log); a live owner makes the second scheduler refuse with one line
naming it. The descriptor is not inherited by child processes (Python opens it
non-inheritable), so the lock is the scheduler's alone.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from ringsched.errors import InputError

LOCK_FILE = "ringsched.lock"


class StateLocked(InputError):
    """The state directory is owned by a live scheduler."""


def _describe(owner: dict) -> str:
    since = owner.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(since))) if since else "an unknown time"
    return f"pid {owner.get('pid', '?')} on host {owner.get('host', '?')}, since {when}"


class StateLock:
    """The exclusive lock of one state directory (``acquire`` ... ``release``)."""

    def __init__(self, state_dir: str | Path):
        self.dir = Path(state_dir)
        self.path = self.dir / LOCK_FILE
        self.fd: int | None = None
        self.previous_owner: dict | None = None

    def _read(self, fd: int) -> dict:
        try:
            raw = os.pread(fd, 4096, 0)
            owner = json.loads(raw.decode("utf-8", "replace") or "{}")
            return owner if isinstance(owner, dict) else {}
        except (OSError, ValueError):
            return {}

    def acquire(self) -> "StateLock":
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = self._read(fd)
            os.close(fd)
            raise StateLocked(f"state directory {self.dir} is in use by another scheduler ({_describe(owner)}); "
                              f"wait for it to end or stop it, or use another --state", field="state") from None
        except OSError as e:
            os.close(fd)
            raise InputError(f"cannot lock state directory {self.dir}: {e.strerror}", field="state") from None
        self.previous_owner = self._read(fd) or None
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, me, 0)
            os.fsync(fd)
        except OSError:
            pass  # the lock itself is held; its description is only for the refusal message
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)  # no stale owner named once we are gone
        except OSError:
            pass
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None
