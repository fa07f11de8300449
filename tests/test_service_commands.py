"""A running service obeys hold, release and cancel, and its CLI verbs show what happened;
SIGTERM checkpoints the running job and exits 0, and a restart resumes it from that checkpoint."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from test_service_durable import query, start, wait_for

pytestmark = [pytest.mark.backend, pytest.mark.slow]


def long_job(name: str, steps: int) -> dict:
    return {"name": name, "entry": "ringsched.backends.demo_jobs:synth_mlp", "batch": 64,
            "work": {"samples": 64 * steps}, "max_workers": 2, "model": "synth-mlp"}


def verb(url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ringsched.cli.main", *args, "--url", url], capture_output=True,
                          text=True, timeout=60)


def state_of(client, jid: str) -> str:
    return client.get(f"/api/jobs/{jid}")["state"]


def test_hold_release_cancel_and_sigterm(tmp_path):
    state = tmp_path / "state"
    jobs_file = tmp_path / "jobs.yaml"
    # "long" cannot finish inside the test (100,000 steps): SIGTERM always meets it running
    jobs_file.write_text(json.dumps({"jobs": [long_job("keep", 1500), long_job("long", 100000)]}))
    proc, client = start(state)
    try:
        out = verb(client.url, "submit", str(jobs_file))
        assert out.returncode == 0 and out.stdout.split() == ["keep", "long"], out.stderr
        wait_for(lambda: query(state, "SELECT 1 FROM checkpoints WHERE job_id='keep'"), 60, "a checkpoint of keep")
        assert verb(client.url, "hold", "keep").returncode == 0
        wait_for(lambda: state_of(client, "keep") == "held", 30, "keep held")
        wait_for(lambda: not query(state, "SELECT 1 FROM attempts WHERE job_id='keep' AND ended_s IS NULL"), 60,
                 "keep's workers to stop")
        held_at = query(state, "SELECT done_samples FROM jobs WHERE job_id='keep'")[0]["done_samples"]
        time.sleep(3)  # held: no decision starts it again
        assert state_of(client, "keep") == "held"
        assert not query(state, "SELECT 1 FROM attempts WHERE job_id='keep' AND ended_s IS NULL")
        assert verb(client.url, "release", "keep").returncode == 0
        wait_for(lambda: state_of(client, "keep") == "completed", 90, "keep completed after its release")
        wait_for(lambda: query(state, "SELECT 1 FROM checkpoints WHERE job_id='long'"), 60, "a checkpoint of long")
        wait_for(lambda: state_of(client, "long") == "running", 30, "long running")
        proc.send_signal(signal.SIGTERM)  # checkpoints long, exits cleanly
        assert proc.wait(timeout=60) == 0
        after_term = query(state, "SELECT outcome FROM attempts WHERE job_id='long' ORDER BY id DESC LIMIT 1")
        assert after_term[0]["outcome"] == "stopped"
        stopped_at = query(state, "SELECT ckpt_samples FROM jobs WHERE job_id='long'")[0]["ckpt_samples"]
        proc, client = start(state)
        wait_for(lambda: query(state, "SELECT 1 FROM attempts WHERE job_id='long' AND ended_s IS NULL"), 60,
                 "long resumed after the restart")
        resumed = query(state, "SELECT start_samples FROM attempts WHERE job_id='long' ORDER BY id DESC LIMIT 1")
        assert resumed[0]["start_samples"] >= stopped_at > 0  # from its checkpoint, not from zero
        assert verb(client.url, "cancel", "long").returncode == 0
        wait_for(lambda: state_of(client, "long") == "cancelled", 30, "long cancelled")
        listed = json.loads(verb(client.url, "queue", "--all", "--json").stdout)
        assert {j["id"]: j["state"] for j in listed} == {"keep": "completed", "long": "cancelled"}
        assert json.loads(verb(client.url, "queue", "--json").stdout) == []  # finished jobs only with --all
        shown = verb(client.url, "status", "keep")
        assert shown.returncode == 0 and "completed" in shown.stdout and "predicted" in shown.stdout
        unknown = verb(client.url, "status", "nope")
        assert unknown.returncode == 2 and unknown.stderr.strip() == "ringsched: error: field 'ID': unknown job 'nope'"
        assert verb(client.url, "logs", "keep").returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # released from its checkpoint, not from zero (the first attempt after the release: under load
    # an earlier one may have been retried after a fault before the hold)
    released = query(state, "SELECT start_samples FROM attempts WHERE job_id='keep' AND started_s >= "
                            "(SELECT MAX(t_s) FROM events WHERE job_id='keep' AND kind='release') ORDER BY id")
    assert released[0]["start_samples"] >= held_at > 0
    assert query(state, "SELECT completions FROM jobs WHERE job_id='keep'")[0]["completions"] == 1
    assert query(state, "SELECT status FROM jobs WHERE job_id='long'")[0]["status"] == "cancelled"
