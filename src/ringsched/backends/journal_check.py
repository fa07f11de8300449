"""Knowing when the journal is damaged, before trusting a byte of it.

A damaged journal silently replaced by a fresh run loses the history and the clock and
relaunches completed jobs; so every open checks, in order:

1. the file: not empty, the SQLite header (a ringsched journal is created complete under a
   temporary name and renamed into place, so an empty or headerless ``journal.sqlite`` is
   always damage, never a run that had not started);
2. the seal: a cleanly closed journal has ``journal.sqlite.seal``, the SHA-256 of the file at
   close; any change since (a corrupted page, even in row data that SQLite's own check cannot
   see) is refused;
3. the write-ahead log of a killed run: its header (magic, version, checksum) and its frame
   chain. SQLite stops reading a WAL at the first frame whose checksum fails, silently
   dropping every later commit, so a WAL whose valid chain ends before frames of the same
   generation (same salts) is damage, not a torn last write;
4. after opening: ``PRAGMA integrity_check``, the schema version and the run id.

Each failure is a :class:`JournalDamaged` (one line with a recovery hint, exit 2).
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from ringsched.errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGIC_LE, WAL_MAGIC_BE = 0x377F0682, 0x377F0683
WAL_VERSION = 3007000
WAL_HEADER_BYTES, WAL_FRAME_HEADER_BYTES = 32, 24
SEAL_SUFFIX = ".seal"


class JournalDamaged(InputError):
    """The journal cannot be trusted; it is left as it is for inspection."""


def damaged(path: Path, what: str) -> JournalDamaged:
    return JournalDamaged(f"journal {path} is damaged: {what}; it was left untouched: restore it from a backup, "
                          f"or move the state directory aside and start again with a new --state",
                          field="state")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _wal_checksum(data: bytes, big_endian: bool, s0: int = 0, s1: int = 0) -> tuple[int, int]:
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def check_wal(path: Path, wal: Path) -> None:
    """Refuse a WAL whose header is bad or whose valid frame chain ends before later frames of
    its own generation (those commits would be dropped silently)."""
    data = wal.read_bytes()
    if not data:
        return
    if len(data) < WAL_HEADER_BYTES:
        raise damaged(path, f"its write-ahead log {wal.name} is truncated ({len(data)} bytes)")
    magic, version, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", data[:WAL_HEADER_BYTES])
    if magic not in (WAL_MAGIC_LE, WAL_MAGIC_BE) or version != WAL_VERSION:
        raise damaged(path, f"its write-ahead log {wal.name} has no valid header")
    big = magic == WAL_MAGIC_BE
    s0, s1 = _wal_checksum(data[:24], big)
    if (s0, s1) != (c1, c2) or page_size < 512 or page_size & (page_size - 1):
        raise damaged(path, f"its write-ahead log {wal.name} has a bad header checksum")
    frame = WAL_FRAME_HEADER_BYTES + page_size
    n_frames = (len(data) - WAL_HEADER_BYTES) // frame
    chain_ok, same_generation = 0, 0
    broken = False
    for i in range(n_frames):
        off = WAL_HEADER_BYTES + i * frame
        head = data[off:off + WAL_FRAME_HEADER_BYTES]
        f_salt1, f_salt2, f_c1, f_c2 = struct.unpack(">4I", head[8:24])
        if (f_salt1, f_salt2) == (salt1, salt2):
            same_generation = i + 1
        if broken:
            continue
        s0, s1 = _wal_checksum(head[:8], big, s0, s1)
        s0, s1 = _wal_checksum(data[off + WAL_FRAME_HEADER_BYTES:off + frame], big, s0, s1)
        if (f_salt1, f_salt2) != (salt1, salt2) or (s0, s1) != (f_c1, f_c2):
            broken = True
        else:
            chain_ok = i + 1
    if same_generation > chain_ok + 1:  # a torn last frame is a crash; frames after a break are damage
        raise damaged(path, f"its write-ahead log {wal.name} is corrupt at frame {chain_ok + 1} of "
                            f"{same_generation} (later commits would be lost)")


def check_files(path: Path) -> None:
    """Checks 1-3, before SQLite opens (and possibly rewrites) anything."""
    size = path.stat().st_size
    if size == 0:
        raise damaged(path, "it is empty (0 bytes)")
    with open(path, "rb") as f:
        if f.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            raise damaged(path, "it is not an SQLite database (bad header)")
    wal = path.with_name(path.name + "-wal")
    seal = path.with_name(path.name + SEAL_SUFFIX)
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    if seal.exists() and wal_bytes == 0:
        want = seal.read_text().strip()
        if file_sha256(path) != want:
            raise damaged(path, f"its contents changed since it was closed (checksum mismatch; if you changed it "
                                f"on purpose, delete {seal.name})")
    if wal_bytes:
        check_wal(path, wal)


def check_open(path: Path, db, schema_version: str) -> dict[str, str]:
    """Check 4 on an open connection; returns the meta table."""
    import sqlite3

    try:
        rows = [r[0] for r in db.execute("PRAGMA integrity_check")]
        meta = {r[0]: r[1] for r in db.execute("SELECT key, value FROM meta")}
    except sqlite3.DatabaseError as e:
        raise damaged(path, str(e)) from None
    if rows != ["ok"]:
        raise damaged(path, f"SQLite integrity check: {rows[0]}")
    if meta.get("schema") != schema_version:
        raise JournalDamaged(f"journal {path} has schema version {meta.get('schema')!r}, this ringsched reads "
                             f"{schema_version!r}: finish that run with the ringsched that started it, or start "
                             f"again with a new --state", field="state")
    if not meta.get("run_id"):
        raise damaged(path, "it has no run id")
    return meta


def write_seal(path: Path) -> None:
    """After a clean close: record the file's checksum (temp + rename: never a partial seal)."""
    seal = path.with_name(path.name + SEAL_SUFFIX)
    tmp = seal.with_name(seal.name + f".tmp{os.getpid()}")
    try:
        tmp.write_text(file_sha256(path) + "\n")
        os.replace(tmp, seal)
    except OSError:
        tmp.unlink(missing_ok=True)


def break_seal(path: Path) -> None:
    """Before the first write: the seal no longer describes the file."""
    path.with_name(path.name + SEAL_SUFFIX).unlink(missing_ok=True)
