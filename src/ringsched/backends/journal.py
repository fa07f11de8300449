"""The scheduler's durable state: one SQLite file, ``journal.sqlite`` under ``--state``.

Tables (docs/execution.md has the full schema):

* ``meta``: what the directory belongs to (jobs fingerprint, cluster, backend) and the
  scheduler clock at the last decision;
* ``jobs``: one row per job: its spec, status, counters, progress and loss endpoints;
* ``plans``: every decision that changed an allocation (time, allocations as JSON);
* ``attempts``: every launch of a job on a placement: workers, predicted and measured step
  time, samples at start and end, worker process ids, how it ended;
* ``checkpoints``: every checkpoint a job's rank 0 reported (step, samples, path);
* ``losses``: a sampled loss curve per job; ``events``: a readable log (resize, failure, ...).

Every write is its own transaction (WAL mode), so a scheduler killed at any instant leaves a
consistent journal; readers (tests, a second terminal) may open it concurrently. A new journal
is created complete (schema, version, run id) under a temporary name and renamed into place;
every open checks it first (``journal_check``), and a write the disk refuses (full, I/O error)
is a :class:`StateWriteError`: SQLite has rolled it back, so the file keeps its last
consistent state.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from pathlib import Path

from ringsched.backends import journal_check

SCHEMA_VERSION = "2"
SQLITE_IOERR, SQLITE_FULL = 10, 13


class StateWriteError(Exception):
    """The state directory refused a write (disk full, I/O error): one line, exit 3."""


def write_failure(path: Path, e: BaseException) -> StateWriteError:
    what = getattr(e, "strerror", None) or str(e)
    return StateWriteError(f"cannot write to {path}: {what}; the journal keeps its last consistent state: "
                           f"free space (or fix the disk) and run again with the same --state")


def _is_write_failure(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", 0) & 0xFF
    return code in (SQLITE_IOERR, SQLITE_FULL) or "disk is full" in str(e) or "disk I/O" in str(e)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, spec TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    done_samples REAL NOT NULL DEFAULT 0, ckpt_samples REAL NOT NULL DEFAULT 0,
    attained_gpu_s REAL NOT NULL DEFAULT 0, restarts INTEGER NOT NULL DEFAULT 0,
    resizes INTEGER NOT NULL DEFAULT 0, preemptions INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0, lost_samples REAL NOT NULL DEFAULT 0,
    first_start_s REAL, finish_s REAL, loss_first REAL, loss_last REAL,
    completions INTEGER NOT NULL DEFAULT 0, last_workers INTEGER NOT NULL DEFAULT 0,
    infra_faults INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS plans (seq INTEGER PRIMARY KEY AUTOINCREMENT, t_s REAL NOT NULL, allocations TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, placement TEXT NOT NULL,
    workers INTEGER NOT NULL, servers INTEGER NOT NULL, max_per_server INTEGER NOT NULL,
    local_bsz INTEGER NOT NULL, model TEXT NOT NULL,
    started_s REAL NOT NULL, ended_s REAL, outcome TEXT, start_samples REAL, end_samples REAL,
    predicted_step_s REAL, informed INTEGER NOT NULL DEFAULT 0,
    measured_step_s REAL, measured_steps INTEGER NOT NULL DEFAULT 0,
    pids TEXT NOT NULL DEFAULT '[]', host TEXT NOT NULL DEFAULT '', error TEXT, fault TEXT);
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, attempt_id INTEGER, step INTEGER NOT NULL,
    samples REAL NOT NULL, done INTEGER NOT NULL, path TEXT NOT NULL, t_s REAL NOT NULL,
    sha256 TEXT NOT NULL DEFAULT '', bytes INTEGER NOT NULL DEFAULT 0, bad INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS losses (job_id TEXT NOT NULL, step INTEGER NOT NULL, loss REAL NOT NULL,
    PRIMARY KEY (job_id, step));
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, t_s REAL NOT NULL, job_id TEXT,
    kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '');
"""

