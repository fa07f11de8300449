"""Checks of a delimited file before its rows are read (size, a header without repeats), and\nthe file line of a row the reader counted."""

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


def physical_line(path: Path, row: int) -> int:
    """The file's line number (1-based) of its ``row``-th non-blank line: the CSV readers skip
    blank lines, so their row counts must be mapped back to name the row as the file shows it.
    Only used on the error path; ``row`` itself when the file cannot be read again."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            seen = 0
            for number, line in enumerate(f, start=1):
                if line.strip():
                    seen += 1
                    if seen == row:
                        return number
    except OSError:
        pass
    return row
