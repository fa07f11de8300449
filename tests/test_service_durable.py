"""The service survives kill -9: 20 real demo jobs submitted over a run, the service killed
twice with SIGKILL and restarted on the same state; every job completes exactly once, from
its last checkpoint, with its loss falling (issue 17's target, scaled down in job size)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ringsched.service.client import Client

pytestmark = [pytest.mark.backend, pytest.mark.slow]

KINDS = (("digits_cnn", "digits-cnn", 32, 500), ("synth_mlp", "synth-mlp", 64, 400), ("synth_wide", "synth-wide", 32, 500))
N_JOBS = 20
DEADLINE_S = 170.0
START_TIMEOUT_S = 60.0


def job(i: int) -> dict:
    fn, model, bsz, steps = KINDS[i % len(KINDS)]
    return {"name": f"j{i:02d}-{model}", "entry": f"ringsched.backends.demo_jobs:{fn}", "batch": bsz,
            "work": {"samples": bsz * steps}, "max_workers": 2, "seed": i, "model": model}


def query(state: Path, sql: str, args=()) -> list[dict]:
    db = sqlite3.connect(f"file:{state / 'journal.sqlite'}?mode=ro", uri=True, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute(sql, args)]
    finally:
        db.close()


def start(state: Path, backend: tuple[str, ...] = ()) -> tuple[subprocess.Popen, Client]:
    """The service on ``state`` (``backend``: extra ``serve`` options), once it is ready."""
    url_file = state / "service.url"
    url_file.unlink(missing_ok=True)  # the killed service's address
    proc = subprocess.Popen([sys.executable, "-m", "ringsched.cli.main", "serve", "--cluster", "2x2", "--state",
                             str(state), "--port", "0", "--slot-s", "2", "--checkpoint-s", "1", *backend],
                            stdout=subprocess.DEVNULL, stderr=open(state.parent / "serve.log", "a"))
    t0 = time.monotonic()
    while not url_file.exists():
        assert proc.poll() is None, (state.parent / "serve.log").read_text()[-3000:]
        assert time.monotonic() - t0 < START_TIMEOUT_S, "the service did not start"
        time.sleep(0.2)
    client = Client(url_file.read_text().strip())
    assert client.get("/api/health")["ready"]
    return proc, client


def wait_for(cond, timeout_s: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout_s, f"timed out waiting for {what}"
        time.sleep(0.3)


def kill9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def running_with_checkpoint(state: Path) -> bool:
    return bool(query(state, "SELECT a.job_id FROM attempts a JOIN checkpoints c ON c.attempt_id = a.id "
                             "WHERE a.ended_s IS NULL AND c.done = 0"))


def test_service_killed_twice_every_job_completes_once(tmp_path):
    t0 = time.monotonic()
    state = tmp_path / "state"
    kill_twice_and_finish(state, lambda: start(state), DEADLINE_S)
    errors = check_every_job_completed_once(state)
    print(report(errors, time.monotonic() - t0))


def kill_twice_and_finish(state: Path, start_service, deadline_s: float) -> None:
    """Submit N_JOBS jobs over three lives of the service (``start_service()``: a started one),
    the first two ended by SIGKILL while a job runs with a checkpoint, the last by SIGTERM once
    every job has completed (within ``deadline_s`` of the start)."""
    t0 = time.monotonic()
    proc, client = start_service()
    try:
        for i in range(0, 7):
            client.post("/api/jobs", {"job": job(i), "user": "alice"})
            time.sleep(0.3)
        wait_for(lambda: running_with_checkpoint(state), 60, "a running job with a checkpoint")
        client.post("/api/jobs", {"job": job(7), "user": "alice"})  # acknowledged, then killed at once
        kill9(proc)
        proc, client = start_service()
        for i in range(8, 14):
            client.post("/api/jobs", {"job": job(i), "user": "bob"})
            time.sleep(0.3)
        wait_for(lambda: running_with_checkpoint(state), 60, "a running job with a checkpoint after a restart")
        kill9(proc)
        proc, client = start_service()
        for i in range(14, N_JOBS):
            client.post("/api/jobs", {"job": job(i), "user": "carol"})
        wait_for(lambda: sum(j["state"] == "completed" for j in client.get("/api/jobs?all=true")) == N_JOBS,
                 deadline_s - (time.monotonic() - t0), "every job to complete")
        listed = client.get("/api/jobs?all=true")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(j["id"] for j in listed) == sorted(job(i)["name"] for i in range(N_JOBS))


def check_every_job_completed_once(state: Path) -> dict[str, float]:
    """The invariants of the journal after ``kill_twice_and_finish``; the median error of the
    predicted step time against the measured one, per job."""
    assert query(state, "SELECT COUNT(*) AS n FROM attempts WHERE outcome = 'orphaned'")[0]["n"] >= 2
    errors = {}
    for row in query(state, "SELECT * FROM jobs"):
        jid = row["job_id"]
        assert row["status"] == "completed" and row["completions"] == 1, row  # none lost, none twice
        assert row["done_samples"] == json.loads(row["spec"])["work_samples"]
        assert row["loss_last"] < row["loss_first"], row
        attempts = query(state, "SELECT * FROM attempts WHERE job_id=? ORDER BY id", (jid,))
        assert sum(a["outcome"] == "done" for a in attempts) <= 1, attempts
        finished = query(state, "SELECT MIN(t_s) AS t FROM checkpoints WHERE job_id=? AND done=1 AND bad=0",
                         (jid,))[0]["t"]
        for a in attempts:
            assert finished is None or a["started_s"] <= finished, f"{jid} ran again after it finished"
            before = query(state, "SELECT MAX(samples) AS s FROM checkpoints WHERE job_id=? AND bad=0 AND t_s<=?",
                           (jid, a["started_s"]))[0]["s"]
            assert a["start_samples"] == (before or 0.0), (jid, a)  # resumed from its last checkpoint
        errs = [abs(a["predicted_step_s"] / a["measured_step_s"] - 1) for a in attempts if a["measured_step_s"]]
        if errs:
            errors[jid] = statistics.median(errs)
    assert errors, "no attempt measured a step time"
    return errors


def report(errors: dict[str, float], wall_s: float) -> str:
    lines = [f"{jid}: {100 * e:.0f}%" for jid, e in sorted(errors.items())]
    return (f"\nstep-time error, predicted vs measured, median per job: {'; '.join(lines)}\n"
            f"median over jobs {100 * statistics.median(errors.values()):.0f}%, wall {wall_s:.0f} s")
