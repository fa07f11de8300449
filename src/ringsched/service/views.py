"""What the API answers, read from the journal (a read-only SQLite connection per request).

The controller writes ``journal.sqlite`` from its own thread; WAL lets these readers see the
last committed state without blocking it. A job the command log holds but the journal not yet
(acknowledged, not drained) is ``submitted``. States seen by users: ``submitted``, ``queued``,
``running``, ``held``, ``completed``, ``failed``, ``rejected``, ``cancelled``.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections import deque
from pathlib import Path

from ringsched.backends.journal import Journal
from ringsched.cluster.model import Cluster

STATES = ("submitted", "queued", "running", "held", "completed", "failed", "rejected", "cancelled")
LOG_TAIL_LINES = 40


def _connect(state_dir: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"file:{state_dir / Journal.FILE}?mode=ro", uri=True, timeout=10.0)
    db.row_factory = sqlite3.Row
    return db


def _step_error(pred: float | None, meas: float | None) -> float | None:
    return abs(pred / meas - 1.0) if pred and meas else None


class Views:
    """Read-only answers over one state directory."""

    def __init__(self, state_dir: Path, cluster: Cluster, cluster_spec: str, submissions):
        self.dir = Path(state_dir)
        self.cluster = cluster
        self.cluster_spec = cluster_spec
        self.submissions = submissions  # () -> {job id: {user, priority, submitted_wall_s, seq}}

    def _rows(self) -> tuple[list[dict], dict[str, dict]]:
        with _connect(self.dir) as db:
            jobs = [dict(r) for r in db.execute("SELECT * FROM jobs ORDER BY rowid")]
            running = {r["job_id"]: dict(r) for r in db.execute("SELECT * FROM attempts WHERE ended_s IS NULL")}
        return jobs, running

    @staticmethod
    def _state(row: dict, running: dict) -> str:
        status = row["status"]
        if status in ("pending", "active", "waiting"):
            return "running" if row["job_id"] in running else "queued"
        return status

    def jobs(self, *, all_jobs: bool = True, state: str | None = None, user: str | None = None) -> list[dict]:
        """Every job (submitted first to last); ``all_jobs=False`` leaves finished ones out."""
        subs = self.submissions()
        rows, running = self._rows()
        out, seen = [], set()
        for row in rows:
            spec = json.loads(row["spec"])
            sub = subs.get(row["job_id"], {})
            att = running.get(row["job_id"])
            seen.add(row["job_id"])
            out.append({"id": row["job_id"], "state": self._state(row, running), "user": sub.get("user", ""),
                        "priority": sub.get("priority", 0), "submitted_wall_s": sub.get("submitted_wall_s"),
                        "workers": att["workers"] if att else 0,
                        "placement": [int(s) for s in att["placement"].split()] if att else [],
                        "done_samples": row["done_samples"], "work_samples": spec["work_samples"],
                        "min_workers": spec["min_workers"], "max_workers": spec["max_workers"],
                        "reason": row["reason"], "loss_first": row["loss_first"], "loss_last": row["loss_last"],
                        "completions": row["completions"], "restarts": row["restarts"]})
        for jid, sub in subs.items():
            if jid not in seen:
                out.append({"id": jid, "state": "submitted", "user": sub["user"], "priority": sub["priority"],
                            "submitted_wall_s": sub["submitted_wall_s"], "workers": 0, "placement": [],
                            "done_samples": 0.0, "work_samples": None, "reason": "", "completions": 0,
                            "restarts": 0, "loss_first": None, "loss_last": None})
        return [j for j in out if (all_jobs or j["state"] not in ("completed", "failed", "rejected", "cancelled"))
                and (state is None or j["state"] == state) and (user is None or j["user"] == user)]

    def job(self, job_id: str) -> dict | None:
        """One job: its row of ``jobs`` plus placement history, step times, events, log tail."""
        found = [j for j in self.jobs() if j["id"] == job_id]
        if not found:
            return None
        out = found[0]
        with _connect(self.dir) as db:
            attempts = [dict(r) for r in db.execute("SELECT * FROM attempts WHERE job_id=? ORDER BY id", (job_id,))]
            events = [dict(r) for r in db.execute("SELECT t_s, kind, detail FROM events WHERE job_id=? ORDER BY seq",
                                                  (job_id,))]
        out["attempts"] = [{"attempt": a["id"], "placement": [int(s) for s in a["placement"].split()],
                            "workers": a["workers"], "started_s": a["started_s"], "ended_s": a["ended_s"],
                            "outcome": a["outcome"], "predicted_step_s": a["predicted_step_s"],
                            "measured_step_s": a["measured_step_s"],
                            "step_error": _step_error(a["predicted_step_s"], a["measured_step_s"]),
                            "error": a["error"]} for a in attempts]
        errs = [a["step_error"] for a in out["attempts"] if a["step_error"] is not None]
        out["median_step_error"] = statistics.median(errs) if errs else None
        out["events"] = events
        out["log_tail"] = self.log_tail(job_id, attempts[-1]["id"]) if attempts else []
        return out

    def log_tail(self, job_id: str, attempt_id: int) -> list[str]:
        path = self.dir / "logs" / job_id / f"attempt{attempt_id}-rank0.log"
        if not path.is_file():
            return []
        with path.open(errors="replace") as f:
            return [line.rstrip("\n") for line in deque(f, maxlen=LOG_TAIL_LINES)]

    def cluster_state(self) -> dict:
        """Servers, their GPUs and which running jobs hold them; recent decisions."""
        _, running = self._rows()
        used = [[] for _ in range(self.cluster.num_servers)]
        for jid, a in sorted(running.items()):
            for s in a["placement"].split():
                used[int(s)].append(jid)
        with _connect(self.dir) as db:
            plans = [{"t_s": r["t_s"], "allocations": json.loads(r["allocations"])}
                     for r in db.execute("SELECT t_s, allocations FROM plans ORDER BY seq DESC LIMIT 20")]
        servers = [{"server": s, "gpus": int(self.cluster.gpus[s]), "jobs": used[s]} for s in range(len(used))]
        return {"cluster": self.cluster_spec, "servers": servers, "total_gpus": int(self.cluster.total_gpus),
                "busy_gpus": sum(len(u) for u in used), "recent_decisions": plans}

    def metrics(self, extra: dict[str, float]) -> str:
        """Prometheus text exposition (format 0.0.4)."""
        jobs = self.jobs()
        cl = self.cluster_state()
        lines = ["# HELP ringsched_jobs Jobs by state.", "# TYPE ringsched_jobs gauge"]
        for st in STATES:
            lines.append(f'ringsched_jobs{{state="{st}"}} {sum(1 for j in jobs if j["state"] == st)}')
        for name, value, help_text in (
                ("ringsched_gpus", cl["total_gpus"], "GPU slots of the cluster."),
                ("ringsched_gpus_busy", cl["busy_gpus"], "GPU slots running a worker."),
                *((k, v, h) for k, (v, h) in extra.items())):
            kind = "counter" if name.endswith("_total") else "gauge"
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {value:g}"]
        return "\n".join(lines) + "\n"
