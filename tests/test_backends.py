"""Real execution (issue 6): the local backend end to end, a killed worker, a killed scheduler, a
failing entry point, bad jobs files; the online refit. The Ray backend is in test_backend_ray.py.

Runs are real (PyTorch DDP over gloo on this machine) but small: scaled-down demo jobs, slots of
2 s. Every run is a subprocess with a timeout, so a hang fails a test instead of the suite.
Nothing here asserts on time.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ringsched.backends.jobs_file import load_jobs
from ringsched.backends.refit import CPU_PRIOR, Measurement, refit
from ringsched.perfmodel.ring import step_time_s

RUN_TIMEOUT_S = 240


def ringsched_run(*args: str, timeout: float = RUN_TIMEOUT_S) -> tuple[int, dict | None, str]:
    """`ringsched run ARGS --json` in a subprocess: (exit code, summary, stderr)."""
    p = subprocess.run([sys.executable, "-m", "ringsched.cli.main", "run", *args, "--json"],
                       capture_output=True, text=True, timeout=timeout)
    summary = json.loads(p.stdout) if p.stdout.strip() else None
    return p.returncode, summary, p.stderr


def query(state: Path, sql: str, args=()) -> list[dict]:
    try:
        db = sqlite3.connect(f"file:{state / 'journal.sqlite'}?mode=ro", uri=True, timeout=30)
    except sqlite3.OperationalError:
        return []  # not created yet
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute(sql, args)]
    except sqlite3.OperationalError:
        return []  # tables not created yet
    finally:
        db.close()


def wait_for(cond, timeout: float, what: str, proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the scheduler exited ({proc.returncode}) before {what}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def by_job(summary: dict) -> dict:
    return {j["job"]: j for j in summary["jobs"]}


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return bool(f.read())
    except OSError:
        return False


# ---------------------------------------------------------------------------- local end to end
def test_local_demo_end_to_end(tmp_path):
    state = tmp_path / "state"
    rc, s, err = ringsched_run("--backend", "local", "--cluster", "2x2", "--jobs", "demo:3,scale=0.25",
                               "--policy", "optimus", "--slot-s", "2", "--state", str(state))
    assert rc == 0, err[-3000:]
    assert s["completed"] == 3 and s["failed"] == 0 and s["unfinished"] == 0
    for j in s["jobs"]:
        assert j["status"] == "completed" and j["completions"] == 1
        assert j["done_samples"] == j["work_samples"]
        assert j["loss_last"] < j["loss_first"], j
        measured = [x for x in j["step_time"] if x["measured_s"]]
        assert measured and all(x["predicted_s"] > 0 for x in measured)
        assert j["median_step_error"] is not None
    assert s["median_step_error"] is not None and s["median_step_error_refit"] is not None
    rows = query(state, "SELECT job_id, status, completions FROM jobs")
    assert {r["status"] for r in rows} == {"completed"} and all(r["completions"] == 1 for r in rows)
    assert query(state, "SELECT COUNT(*) AS n FROM plans")[0]["n"] >= 1
    # a finished run's state is final: running again starts nothing
    rc2, s2, _ = ringsched_run("--cluster", "2x2", "--jobs", "demo:3,scale=0.25", "--policy", "optimus",
                               "--slot-s", "2", "--state", str(state))
    assert rc2 == 0 and s2["completed"] == 3
    assert len(query(state, "SELECT id FROM attempts")) == sum(len(j["step_time"]) for j in s["jobs"])


# ---------------------------------------------------------------------------- a resize
RESIZE_JOBS = '''
jobs:
  - name: big
    entry: ringsched.backends.demo_jobs:digits_cnn
    batch: 32
    work: {samples: 64000}
    min_workers: 1
    max_workers: 4
  - name: late
    entry: ringsched.backends.demo_jobs:synth_mlp
    batch: 64
    work: {samples: 12000}
    min_workers: 2
    max_workers: 2
    arrival_s: 1
'''


def test_arrival_shrinks_a_running_job(tmp_path):
    """Resizes by construction, whatever the machine's speed: 'big' starts alone on all four
    GPUs; one slot later 'late' arrives needing two, while 'big' (500 steps of four workers)
    is still running or starting, so the policy must shrink it. Later 'big' may grow back."""
    (tmp_path / "jobs.yaml").write_text(RESIZE_JOBS)
    rc, s, err = ringsched_run("--cluster", "2x2", "--jobs", str(tmp_path / "jobs.yaml"), "--policy", "optimus",
                               "--slot-s", "1", "--state", str(tmp_path / "state"))
    assert rc == 0, err[-3000:]
    jobs = by_job(s)
    assert jobs["big"]["workers"][:2] == [4, 2], jobs["big"]["workers"]
    assert jobs["big"]["resizes"] >= 1 and s["resizes"] >= 1
    assert all(j["status"] == "completed" and j["done_samples"] == j["work_samples"] for j in s["jobs"])
    assert jobs["big"]["loss_last"] < jobs["big"]["loss_first"]


# ---------------------------------------------------------------------------- a killed worker, a failing entry
FAILING_ENTRY = '''
def main(ctx):
    import torch
    net = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    model = ctx.prepare(net, opt)
    x = torch.randn(256, 4)
    for n, idx in enumerate(ctx.batches(256)):
        if n == 3:
            raise ValueError("bad input on purpose")
        loss = model(x[idx]).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        ctx.log(loss)
'''

FAULTY_JOBS = '''
jobs:
  - name: cnn
    entry: ringsched.backends.demo_jobs:digits_cnn
    batch: 32
    work: {samples: 24000}
    min_workers: 2
    max_workers: 2
  - name: mlp
    entry: ringsched.backends.demo_jobs:synth_mlp
    batch: 64
    work: {samples: 40000}
  - name: bad
    entry: failing_entry:main
    batch: 16
    work: {samples: 4000}
'''


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    """One run of three jobs on 2x2: 'bad' raises in its entry point; one worker of 'cnn' is
    SIGKILLed once 'cnn' has a checkpoint."""
    d = tmp_path_factory.mktemp("faulty")
    (d / "failing_entry.py").write_text(FAILING_ENTRY)
    (d / "jobs.yaml").write_text(FAULTY_JOBS)
    state = d / "state"
    proc = subprocess.Popen([sys.executable, "-m", "ringsched.cli.main", "run", "--cluster", "2x2", "--jobs",
                             str(d / "jobs.yaml"), "--policy", "srtf", "--slot-s", "2", "--checkpoint-s", "1",
                             "--state", str(state), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ckpt = wait_for(lambda: query(state, "SELECT samples, attempt_id FROM checkpoints WHERE job_id='cnn' "
                                             "AND done=0 ORDER BY seq DESC LIMIT 1"), 180, "a checkpoint of cnn", proc)
        att = query(state, "SELECT id, pids FROM attempts WHERE id=?", (ckpt[0]["attempt_id"],))[0]
        victim = sorted(set(json.loads(att["pids"])))[-1]
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return {"rc": proc.returncode, "summary": json.loads(out), "stderr": err, "state": state,
            "killed_attempt": att["id"], "ckpt_samples": ckpt[0]["samples"], "victim": victim}


def test_killed_worker_resumes_from_checkpoint(faulty_run):
    s, state = faulty_run["summary"], faulty_run["state"]
    cnn = by_job(s)["cnn"]
    assert cnn["status"] == "completed" and cnn["completions"] == 1, faulty_run["stderr"][-3000:]
    assert cnn["failures"] == 1 and cnn["infra_faults"] == 1 and cnn["crashes"] == 0  # SIGKILL: not the job's fault
    attempts = query(state, "SELECT id, outcome, fault, start_samples, end_samples FROM attempts WHERE job_id='cnn' "
                            "ORDER BY id")
    killed = [a for a in attempts if a["id"] == faulty_run["killed_attempt"]]
    assert killed and (killed[0]["outcome"], killed[0]["fault"]) == ("infra", "infra")
    after = [a for a in attempts if a["id"] > faulty_run["killed_attempt"]]
    assert after, attempts
    # resumed from its checkpoint: at or after the one seen before the kill, not from zero
    assert after[0]["start_samples"] >= faulty_run["ckpt_samples"] > 0
    assert after[-1]["outcome"] == "done"
    assert not pid_alive(faulty_run["victim"])


def test_failing_entry_is_reported_and_others_finish(faulty_run):
    s = faulty_run["summary"]
    jobs = by_job(s)
    assert faulty_run["rc"] == 1  # a job failed
    assert jobs["bad"]["status"] == "failed"
    assert "ValueError: bad input on purpose" in jobs["bad"]["error"]
    assert jobs["bad"]["failures"] == 0  # its own error: not retried as a crash
    assert jobs["bad"]["error_class"] == "user" and jobs["cnn"]["error_class"] is None
    assert jobs["mlp"]["status"] == "completed" and jobs["cnn"]["status"] == "completed"
    assert s["completed"] == 2 and s["failed"] == 1


# ---------------------------------------------------------------------------- a killed scheduler
def test_scheduler_killed_and_restarted_resumes_all_jobs(tmp_path):
    state = tmp_path / "state"
    args = [sys.executable, "-m", "ringsched.cli.main", "run", "--cluster", "2x2", "--jobs", "demo:3,scale=0.2",
            "--policy", "optimus", "--slot-s", "2", "--checkpoint-s", "1", "--state", str(state), "--json"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(query(state, "SELECT DISTINCT job_id FROM checkpoints WHERE done=0")) >= 2, 180,
                 "checkpoints of two jobs", proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    before = {r["job_id"]: r for r in query(state, "SELECT * FROM jobs")}
    unfinished = [j for j, r in before.items() if r["status"] != "completed"]
    assert unfinished, "every job finished before the kill: nothing to resume"
    open_attempts = query(state, "SELECT id, pids FROM attempts WHERE ended_s IS NULL")
    assert open_attempts  # the killed scheduler could not close them
    last_attempt = max(a["id"] for a in query(state, "SELECT id FROM attempts"))
    row_ckpt_seq = query(state, "SELECT MAX(seq) AS s FROM checkpoints")[0]["s"]

    rc, s, err = ringsched_run("--cluster", "2x2", "--jobs", "demo:3,scale=0.2", "--policy", "optimus",
                               "--slot-s", "2", "--checkpoint-s", "1", "--state", str(state))
    assert rc == 0, err[-3000:]
    assert s["completed"] == 3
    for a in open_attempts:  # the orphaned workers are gone
        assert not any(pid_alive(p) for p in json.loads(a["pids"]))
    orphaned = query(state, "SELECT id FROM attempts WHERE outcome='orphaned'")
    assert {a["id"] for a in orphaned} == {a["id"] for a in open_attempts}
    for j in s["jobs"]:
        assert j["status"] == "completed" and j["completions"] == 1, j  # none lost, none completed twice
        assert j["done_samples"] == j["work_samples"]
    for jid, row in before.items():
        resumed = query(state, "SELECT start_samples FROM attempts WHERE job_id=? AND id>? ORDER BY id",
                        (jid, last_attempt))
        if row["status"] == "completed":
            assert resumed == [], f"{jid} finished before the kill and was run again"
            continue
        ck = query(state, "SELECT MAX(samples) AS s FROM checkpoints WHERE job_id=? AND seq<=?",
                   (jid, row_ckpt_seq))[0]["s"]
        if resumed:
            # from its last checkpoint: the last one journaled before the kill, or the one its
            # workers wrote when they saw the scheduler die (journaled by the restarted scheduler
            # under the dead attempt's id)
            last = query(state, "SELECT MAX(samples) AS s FROM checkpoints WHERE job_id=? AND attempt_id<=?",
                         (jid, last_attempt))[0]["s"]
            assert resumed[0]["start_samples"] == (last or 0.0) >= (ck or 0.0)
        else:  # its workers finished it as the scheduler died: its final checkpoint says so
            assert query(state, "SELECT done FROM checkpoints WHERE job_id=? ORDER BY seq DESC LIMIT 1",
                         (jid,))[0]["done"] == 1


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("body, needle", [
    ("jobs:\n  - name: a\n    entry: ringsched.backends.demo_jobs:synth_mlp\n    work: {samples: 10}\n",
     "jobs[0].batch"),
    ("jobs:\n  - name: a\n    entry: not-an-entry\n    batch: 4\n    work: {samples: 10}\n", "jobs[0].entry"),
    ("jobs:\n  - name: a\n    entry: nosuchmodule_xyz:main\n    batch: 4\n    work: {samples: 10}\n",
     "cannot find module"),
    ("jobs:\n  - name: a\n    entry: m:f\n    batch: 4\n    work: {samples: 10}\n    min_workers: 3\n"
     "    max_workers: 2\n", "max_workers"),
    ("jobs:\n  - name: a\n    entry: m:f\n    batch: 4\n    work: {samples: 10, epochs: 2}\n", "exactly one"),
    ("jobs: [1, 2\n", "invalid YAML"),
    ("jobs:\n  - name: a\n    entry: m:f\n    batch: 4\n    work: {samples: 10}\n    colour: red\n", "colour"),
])
def test_bad_jobs_file_is_one_line_exit_2(cli, tmp_path, body, needle):
    f = tmp_path / "jobs.yaml"
    f.write_text(body)
    code, out, err = cli("run", "--jobs", str(f))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0] and "jobs.yaml" in lines[0]


@pytest.mark.parametrize("args, needle", [
    (("--jobs", "demo:0"), "demo:N"),
    (("--jobs", "demo:x"), "demo"),
    (("--backend", "gpu"), "backend"),
    (("--slot-s", "0"), "slot-s"),
    (("--policy", "nosuch"), "nosuch"),
    (("--address", "127.0.0.1:1"), "--address"),
])
def test_bad_options_are_one_line_exit_2(cli, args, needle):
    code, out, err = cli("run", *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err


def test_state_of_another_run_is_refused(cli, tmp_path):
    from ringsched.backends.journal import Journal

    j = Journal(tmp_path)
    j.set_meta(jobs_digest="0000", cluster="2x2")
    j.close()
    code, out, err = cli("run", "--jobs", "demo:1", "--state", str(tmp_path))
    assert code == 2 and "another run" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------- pieces
def test_jobs_file_epochs_and_defaults(tmp_path):
    f = tmp_path / "jobs.yaml"
    f.write_text(textwrap.dedent("""
        - name: d
          entry: ringsched.backends.demo_jobs:digits_cnn
          batch: 16
          work: {epochs: 2}
          max_workers: 3
          utility: {kind: linear, value: 5, slope_per_s: 0.1}
        - name: e
          entry: ringsched.backends.demo_jobs:synth_mlp
          batch: 8
          work: {epochs: 0.5, epoch_samples: 100}
    """))
    d, e = load_jobs(str(f))
    assert d.work_samples == 2 * 1797 and (d.min_workers, d.max_workers) == (1, 3)
    assert e.work_samples == 50 and (e.min_workers, e.max_workers) == (1, 1)
    job = d.to_job(10.0)
    assert job.utility(0.0) == 5 and job.model == "d" and not job.rigid
    demo = load_jobs("demo:4,scale=0.5")
    assert [j.name for j in demo] == ["demo0-digits-cnn", "demo1-synth-mlp", "demo2-synth-wide", "demo3-digits-cnn"]
    assert demo[0].work_samples == 48_000 and demo[3].seed == 3


def test_refit_recovers_step_times_and_stays_near_prior_without_data():
    truth = CPU_PRIOR.__class__(**{**CPU_PRIOR.to_dict(), "compute_base_s": 0.004, "compute_per_sample_s": 6e-4,
                                   "intra_transfer_s": 0.006, "colocation_slowdown": 0.8})
    shapes = [(1, 1, 1), (2, 1, 2), (4, 2, 2)]
    data = [Measurement(w, k, d, 32, float(step_time_s(truth, 32, w, k, d)), 200) for w, k, d in shapes]
    p = refit(CPU_PRIOR, data)
    for m in data:
        pred = float(step_time_s(p, 32, m.workers, m.servers, m.max_per_server))
        assert abs(pred / m.step_s - 1) < 0.1
    assert refit(CPU_PRIOR, []) == CPU_PRIOR
    assert refit(CPU_PRIOR, data) == p  # deterministic


def test_a_rejected_job_makes_run_exit_1(tmp_path):
    (tmp_path / "jobs.yaml").write_text("jobs:\n  - name: huge\n    entry: ringsched.backends.demo_jobs:synth_mlp\n"
                                        "    batch: 8\n    work: {samples: 64}\n    min_workers: 5\n    max_workers: 5\n")
    rc, s, err = ringsched_run("--cluster", "2x2", "--jobs", str(tmp_path / "jobs.yaml"), "--slot-s", "1",
                               "--state", str(tmp_path / "state"), timeout=120)
    assert s is not None, err[-2000:]
    assert (rc, s["rejected"], s["completed"]) == (1, 1, 0), err[-2000:]
    assert "needs 5 GPUs" in by_job(s)["huge"]["reason"]


def test_jobs_digest_of_default_priorities_is_the_one_state_directories_already_hold():
    """A --state made before jobs had a priority belongs to the same job list (its digest,
    bfee69a915e51d03 for demo:3, was written by the code of 93086fa); a priority changes it."""
    import dataclasses

    from ringsched.backends.jobs_file import jobs_digest, load_jobs

    jobs = load_jobs("demo:3")
    assert jobs_digest(jobs) == "bfee69a915e51d03"
    assert jobs_digest([dataclasses.replace(jobs[0], priority=1), *jobs[1:]]) != "bfee69a915e51d03"
