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
consistent journal; readers (tests, a second terminal) may open it concurrently.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, spec TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    done_samples REAL NOT NULL DEFAULT 0, ckpt_samples REAL NOT NULL DEFAULT 0,
    attained_gpu_s REAL NOT NULL DEFAULT 0, restarts INTEGER NOT NULL DEFAULT 0,
    resizes INTEGER NOT NULL DEFAULT 0, preemptions INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0, lost_samples REAL NOT NULL DEFAULT 0,
    first_start_s REAL, finish_s REAL, loss_first REAL, loss_last REAL,
    completions INTEGER NOT NULL DEFAULT 0, last_workers INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS plans (seq INTEGER PRIMARY KEY AUTOINCREMENT, t_s REAL NOT NULL, allocations TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, placement TEXT NOT NULL,
    workers INTEGER NOT NULL, servers INTEGER NOT NULL, max_per_server INTEGER NOT NULL,
    local_bsz INTEGER NOT NULL, model TEXT NOT NULL,
    started_s REAL NOT NULL, ended_s REAL, outcome TEXT, start_samples REAL, end_samples REAL,
    predicted_step_s REAL, informed INTEGER NOT NULL DEFAULT 0,
    measured_step_s REAL, measured_steps INTEGER NOT NULL DEFAULT 0,
    pids TEXT NOT NULL DEFAULT '[]', host TEXT NOT NULL DEFAULT '', error TEXT);
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, attempt_id INTEGER, step INTEGER NOT NULL,
    samples REAL NOT NULL, done INTEGER NOT NULL, path TEXT NOT NULL, t_s REAL NOT NULL);
CREATE TABLE IF NOT EXISTS losses (job_id TEXT NOT NULL, step INTEGER NOT NULL, loss REAL NOT NULL,
    PRIMARY KEY (job_id, step));
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, t_s REAL NOT NULL, job_id TEXT,
    kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '');
"""

JOB_FIELDS = ("status", "reason", "done_samples", "ckpt_samples", "attained_gpu_s", "restarts", "resizes",
              "preemptions", "failures", "lost_samples", "first_start_s", "finish_s", "loss_first", "loss_last",
              "completions", "last_workers")
ATTEMPT_FIELDS = ("ended_s", "outcome", "start_samples", "end_samples", "predicted_step_s", "measured_step_s",
                  "measured_steps", "pids", "host", "error")


class Journal:
    """The SQLite journal of one run directory."""

    FILE = "journal.sqlite"

    def __init__(self, state_dir: str | Path):
        self.dir = Path(state_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / self.FILE
        self.is_new = not self.path.exists()
        self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def _tx(self, sql: str, args=()) -> sqlite3.Cursor:
        with self.db:
            return self.db.execute(sql, args)

    # ------------------------------------------------------------------ meta
    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self.db.execute("SELECT key, value FROM meta")}

    def set_meta(self, **values) -> None:
        with self.db:
            self.db.executemany("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
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
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO losses(job_id, step, loss) VALUES (?, ?, ?)",
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
                       path: str, t_s: float) -> None:
        self._tx("INSERT INTO checkpoints(job_id, attempt_id, step, samples, done, path, t_s) VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (job_id, attempt_id, int(step), float(samples), int(bool(done)), str(path), t_s))

    def checkpoints(self, job_id: str) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM checkpoints WHERE job_id=? ORDER BY seq", (job_id,))]

