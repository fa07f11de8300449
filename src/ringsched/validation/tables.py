"""Checks of a delimited file before its rows are read: size, and a header without repeats."""

from __future__ import annotations

import csv
from pathlib import Path

from ringsched.errors import InputError
from ringsched.validation.bounds import MAX_TABLE_BYTES


def check_table_file(path: Path, *, sep: str = ",", has_header: bool = True) -> None:
    """Refuse a file over ``MAX_TABLE_BYTES`` and a header that names a column twice (row 1)."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror or e})", file=str(path)) from None
    if size > MAX_TABLE_BYTES:
        raise InputError(f"file is larger than {MAX_TABLE_BYTES >> 30} GiB", file=str(path))
    if not has_header:
        return
    try:
        with open(path, encoding="utf-8", newline="") as f:
            line = f.readline()
    except (OSError, UnicodeDecodeError):
        return  # the reader reports it, with its own wording
    names = [c.strip() for c in next(csv.reader([line], delimiter=sep), [])]
    seen: set[str] = set()
    for name in names:
        if name in seen and name:
            raise InputError(f"column {name!r} appears twice in the header", file=str(path), row=1, field=name)
        seen.add(name)