JOB_FIELDS = ("status", "reason", "done_samples", "ckpt_samples", "attained_gpu_s", "restarts", "resizes",
              "preemptions", "failures", "lost_samples", "first_start_s", "finish_s", "loss_first", "loss_last",
              "completions", "last_workers", "infra_faults")
ATTEMPT_FIELDS = ("ended_s", "outcome", "start_samples", "end_samples", "predicted_step_s", "measured_step_s",
                  "measured_steps", "pids", "host", "error", "fault")


class Journal:
    """The SQLite journal of one run directory."""

    FILE = "journal.sqlite"

    def __init__(self, state_dir: str | Path):
        """Open (checked) or create the journal of ``state_dir``; the caller holds its lock."""
        self.dir = Path(state_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / self.FILE
        self.is_new = not self.path.exists()
        if self.is_new:
            self._create()
        journal_check.check_files(self.path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as e:
            if _is_write_failure(e):
                raise write_failure(self.path, e) from None
            raise journal_check.damaged(self.path, str(e)) from None
        self.run_id = journal_check.check_open(self.path, self.db, SCHEMA_VERSION)["run_id"]
        journal_check.break_seal(self.path)

    def _create(self) -> None:
        """A complete journal (schema, version, run id) under a temporary name, renamed into
        place: ``journal.sqlite`` is never seen empty or half made."""
        tmp = self.dir / f".{self.FILE}.new{os.getpid()}"
        try:
            db = sqlite3.connect(tmp, isolation_level=None)
            db.execute("PRAGMA journal_mode=DELETE")
            db.executescript(_SCHEMA)
            with db:
                db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                               [("schema", SCHEMA_VERSION), ("run_id", secrets.token_hex(8)),
                                ("created", str(time.time()))])
            db.close()
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            dfd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except (OSError, sqlite3.Error) as e:
            for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
                leftover.unlink(missing_ok=True)
            raise write_failure(self.dir, e) from None

    def close(self) -> None:
        """Fold the WAL into the file and seal it (its checksum), so any later change is seen."""
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.db.close()
        except sqlite3.Error:
            self.db.close()
            return
        wal = self.path.with_name(self.path.name + "-wal")
        if not wal.exists() or wal.stat().st_size == 0:
            journal_check.write_seal(self.path)

    def _tx(self, sql: str, args=()) -> sqlite3.Cursor:
        try:
            with self.db:
                return self.db.execute(sql, args)
        except sqlite3.OperationalError as e:
            if _is_write_failure(e):
                raise write_failure(self.path, e) from None
            raise

    def _tx_many(self, sql: str, rows: list) -> None:
        try:
            with self.db:
                self.db.executemany(sql, rows)
        except sqlite3.OperationalError as e:
            if _is_write_failure(e):
                raise write_failure(self.path, e) from None
            raise

    # ------------------------------------------------------------------ meta
    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self.db.execute("SELECT key, value FROM meta")}

    def set_meta(self, **values) -> None:
        self._tx_many("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                      [(k, str(v)) for k, v in values.items()])

    # ------------------------------------------------------------------ jobs
    def add_job(self, job_id: str, spec: dict) -> None:
        self._tx("INSERT INTO jobs(job_id, spec, status) VALUES (?, ?, 'pending')", (job_id, json.dumps(spec, sort_keys=True)))

    def update_job(self, job_id: str, **fields) -> None:
        bad = set(fields) - set(JOB_FIELDS)
        if bad:
            raise KeyError(f"unknown job fields {sorted(bad)}")
        cols = ", ".join(f"{k}=?" for k in fields)
        self._tx(f"UPDATE jobs SET {cols} WHERE job_id=?", (*fields.values(), job_id))

    def jobs(self) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM jobs ORDER BY rowid")]

    # ------------------------------------------------------------------ plans, events, losses
    def add_plan(self, t_s: float, allocations: dict) -> None:
        self._tx("INSERT INTO plans(t_s, allocations) VALUES (?, ?)",
                 (t_s, json.dumps({k: list(v) for k, v in sorted(allocations.items())})))

    def event(self, t_s: float, job_id: str | None, kind: str, detail: str = "") -> None:
        self._tx("INSERT INTO events(t_s, job_id, kind, detail) VALUES (?, ?, ?, ?)", (t_s, job_id, kind, detail))

    def add_losses(self, job_id: str, points: list[tuple[int, float]]) -> None:
        if points:
            self._tx_many("INSERT OR REPLACE INTO losses(job_id, step, loss) VALUES (?, ?, ?)",
                          [(job_id, int(s), float(v)) for s, v in points])

    def losses(self, job_id: str) -> list[tuple[int, float]]:
        return [(r[0], r[1]) for r in self.db.execute("SELECT step, loss FROM losses WHERE job_id=? ORDER BY step", (job_id,))]

    # ------------------------------------------------------------------ attempts
    def start_attempt(self, job_id: str, placement, *, servers: int, max_per_server: int, local_bsz: int,
                      model: str, started_s: float, start_samples: float, predicted_step_s: float,
                      informed: bool = False) -> int:
        """A new attempt; ``informed``: the prediction came from a model refitted on measurements."""
        cur = self._tx("INSERT INTO attempts(job_id, placement, workers, servers, max_per_server, local_bsz, model, "
                       "started_s, start_samples, predicted_step_s, informed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (job_id, " ".join(map(str, placement)), len(placement), servers, max_per_server, local_bsz,
                        model, started_s, start_samples, predicted_step_s, int(bool(informed))))
        return int(cur.lastrowid)

    def update_attempt(self, attempt_id: int, **fields) -> None:
        bad = set(fields) - set(ATTEMPT_FIELDS)
        if bad:
            raise KeyError(f"unknown attempt fields {sorted(bad)}")
        if "pids" in fields and not isinstance(fields["pids"], str):
            fields["pids"] = json.dumps(fields["pids"])
        cols = ", ".join(f"{k}=?" for k in fields)
        self._tx(f"UPDATE attempts SET {cols} WHERE id=?", (*fields.values(), attempt_id))

    def attempts(self, job_id: str | None = None, *, open_only: bool = False) -> list[dict]:
        sql = "SELECT * FROM attempts"
        cond, args = [], []
        if job_id is not None:
            cond.append("job_id=?")
            args.append(job_id)
        if open_only:
            cond.append("ended_s IS NULL")
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        rows = [dict(r) for r in self.db.execute(sql + " ORDER BY id", args)]
        for r in rows:
            r["pids"] = json.loads(r["pids"] or "[]")
        return rows

    # ------------------------------------------------------------------ checkpoints
    def add_checkpoint(self, job_id: str, attempt_id: int | None, step: int, samples: float, done: bool,
                       path: str, t_s: float, *, sha256: str = "", size_bytes: int = 0) -> None:
        self._tx("INSERT INTO checkpoints(job_id, attempt_id, step, samples, done, path, t_s, sha256, bytes) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (job_id, attempt_id, int(step), float(samples), int(bool(done)), str(path), t_s, sha256,
                  int(size_bytes)))

    def mark_checkpoint_bad(self, seq: int) -> None:
        self._tx("UPDATE checkpoints SET bad=1 WHERE seq=?", (seq,))

    def checkpoints(self, job_id: str) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM checkpoints WHERE job_id=? ORDER BY seq", (job_id,))]

    def last_time_s(self) -> float:
        """The latest scheduler time anything was journaled at (a resumed clock starts there)."""
        q = ("SELECT MAX(t) FROM (SELECT MAX(t_s) AS t FROM checkpoints UNION ALL SELECT MAX(t_s) FROM events "
             "UNION ALL SELECT MAX(started_s) FROM attempts UNION ALL SELECT MAX(ended_s) FROM attempts "
             "UNION ALL SELECT MAX(t_s) FROM plans)")
        return float(self.db.execute(q).fetchone()[0] or 0.0)
