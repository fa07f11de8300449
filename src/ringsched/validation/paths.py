"""Output paths checked before any work starts, so a bad ``--out`` costs one line, not a run."""

from __future__ import annotations

import os
from pathlib import Path

from ringsched.errors import InputError


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _writable_below(path: Path, flag: str) -> None:
    base = _nearest_existing(path)
    if not base.is_dir():
        raise InputError(f"cannot create it: {base} is not a folder", file=str(path), field=flag)
    if not os.access(base, os.W_OK | os.X_OK):
        raise InputError(f"cannot write here: permission denied in {base}", file=str(path), field=flag)


def output_folder(path: Path | None, flag: str = "--out") -> None:
    """A folder the command will create or fill: not an existing file, and writable."""
    if path is None:
        return
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise InputError("exists and is not a folder", file=str(path), field=flag)
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError("cannot write here: permission denied", file=str(path), field=flag)
        return
    _writable_below(path, flag)


def output_file(path: Path | None, flag: str = "--out") -> None:
    """A file the command will write: not a folder, in an existing writable folder."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder; give a file path", file=str(path), field=flag)
    parent = path.absolute().parent
    if not parent.is_dir():
        raise InputError(f"folder {parent} does not exist", file=str(path), field=flag)
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError("cannot write: permission denied", file=str(path), field=flag)
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write here: permission denied in {parent}", file=str(path), field=flag)
