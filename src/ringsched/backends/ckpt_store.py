"""Checkpoints that cannot run code, cannot lie about progress, and survive corruption.

Layout: ``STATE/ckpt/JOB/aA-sS.pt`` (attempt A, step S; ``aA-sS-done.pt`` for the final one),
one file per checkpoint (never two at one step), and its sidecar ``aA-sS.pt.json``. Rules:

* **Written atomically**: serialized in memory, written to a temporary file in the same
  folder, fsynced, renamed, the folder fsynced; on any error (disk full) the temporary file is
  removed and nothing else changes. The SHA-256 and size of the bytes go to the scheduler in
  the ``checkpoint`` event and into the journal.
* **The journal's word decides progress.** A job resumes from the newest journaled checkpoint
  (not marked bad) whose file still has its journaled checksum; a mismatch marks it bad and
  falls back to the one before (the last two good ones are kept), losing only the work since.
  The worker checks the checksum again on the bytes it loads, and the blob's step and samples
  against the journal's.
* **Loaded with** ``torch.load(weights_only=True)``: tensors, numbers, strings, lists, dicts
  and the optimizer state types torch allows; a pickle payload does not execute. An entry
  whose ``ctx.state`` needs more types registers them with
  ``torch.serialization.add_safe_globals`` at import of its module (the entry module is
  imported before the checkpoint is loaded).
* **The sidecar is a hint, never the truth**: only for a checkpoint written after the
  scheduler died (its workers checkpoint when their channel ends), and then only if it names
  an attempt the journal left open for that job, its file has the sidecar's checksum, and its
  samples lie between the journaled progress and the job's work plus one global batch.
  ``done`` is believed only with samples at least the job's work. It also carries the loss
  record of the attempt that wrote it (``losses``: the reported points, the mean of its first
  and of its last ten losses), so that a job a dead scheduler never heard from keeps its loss
  curve; a record that is not plain finite numbers is ignored.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

CKPT_FORMAT = "ringsched-ckpt/2"
KEEP_GOOD = 2


class CheckpointError(Exception):
    """A checkpoint that is missing, corrupt, or not what the journal says."""


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` at ``path`` whole or not at all (temp + fsync + rename + folder fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def remove_temporaries(root: Path) -> None:
    """Remove the temporary files of writers that died mid-write (a worker killed while it
    checkpointed, when a full disk or a signal ends the run). Call only when no worker of this
    state directory can still be writing: every temporary then belongs to a dead writer."""
    for tmp in Path(root).glob("*/.*.tmp[0-9]*"):  # (nothing when the folder does not exist)
        tmp.unlink(missing_ok=True)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def save(folder: Path, attempt: int, blob: dict, losses: dict | None = None) -> dict:
    """Write one checkpoint (worker side); returns what the journal records about it. The
    sidecar also carries ``losses`` (``loss_record``), for a scheduler that did not hear them."""
    import torch

    buf = io.BytesIO()
    torch.save(blob, buf)
    data = buf.getvalue()
    path = folder / f"a{attempt}-s{int(blob['step'])}{'-done' if blob['done'] else ''}.pt"
    write_atomic(path, data)
    info = {"path": str(path), "sha256": sha256_bytes(data), "bytes": len(data), "step": int(blob["step"]),
            "samples": int(blob["samples"]), "done": bool(blob["done"]), "attempt": attempt}
    try:
        write_atomic(Path(str(path) + ".json"), json.dumps(info | ({"losses": losses} if losses else {})).encode())
    except OSError:
        pass  # the sidecar only helps a restarted scheduler adopt this checkpoint
    return info


def load(resume: dict) -> dict:
    """The checkpoint the scheduler resumes from (worker side), verified before and after
    unpickling with ``weights_only=True``."""
    import torch

    path = resume["path"]
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read: {e.strerror}") from None
    if sha256_bytes(data) != resume["sha256"]:
        raise CheckpointError(f"{path}: checksum differs from the journal's")
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a bad checkpoint
        raise CheckpointError(f"{path}: not loadable with weights_only=True: {type(e).__name__}: {e}"[:400]) from None
    if not isinstance(blob, dict) or blob.get("format") != CKPT_FORMAT:
        raise CheckpointError(f"{path}: not a {CKPT_FORMAT} checkpoint")
    if int(blob.get("step", -1)) != int(resume["step"]) or int(blob.get("samples", -1)) != int(resume["samples"]):
        raise CheckpointError(f"{path}: step/samples differ from the journal's")
    return blob


@dataclass
class Choice:
    """Where a job resumes: a journaled checkpoint row (or None: from scratch), and the rows
    found bad on the way (their files changed or vanished)."""

    row: dict | None
    bad: list[dict]

    @property
    def samples(self) -> float:
        return float(self.row["samples"]) if self.row else 0.0

    def resume(self) -> dict | None:
        if self.row is None:
            return None
        return {k: self.row[k] for k in ("path", "sha256", "step")} | {"samples": int(self.row["samples"])}


def choose(rows: list[dict]) -> Choice:
    """The newest journaled, non-final, not-bad checkpoint whose file has its checksum."""
    bad = []
    for row in reversed(rows):
        if row["bad"] or row["done"] or not row["sha256"]:
            continue
        if sha256_file(row["path"]) == row["sha256"]:
            return Choice(row, bad)
        bad.append(row)
    return Choice(None, bad)


def prune(rows: list[dict]) -> list[str]:
    """Delete the files of journaled checkpoints older than the last ``KEEP_GOOD`` good ones;
    returns the paths removed."""
    good = list(dict.fromkeys(r["path"] for r in rows if not r["bad"] and not r["done"]))
    keep = set(good[-KEEP_GOOD:]) | {r["path"] for r in rows if r["done"]}
    removed = []
    for r in rows:
        if r["path"] in keep or not r["path"] or r["path"] in removed:
            continue
        for p in (Path(r["path"]), Path(r["path"] + ".json")):
            try:
                p.unlink()
                removed.append(str(p))
            except FileNotFoundError:
                pass
    return removed


def adoptable(folder: Path, open_attempts: dict[int, int], floor_samples: float, work_samples: int) -> dict | None:
    """The newest sidecar-described checkpoint written by an attempt the journal left open
    (``open_attempts``: attempt id -> global batch) that passes every check, else None."""
    best = None
    for side in sorted(folder.glob("a*-s*.pt.json")):
        try:
            info = json.loads(side.read_text())
            aid, samples, step = int(info["attempt"]), int(info["samples"]), int(info["step"])
            path, sha = str(info["path"]), str(info["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if aid not in open_attempts or Path(path) != side.with_suffix(""):
            continue
        if not floor_samples < samples <= work_samples + open_attempts[aid] or step < 0:
            continue
        done = bool(info.get("done")) and samples >= work_samples
        if sha256_file(path) != sha:
            continue
        if best is None or samples > best["samples"]:
            best = {"path": path, "sha256": sha, "bytes": int(info.get("bytes", 0)), "step": step,
                    "samples": samples, "done": done, "attempt": aid, "losses": loss_record(info.get("losses"))}
    return best


def loss_record(x) -> dict | None:
    """A sidecar's loss record as ``{"points": [(step, loss)], "first": f, "last": l}`` (the
    means of the attempt's first and last ten losses, or None), or None unless every number
    in it is finite (and every step a non-negative integer)."""
    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if not isinstance(x, dict) or not isinstance(x.get("points"), list):
        return None
    points = x["points"]
    if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], int) and p[0] >= 0 and number(p[1])
               for p in points):
        return None
    ends = [x.get(k) for k in ("first", "last")]
    if not all(v is None or number(v) for v in ends):
        return None
    return {"points": [(int(a), float(b)) for a, b in points], "first": ends[0], "last": ends[1]}
