"""The fault suite of real execution (issue 20), its real runs (marked ``backend``): a seeded
chaos run whose workers, zygotes and scheduler are killed at random points while its
checkpoints are forged, and a run on a full disk. Asserted every time: no job lost (every one
completes exactly once), none run twice (one live attempt per job at any moment), progress
never overstated (never above the job's work, never above what a journaled checkpoint holds),
and no listening socket outside loopback.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import proc_watch
import pytest
from fault_kit import FAULTS, crafted_checkpoint, fault_totals, sidecar  # noqa: F401 - fault_totals: a fixture
from test_backends import by_job, query

from ringsched.backends import ckpt_store
from ringsched.backends.journal import Journal


CHAOS_SEED = 20
CHAOS_JOBS = "demo:3,scale=0.5"  # long enough (~30 s of training alone) that every life is cut short
RUN_ARGS = ["--cluster", "2x2", "--jobs", CHAOS_JOBS, "--policy", "optimus", "--slot-s", "2", "--checkpoint-s", "1"]


def run_cmd(state: Path) -> list[str]:
    return [sys.executable, "-m", "ringsched.cli.main", "run", *RUN_ARGS, "--state", str(state), "--json"]


class Watch:
    """Samples a live run: one attempt per job at any moment (journal and processes), progress
    within the work, and only loopback listening sockets."""

    def __init__(self, state: Path, work: dict[str, int]):
        self.state, self.work = state, work
        self.listeners: set[tuple[str, int]] = set()
        self.samples = 0

    def check(self, scheduler_pid: int | None) -> None:
        self.samples += 1
        live = proc_watch.workers(self.state)
        per_job = collections.defaultdict(set)
        for job, attempt in live.values():
            per_job[job].add(attempt)
        assert all(len(a) == 1 for a in per_job.values()), f"a job runs twice: {dict(per_job)}"
        open_rows = query(self.state, "SELECT job_id, COUNT(*) AS n FROM attempts WHERE ended_s IS NULL "
                                      "GROUP BY job_id")
        assert all(r["n"] == 1 for r in open_rows), open_rows
        for r in query(self.state, "SELECT job_id, MAX(samples) AS s FROM checkpoints GROUP BY job_id"):
            assert r["s"] <= self.work[r["job_id"]], r
        for r in query(self.state, "SELECT job_id, done_samples, ckpt_samples FROM jobs"):
            assert max(r["done_samples"], r["ckpt_samples"]) <= self.work[r["job_id"]], r
        mine = list(live) + ([scheduler_pid] if scheduler_pid else [])
        mine += proc_watch.zygotes(scheduler_pid) if scheduler_pid else []
        for pid, addr, port in proc_watch.listening(mine):
            assert proc_watch.is_loopback(addr), f"pid {pid} listens on {addr}:{port}"
            self.listeners.add((addr, port))


def watch_for(seconds: float, watch: Watch, proc: subprocess.Popen | None = None, until=None) -> bool:
    """Sample ``watch`` for up to ``seconds``; True as soon as ``until()`` holds (or the
    scheduler exited)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = proc is not None and proc.poll() is None
        watch.check(proc.pid if alive else None)
        if (until is not None and until()) or (proc is not None and not alive):
            return True
        time.sleep(0.3)
    return False


def kill_a_worker(state: Path, rng: random.Random) -> bool:
    live = sorted(proc_watch.workers(state))
    if not live:
        return False
    os.kill(rng.choice(live), signal.SIGKILL)
    return True


def poison_newest_checkpoint(state: Path, marker: Path) -> str | None:
    """Between two schedulers: the newest journaled checkpoint of an unfinished job becomes a
    crafted pickle (same name), and the sidecars that could be adopted instead are removed.
    Returns the job, or None when no unfinished job has two good checkpoints (the last two are
    kept: after one fallback only one is left until the next checkpoint). A job whose orphaned
    worker wrote its final checkpoint after the scheduler died is finished: the next scheduler
    completes it from that file and rightly never reads the crafted one, so it is not chosen."""
    for r in query(state, "SELECT job_id FROM jobs WHERE status NOT IN ('completed', 'failed') ORDER BY job_id"):
        if any((state / "ckpt" / r["job_id"]).glob("*-done.pt")):
            continue
        rows = query(state, "SELECT * FROM checkpoints WHERE job_id=? AND bad=0 AND done=0 ORDER BY seq",
                     (r["job_id"],))
        if len(rows) >= 2 and all(ckpt_store.sha256_file(r["path"]) == r["sha256"] for r in rows[-2:]):
            crafted_checkpoint(Path(rows[-1]["path"]), marker)
            for side in (state / "ckpt" / r["job_id"]).glob("*.json"):
                side.unlink()
            return r["job_id"]
    return None


