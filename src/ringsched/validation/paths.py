"""Output paths checked before any work starts, so a bad ``--out`` costs one line, not a run.

Writability is tried, not read from permission bits (which say yes to root even on a
read-only file system): a temporary file is created and removed in the folder that will
hold the output.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ringsched.errors import InputError


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _try_write_in(folder: Path, path: Path, flag: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".ringsched-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"cannot write in {folder} ({e.strerror or e})", file=str(path), field=flag) from None


def output_folder(path: Path | str | None, flag: str = "--out") -> None:
    """A folder the command will create or fill: not an existing file, and writable."""
    if path is None:
        return
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("exists and is not a folder", file=str(path), field=flag)
    base = _nearest_existing(path)
    if not base.is_dir():
        raise InputError(f"cannot create it: {base} is not a folder", file=str(path), field=flag)
    _try_write_in(base, path, flag)


def state_folder(path: Path | None) -> None:
    """A ``--state`` directory: a folder (not a file) this process can create or write in."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise InputError(f"--state {path} exists and is not a directory", field="state")
    output_folder(path, "--state")


def output_file(path: Path | str | None, flag: str = "--out") -> None:
    """A file the command will write: not a folder, in an existing writable folder."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder; give a file path", file=str(path), field=flag)
    parent = path.absolute().parent
    if not parent.is_dir():
        raise InputError(f"folder {parent} does not exist", file=str(path), field=flag)
    if path.exists():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        except OSError as e:
            raise InputError(f"cannot write it ({e.strerror or e})", file=str(path), field=flag) from None
    else:
        _try_write_in(parent, path, flag)
