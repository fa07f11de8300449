"""The service's command log: ``service.sqlite`` under ``--state``, written before any answer.

An HTTP request that submits, cancels, holds or releases a job is committed here (SQLite,
WAL, ``synchronous=FULL``: on disk when the commit returns) and only then acknowledged and
put on the controller's queue. The controller journals what it does with each command in
``journal.sqlite``; a command acknowledged but not yet drained when the service is killed is
in this log only, so a restarted service replays the whole log (commands are idempotent on
the state they leave, ``backends.online``) and nothing accepted is lost or applied twice.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from ringsched.backends.jobs_file import RunJob
from ringsched.backends.online import Command

_SCHEMA = """
CREATE TABLE IF NOT EXISTS commands (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, job_id TEXT NOT NULL,
    spec TEXT, user TEXT NOT NULL DEFAULT '', priority INTEGER NOT NULL DEFAULT 0, wall_s REAL NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS one_submit ON commands(job_id) WHERE kind = 'submit';
"""


class DuplicateJob(Exception):
    """A job of that name was submitted before."""


class CommandLog:
    """The durable command log; one connection shared by the HTTP threads under a lock."""

    FILE = "service.sqlite"

    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / self.FILE
        self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def record(self, kind: str, job_id: str, *, job: RunJob | None = None, user: str = "",
               priority: int = 0) -> int:
        """Commit one command; its sequence number. A second submit of a name: DuplicateJob."""
        spec = json.dumps(job.to_dict(), sort_keys=True) if job is not None else None
        with self.lock:
            try:
                with self.db:
                    cur = self.db.execute("INSERT INTO commands(kind, job_id, spec, user, priority, wall_s) "
                                          "VALUES (?, ?, ?, ?, ?, ?)",
                                          (kind, job_id, spec, user, int(priority), time.time()))
            except sqlite3.IntegrityError:
                raise DuplicateJob(job_id) from None
            return int(cur.lastrowid)

    def replay(self) -> list[Command]:
        """Every command, in the order it was accepted (for a restarted controller)."""
        with self.lock:
            rows = self.db.execute("SELECT kind, job_id, spec FROM commands ORDER BY seq").fetchall()
        return [Command(r["kind"], r["job_id"], RunJob.from_dict(json.loads(r["spec"])) if r["spec"] else None)
                for r in rows]

    def submissions(self) -> dict[str, dict]:
        """job id -> who submitted it, with what priority, when (wall clock)."""
        with self.lock:
            rows = self.db.execute("SELECT job_id, user, priority, wall_s, seq FROM commands "
                                   "WHERE kind = 'submit' ORDER BY seq").fetchall()
        return {r["job_id"]: {"user": r["user"], "priority": r["priority"], "submitted_wall_s": r["wall_s"],
                              "seq": r["seq"]} for r in rows}

    def count(self) -> int:
        with self.lock:
            return int(self.db.execute("SELECT COUNT(*) FROM commands WHERE kind = 'submit'").fetchone()[0])
