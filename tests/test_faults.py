"""The fault suite of real execution (issue 20), its fast part: two schedulers on one state,
damaged journals, a full disk, corrupt and crafted checkpoints, lying sidecars, the failure
classes; the controller's rules under a scripted launcher and recovery are in
test_faults_recovery.py. The worker's side (channel
secrets, zygotes, orphaned workers) is in test_faults_worker.py, real runs under fire
(workers, zygotes and schedulers killed) in test_faults_real.py. Every injected
fault is counted (``fault_kit.FAULTS``) and the total printed at the end (``pytest -s``).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from fault_kit import FAULTS, crafted_checkpoint, fault_totals, sha, sidecar  # noqa: F401 - fault_totals: a fixture

from ringsched.backends import ckpt_store, faults
from ringsched.backends.journal import Journal, StateWriteError
from ringsched.backends.journal_check import JournalDamaged
from ringsched.backends.state_lock import StateLock, StateLocked

# ---------------------------------------------------------------------------- one owner per state
HOLD = ("import sys, time; from ringsched.backends.state_lock import StateLock; "
        "StateLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(120)")


def hold_lock(state: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(state)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_second_scheduler_refuses_naming_the_owner(tmp_path, cli):
    owner = hold_lock(tmp_path)
    try:
        with pytest.raises(StateLocked, match=f"pid {owner.pid} on host"):
            StateLock(tmp_path).acquire()
        FAULTS["two schedulers, one state"] += 1
        code, out, err = cli("run", "--jobs", "demo:1", "--state", str(tmp_path))
        FAULTS["two schedulers, one state"] += 1
        assert code == 2 and len(err.strip().splitlines()) == 1 and f"pid {owner.pid}" in err, err
        assert not (tmp_path / "journal.sqlite").exists()  # refused before anything was read or made
    finally:
        owner.kill()
        owner.wait()


def test_stale_lock_of_a_dead_owner_is_taken_over(tmp_path):
    owner = hold_lock(tmp_path)
    owner.kill()  # SIGKILL: no chance to clean up; the lock file stays, naming it
    owner.wait()
    FAULTS["dead lock owner"] += 1
    assert json.loads((tmp_path / "ringsched.lock").read_text())["pid"] == owner.pid
    lock = StateLock(tmp_path).acquire()
    assert lock.previous_owner["pid"] == owner.pid
    assert json.loads((tmp_path / "ringsched.lock").read_text())["pid"] == os.getpid()
    lock.release()


# ---------------------------------------------------------------------------- a journal that knows it is damaged
def make_journal(state: Path, events: int = 200, close: bool = True) -> Journal:
    j = Journal(state)
    j.set_meta(jobs_digest="abc", cluster="2x2", clock_s=5.0)
    for i in range(events):
        j.event(float(i), "job", "kind", "detail " * 20)
    if close:
        j.close()
    return j


def killed_run_copy(tmp_path: Path) -> Path:
    """The state of a scheduler killed mid-run: its journal files copied while it is open."""
    live = tmp_path / "live"
    j = make_journal(live, close=False)
    dead = tmp_path / "dead"
    shutil.copytree(live, dead)
    j.db.close()
    assert (dead / "journal.sqlite-wal").stat().st_size > 0
    return dead


def damage_random_bytes(state: Path, rng: random.Random) -> None:
    (state / "journal.sqlite").write_bytes(rng.randbytes(rng.randrange(1, 20000)))


def damage_zero_length(state: Path, rng: random.Random) -> None:
    (state / "journal.sqlite").write_bytes(b"")


def damage_truncated(state: Path, rng: random.Random) -> None:
    p = state / "journal.sqlite"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def damage_page(state: Path, rng: random.Random) -> None:
    """A few bytes of a closed journal changed (SQLite's own check may not see row data)."""
    p = state / "journal.sqlite"
    data = bytearray(p.read_bytes())
    off = rng.randrange(4096, len(data) - 16)
    data[off:off + 8] = bytes(b ^ 0xFF for b in data[off:off + 8])
    p.write_bytes(bytes(data))


def damage_schema(state: Path, rng: random.Random) -> None:
    db = sqlite3.connect(state / "journal.sqlite")
    db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.commit()
    db.close()
    (state / "journal.sqlite.seal").unlink()


@pytest.mark.parametrize("damage, seeds", [(damage_random_bytes, 5), (damage_zero_length, 1), (damage_truncated, 1),
                                            (damage_page, 6), (damage_schema, 1)])
def test_damaged_closed_journal_is_refused(tmp_path, cli, damage, seeds):
    for seed in range(seeds):
        state = tmp_path / f"s{seed}"
        make_journal(state)
        damage(state, random.Random(seed))
        FAULTS[f"journal: {damage.__name__}"] += 1
        before = sha(state / "journal.sqlite")
        with pytest.raises(JournalDamaged, match="(damaged|schema version).*new --state"):
            Journal(state)
        code, out, err = cli("run", "--jobs", "demo:1", "--state", str(state))
        assert code == 2 and len(err.strip().splitlines()) == 1 and "journal" in err, err
        assert sha(state / "journal.sqlite") == before  # never replaced, never repaired behind the user's back


def test_garbage_in_the_wal_of_a_killed_run_is_refused(tmp_path):
    rng = random.Random(7)
    for n, where in enumerate(("header", "frames", "all")):
        state = killed_run_copy(tmp_path / where)
        wal = state / "journal.sqlite-wal"
        data = bytearray(wal.read_bytes())
        if where == "header":
            data[:32] = rng.randbytes(32)
        elif where == "frames":  # frames in the middle: SQLite would silently drop every later commit
            page = struct.unpack(">I", data[8:12])[0]
            start = 32 + 3 * (24 + page)
            data[start:start + 2 * (24 + page)] = rng.randbytes(2 * (24 + page))
        else:
            data = bytearray(rng.randbytes(len(data)))
        wal.write_bytes(bytes(data))
        FAULTS[f"journal: WAL garbage ({where})"] += 1
        with pytest.raises(JournalDamaged, match="write-ahead log"):
            Journal(state)


def test_killed_run_with_an_intact_wal_opens_with_all_its_commits(tmp_path):
    state = killed_run_copy(tmp_path)
    FAULTS["scheduler killed (journal open)"] += 1
    j = Journal(state)
    assert j.meta()["jobs_digest"] == "abc" and len(j.db.execute("SELECT * FROM events").fetchall()) == 200
    j.close()


def test_disk_full_gives_one_error_keeps_last_state_and_leaves_no_partial_file(tmp_path, monkeypatch):
    """On a 2 MB tmpfs when this process may mount one; else SQLite's own SQLITE_FULL (a page
    limit) for the journal and ENOSPC injected into the checkpoint's fsync."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                                                    capture_output=True).returncode == 0
    try:
        state = mnt / "state"
        j = Journal(state)
        j.set_meta(jobs_digest="abc", cluster="2x2")
        if not mounted:
            j.db.execute("PRAGMA max_page_count=64")
        written = 0
        with pytest.raises(StateWriteError, match="free space"):
            for i in range(100_000):
                j.event(float(i), "job", "kind", "x" * 2000)
                written = i + 1
        FAULTS["disk full: journal"] += 1
        if not mounted:
            def no_space(fd):
                raise OSError(28, "No space left on device")
            monkeypatch.setattr(ckpt_store.os, "fsync", no_space)
        with pytest.raises(OSError):  # a checkpoint that does not fit: nothing half written is left
            ckpt_store.write_atomic(state / "ckpt" / "job" / "a1-s1.pt", os.urandom(4 << 20))
        FAULTS["disk full: checkpoint"] += 1
        monkeypatch.undo()
        assert list((state / "ckpt" / "job").iterdir()) == []
        j.db.close()
        j2 = Journal(state)  # the last complete write is there, and the journal is whole
        assert j2.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == written
        j2.close()
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False)


# ---------------------------------------------------------------------------- checkpoints
def test_a_checkpoint_is_never_visible_half_written(tmp_path, monkeypatch):
    """While its bytes are being made durable the checkpoint is not under its name yet: a
    scheduler or worker killed mid-write leaves at most a temporary file, never a torn .pt."""
    target, seen = tmp_path / "a1-s1.pt", []
    real_fsync = os.fsync

    def spy(fd):
        seen.append(target.exists())
        real_fsync(fd)

    monkeypatch.setattr(ckpt_store.os, "fsync", spy)
    ckpt_store.write_atomic(target, b"x" * 4096)
    assert seen[0] is False  # the data's fsync (the folder's comes after the rename)
    assert target.read_bytes() == b"x" * 4096 and [p.name for p in tmp_path.iterdir()] == ["a1-s1.pt"]


def test_crafted_checkpoint_does_not_execute(tmp_path):
    pt, marker = tmp_path / "a1-s1.pt", tmp_path / "PWNED"
    crafted_checkpoint(pt, marker)
    FAULTS["checkpoint: crafted pickle"] += 1
    with pytest.raises(ckpt_store.CheckpointError, match="weights_only"):
        ckpt_store.load({"path": str(pt), "sha256": sha(pt), "step": 1, "samples": 64})
    assert not marker.exists()


def test_checkpoint_round_trip_and_verification(tmp_path):
    import torch

    net = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(net.parameters())
    net(torch.randn(4, 3)).sum().backward()
    opt.step()
    blob = {"format": ckpt_store.CKPT_FORMAT, "job": "j", "step": 7, "samples": 448, "done": False, "world": 2,
            "model": net.state_dict(), "optim": opt.state_dict(), "state": {"best": 0.5, "tags": ["a"]}}
    info = ckpt_store.save(tmp_path, 3, blob)
    assert Path(info["path"]).name == "a3-s7.pt" and info["sha256"] == sha(Path(info["path"]))
    back = ckpt_store.load(info)
    assert back["samples"] == 448 and torch.equal(back["model"]["weight"], net.state_dict()["weight"])
    FAULTS["checkpoint: flipped bytes"] += 1
    raw = bytearray(Path(info["path"]).read_bytes())
    raw[len(raw) // 2] ^= 0x01
    Path(info["path"]).write_bytes(bytes(raw))
    with pytest.raises(ckpt_store.CheckpointError, match="checksum"):
        ckpt_store.load(info)
    FAULTS["checkpoint: journal/blob mismatch"] += 1
    info2 = ckpt_store.save(tmp_path, 3, dict(blob, step=8))
    with pytest.raises(ckpt_store.CheckpointError, match="differ"):
        ckpt_store.load(dict(info2, samples=10**12))


def ckpt_row(seq: int, path: Path, samples: float, *, done: int = 0, bad: int = 0) -> dict:
    path.write_bytes(f"checkpoint {seq}".encode())
    return {"seq": seq, "path": str(path), "samples": samples, "step": seq, "done": done, "bad": bad,
            "sha256": sha(path)}


def test_corrupt_newest_checkpoint_falls_back_to_the_previous_good_one(tmp_path):
    rows = [ckpt_row(i, tmp_path / f"a1-s{i}.pt", 100.0 * i) for i in (1, 2, 3)]
    assert ckpt_store.choose(rows).row["seq"] == 3
    Path(rows[2]["path"]).write_bytes(b"torn")
    FAULTS["checkpoint: corrupt newest"] += 1
    c = ckpt_store.choose(rows)
    assert c.row["seq"] == 2 and [r["seq"] for r in c.bad] == [3] and c.samples == 200.0
    os.unlink(rows[1]["path"])
    FAULTS["checkpoint: missing"] += 1
    assert ckpt_store.choose(rows).row["seq"] == 1
    rows[0]["bad"] = 1
    assert ckpt_store.choose(rows).row is None  # from scratch: nothing good is left


def test_prune_keeps_the_last_two_good_checkpoints(tmp_path):
    rows = [ckpt_row(i, tmp_path / f"a1-s{i}.pt", 100.0 * i) for i in range(1, 6)]
    ckpt_store.prune(rows)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1-s4.pt", "a1-s5.pt"]


@pytest.mark.parametrize("attempt, samples, done, good_hash, adopted", [
    (5, 370_944, True, True, {"samples": 370_944, "done": False}),  # done is not believed short of the work
    (5, 10**12, False, True, None),  # more than the work: a lie
    (5, 100, False, True, None),  # not beyond what the journal already has
    (4, 200_000, False, True, None),  # an attempt the journal did not leave open
    (5, 200_000, False, False, None),  # its file is not what it says
    (5, 480_000 + 32, True, True, {"samples": 480_032, "done": True}),
])
def test_sidecar_is_a_hint_never_the_truth(tmp_path, attempt, samples, done, good_hash, adopted):
    sidecar(tmp_path, attempt, 9, samples, done, good_hash=good_hash)
    FAULTS["checkpoint: lying sidecar"] += adopted is None or adopted["done"] != done
    got = ckpt_store.adoptable(tmp_path, {5: 64}, 1000.0, 480_000)
    if adopted is None:
        assert got is None
    else:
        assert {k: got[k] for k in adopted} == adopted


# ---------------------------------------------------------------------------- failure classes
@pytest.mark.parametrize("exits, errors, hint, outcome, fault", [
    ({0: 0, 1: 0}, [], "done", "done", None),
    ({0: 0, 1: 0}, [], "stopped", "stopped", None),
    ({0: 3, 1: 4}, [{"kind": "user", "error": "ValueError: x", "rank": 0},
                    {"kind": "comm", "error": "Connection reset", "rank": 1}], None, "failed", "user"),
    ({0: 4, 1: -9}, [{"kind": "comm", "error": "Connection closed by peer", "rank": 0}], None, "infra", "infra"),
    ({0: faults.ZYGOTE_LOST}, [], None, "infra", "infra"),
    ({0: -11}, [], None, "crashed", "crash"),
    ({0: 1}, [], None, "crashed", "crash"),
    ({0: 5}, [{"kind": "ckpt", "error": "checksum differs", "rank": 0}], None, "infra", "infra"),
    ({0: -15, 1: 0}, [], "stopped", "infra", "infra"),
])
def test_failures_are_told_apart(exits, errors, hint, outcome, fault):
    end = faults.classify(exits, errors, hint)
    assert (end.outcome, end.fault) == (outcome, fault)


def test_backoff_doubles_and_is_capped():
    assert [faults.backoff_s(n) for n in (1, 2, 3, 4, 10)] == [1.0, 2.0, 4.0, 8.0, 30.0]


KILLED_MID_WRITE = ("import os, sys, time; from pathlib import Path; from ringsched.backends import ckpt_store; "
                    "os.fsync = lambda fd: (print('writing', flush=True), time.sleep(120)); "
                    "ckpt_store.write_atomic(Path(sys.argv[1]), b'x' * 4096)")


def killed_mid_write(path: Path) -> Path:
    """A process writing a checkpoint at ``path``, SIGKILLed while it fsyncs: its temporary."""
    writer = subprocess.Popen([sys.executable, "-c", KILLED_MID_WRITE, str(path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "writing"
    writer.kill()
    writer.wait()
    FAULTS["worker killed mid-checkpoint"] += 1
    return path.with_name(f".{path.name}.tmp{writer.pid}")


def test_a_writer_killed_mid_checkpoint_leaves_no_temporary_after_the_run(tmp_path, cli):
    """A worker killed while it writes a checkpoint (a full disk or a signal ends the run, and
    the launcher kills the stragglers) leaves its temporary file; the scheduler's end removes
    it and keeps every checkpoint and sidecar."""
    state = tmp_path / "state"
    folder = state / "ckpt" / "some-job"
    tmp = killed_mid_write(folder / "a1-s2.pt")
    kept = [folder / "a1-s1.pt", folder / "a1-s1.pt.json"]
    for k in kept:
        k.write_bytes(b"{}")
    assert list(folder.glob(".*")) == [tmp]
    code, out, err = cli("run", "--jobs", "demo:1,scale=0.2", "--cluster", "1x2", "--state", str(state))
    assert code == 0, err
    assert list(folder.glob(".*")) == [] and all(k.exists() for k in kept)


def test_a_restart_removes_the_temporaries_of_the_previous_run_before_it_runs(tmp_path, cli, monkeypatch):
    """A temporary left in a state directory (its writer killed after the last run's sweep, e.g.
    a Ray actor whose kill is asynchronous) is gone once recovery has reaped the old workers,
    before anything runs: the sweep at the run's end finds nothing left. Mutant caught: no sweep
    in ``recovery.recover``."""
    import inspect

    state = tmp_path / "state"
    args = ("run", "--jobs", "demo:1,scale=0.2", "--cluster", "1x2", "--state", str(state))
    assert cli(*args)[0] == 0
    tmp = killed_mid_write(next((state / "ckpt").iterdir()) / "a9-s9.pt")
    seen = []
    real = ckpt_store.remove_temporaries

    def spy(root):
        seen.append((inspect.stack()[1].function, tmp.exists()))
        return real(root)

    monkeypatch.setattr(ckpt_store, "remove_temporaries", spy)
    assert tmp.exists() and cli(*args)[0] == 0
    assert seen[0] == ("recover", True) and seen[-1] == ("run", False) and not tmp.exists(), seen