def lie_in_a_sidecar(state: Path) -> bool:
    """A sidecar of a still-open attempt claims the job is done at 10^12 samples."""
    rows = query(state, "SELECT id, job_id FROM attempts WHERE ended_s IS NULL ORDER BY id")
    if not rows:
        return False
    a = rows[0]
    sidecar(state / "ckpt" / a["job_id"], a["id"], 10**6, 10**12, True)
    return True


def garbage_in_the_wal_is_refused(state: Path) -> bool:
    """The killed scheduler's WAL gets a garbage header: the next scheduler must refuse (one
    line, exit 2, nothing touched); then the WAL is put back and the run goes on."""
    wal = state / "journal.sqlite-wal"
    if not wal.exists() or wal.stat().st_size < 64:
        return False
    keep = {p: p.read_bytes() for p in (wal, state / "journal.sqlite")}
    wal.write_bytes(os.urandom(32) + keep[wal][32:])
    p = subprocess.run(run_cmd(state), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "write-ahead log" in p.stderr, p.stderr
    assert (state / "journal.sqlite").read_bytes() == keep[state / "journal.sqlite"]
    wal.write_bytes(keep[wal])
    return True


@pytest.mark.backend
def test_chaos_run_loses_nothing_runs_nothing_twice_overstates_nothing(tmp_path):
    """One run of three demo jobs, seeded: workers and zygotes SIGKILLed at random moments, a
    second scheduler started on the same state twice, the scheduler itself killed three times
    (SIGKILL, SIGTERM, SIGINT, SIGKILL) and restarted, its newest checkpoint replaced by a crafted
    pickle and a sidecar made to lie in between. Then it must finish with every job completed
    once, exactly its work, and the invariants held at every sample along the way."""
    rng = random.Random(CHAOS_SEED)
    injected_before = collections.Counter(FAULTS)
    state, marker = tmp_path / "state", tmp_path / "PWNED"
    from ringsched.backends.jobs_file import load_jobs

    work = {j.name: j.work_samples for j in load_jobs(CHAOS_JOBS)}
    watch = Watch(state, work)
    scheduler_kills = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGKILL]
    poisoned: dict[str, tuple[float, int]] = {}  # job -> (samples of the checkpoint before, last attempt id)
    final = None
    for life in range(len(scheduler_kills) + 1):
        log = open(tmp_path / f"life{life}.err", "w")  # noqa: SIM115
        out = open(tmp_path / f"life{life}.out", "w")  # noqa: SIM115
        proc = subprocess.Popen(run_cmd(state), stdout=out, stderr=log)
        try:
            last = life == len(scheduler_kills)
            actions = rng.randint(3, 5) if not last else 8
            for n in range(actions):
                watch_for(rng.uniform(1.0, 3.0), watch, proc)
                if proc.poll() is not None:
                    break
                what = rng.choice(["worker"] * 4 + ["zygote", "second"]) if n else "worker"
                if what == "worker":  # a loaded machine may take a while to start the first ones
                    watch_for(90, watch, proc, until=lambda: bool(proc_watch.workers(state)))
                if what == "worker" and kill_a_worker(state, rng):
                    FAULTS["real run: worker SIGKILL"] += 1
                elif what == "zygote":
                    for z in proc_watch.zygotes(proc.pid):
                        os.kill(z, signal.SIGKILL)
                        FAULTS["real run: zygote SIGKILL"] += 1
                elif what == "second":
                    p2 = subprocess.run(run_cmd(state), capture_output=True, text=True, timeout=120)
                    FAULTS["real run: second scheduler"] += 1
                    if p2.returncode == 0:  # the first one had just finished: the second found nothing to do
                        assert proc.poll() == 0 and json.loads(p2.stdout)["completed"] == len(work), p2.stderr
                        continue
                    assert p2.returncode == 2 and f"pid {proc.pid}" in p2.stderr, p2.stderr
                    assert len(p2.stderr.strip().splitlines()) == 1
            if last:
                proc.wait(timeout=400)
                final = life
            elif proc.poll() is None:
                sig = scheduler_kills[life]
                # its handlers are in place once it has said anything (a signal during the
                # interpreter's start is the default action: a plain kill, not what is tested here)
                watch_for(90, watch, proc, until=lambda: (tmp_path / f"life{life}.err").stat().st_size > 0)
                proc.send_signal(sig)
                FAULTS[f"real run: scheduler {signal.Signals(sig).name}"] += 1
                rc = proc.wait(timeout=120)
                if rc == 0:  # it had just finished as the signal came: the run is complete
                    final = life
                    break
                if sig in (signal.SIGTERM, signal.SIGINT):  # checkpointed and closed: nothing left open
                    assert rc == 128 + sig, (tmp_path / f"life{life}.err").read_text()[-2000:]
                    assert query(state, "SELECT id FROM attempts WHERE ended_s IS NULL") == []
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
            out.close()
        if final is not None:
            break
        if life < len(scheduler_kills):  # let the dead scheduler's workers finish, then tamper
            assert watch_for(240, watch, until=lambda: not proc_watch.workers(state))
            job = poison_newest_checkpoint(state, marker)
            if job:
                FAULTS["real run: crafted checkpoint"] += 1
                rows = query(state, "SELECT samples FROM checkpoints WHERE job_id=? AND bad=0 AND done=0 "
                                    "ORDER BY seq", (job,))
                last_id = query(state, "SELECT MAX(id) AS m FROM attempts")[0]["m"]
                poisoned[job] = (rows[-2]["samples"], last_id)
            if lie_in_a_sidecar(state):
                FAULTS["real run: lying sidecar"] += 1
            if garbage_in_the_wal_is_refused(state):
                FAULTS["real run: WAL garbage after a kill"] += 1
    summary = json.loads((tmp_path / f"life{final}.out").read_text())
    err = (tmp_path / f"life{final}.err").read_text()
    assert proc.returncode == 0, err[-3000:]
    assert not marker.exists(), "a crafted checkpoint ran code"
    jobs = by_job(summary)
    for name, j in jobs.items():  # nothing lost, nothing completed twice, exactly the work
        assert j["status"] == "completed" and j["completions"] == 1, (name, j, err[-2000:])
        assert j["done_samples"] == j["work_samples"] == work[name]
        assert j["crashes"] == 0  # every fault here was infrastructure: none counted against the job
    attempts = query(state, "SELECT * FROM attempts ORDER BY id")
    for name in work:  # none run twice: a job's attempts never overlap in time
        mine = [a for a in attempts if a["job_id"] == name]
        for a, b in zip(mine, mine[1:]):
            assert a["ended_s"] is not None and a["ended_s"] <= b["started_s"] + 1e-6, (a, b)
        for a in mine:  # an attempt never ends before its own checkpoints (the clock resumed after them)
            last_ckpt = query(state, "SELECT MAX(t_s) AS t FROM checkpoints WHERE attempt_id=?", (a["id"],))[0]["t"]
            assert last_ckpt is None or a["ended_s"] >= last_ckpt, a
        for a in mine:  # never overstated: an attempt starts from a checkpoint the journal holds
            ok = {0.0} | {c["samples"] for c in query(state, "SELECT samples FROM checkpoints WHERE job_id=? "
                                                             "AND t_s <= ?", (name, a["started_s"] + 1e-6))}
            assert a["start_samples"] in ok, a
    for job, (fallback, last_id) in poisoned.items():  # the crafted one was refused; resumed from the one before
        assert query(state, "SELECT seq FROM checkpoints WHERE job_id=? AND bad=1", (job,)), job
        after = [a for a in attempts if a["job_id"] == job and a["id"] > last_id]
        assert after and after[0]["start_samples"] == fallback, (job, fallback, after[:1])
    assert watch.listeners, "no listening socket was ever seen: the socket check saw nothing"
    injected = collections.Counter(FAULTS) - injected_before  # the run really was under fire
    assert injected["real run: worker SIGKILL"] >= 1 and sum(injected.values()) >= 10, dict(injected)
    print(f"\nchaos: {watch.samples} samples; listening sockets seen: {sorted(watch.listeners)}")


