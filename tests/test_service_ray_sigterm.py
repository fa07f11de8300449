"""SIGTERM (what Slurm, systemd and Kubernetes send) to ``ringsched run --backend ray``: ray.init
installs a SIGTERM handler of its own that aborts the driver, so the run re-installs its own
after it (cli/run_cmd.py). The running jobs checkpoint, the run exits 143 with nothing left
open, and a rerun on the same state completes every job once, from those checkpoints."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from test_backends import query, wait_for

pytest.importorskip("ray")

pytestmark = [pytest.mark.backend, pytest.mark.slow]

JOBS = "demo:2,scale=0.2"


def run_cmd(state) -> list[str]:
    return [sys.executable, "-m", "ringsched.cli.main", "run", "--backend", "ray", "--cluster", "2x2",
            "--jobs", JOBS, "--slot-s", "2", "--checkpoint-s", "1", "--state", str(state), "--json"]


def test_sigterm_checkpoints_ray_jobs_and_a_rerun_completes_them(tmp_path):
    state = tmp_path / "state"
    err = tmp_path / "first.err"
    with open(err, "w") as log:
        proc = subprocess.Popen(run_cmd(state), stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            # a job trains and has checkpointed: the handlers are in place (ray.init is long done)
            wait_for(lambda: query(state, "SELECT c.job_id FROM checkpoints c JOIN attempts a ON a.id = c.attempt_id "
                                          "WHERE a.ended_s IS NULL AND c.done = 0"), 180, "a periodic checkpoint", proc)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 143, err.read_text()[-3000:]
    first = json.loads(out)
    assert first["interrupted"] == signal.SIGTERM and first["unfinished"] >= 1
    assert query(state, "SELECT id FROM attempts WHERE ended_s IS NULL") == []  # every attempt closed
    unfinished = query(state, "SELECT job_id, ckpt_samples FROM jobs WHERE status != 'completed'")
    assert len(unfinished) == first["unfinished"]
    trained = 0
    for j in unfinished:  # the signal stopped each running job where it checkpointed (0: still starting)
        last = query(state, "SELECT outcome, end_samples FROM attempts WHERE job_id = ? ORDER BY id DESC LIMIT 1",
                     (j["job_id"],))
        if last:
            assert last[0]["outcome"] == "stopped" and last[0]["end_samples"] == j["ckpt_samples"], (j, last)
            trained += j["ckpt_samples"] > 0
    assert trained >= 1  # the job seen checkpointing kept its progress
    last_id = query(state, "SELECT MAX(id) AS m FROM attempts")[0]["m"]

    rerun = subprocess.run(run_cmd(state), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = json.loads(rerun.stdout)
    assert summary["completed"] == 2
    for j in summary["jobs"]:
        assert j["status"] == "completed" and j["completions"] == 1, j
        assert j["loss_last"] < j["loss_first"], j
    for j in unfinished:  # resumed from the checkpoint the signal left
        first_again = query(state, "SELECT start_samples FROM attempts WHERE job_id = ? AND id > ? ORDER BY id LIMIT 1",
                            (j["job_id"], last_id))
        assert first_again and first_again[0]["start_samples"] == j["ckpt_samples"], (j, first_again)