@pytest.mark.backend
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_real_run_on_a_full_disk_stops_cleanly_and_resumes_after(tmp_path):
    """A run whose state directory is a 3 MB tmpfs: the disk fills (checkpoints, journal), the
    run ends with exit 3 and one error line, no temporary file is left, the journal opens
    whole; with space given back the same --state finishes every job exactly once."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        state = mnt / "state"
        p = subprocess.run(run_cmd(state), capture_output=True, text=True, timeout=300)
        FAULTS["real run: disk full"] += 1
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("ringsched: error:")]
        assert p.returncode == 3, p.stderr[-3000:]
        assert len(errors) == 1 and "free space" in errors[0] and "Traceback" not in p.stderr, p.stderr[-3000:]
        leftovers = [str(f) for f in state.rglob("*") if ".tmp" in f.name or ".new" in f.name]
        assert leftovers == []
        j = Journal(state)  # whole: opens, integrity check passes
        j.db.close()
        subprocess.run(["mount", "-o", "remount,size=256m", str(mnt)], check=True)
        p2 = subprocess.run(run_cmd(state), capture_output=True, text=True, timeout=300)
        assert p2.returncode == 0, p2.stderr[-3000:]
        for j in json.loads(p2.stdout)["jobs"]:
            assert j["status"] == "completed" and j["completions"] == 1 and j["done_samples"] == j["work_samples"]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
