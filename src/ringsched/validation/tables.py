"""Checks of a delimited file before its rows are read (size, a header without repeats), the
file line of a row the reader counted, and where a quoted field that never closes opens."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from ringsched.errors import InputError
from ringsched.validation.bounds import MAX_TABLE_BYTES

_SPACES = re.compile(" *")


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


def unclosed_quote(path: Path, *, sep: str = ",") -> tuple[int, int] | None:
    """Where a quoted field that is never closed opens: (the file's line, 1-based; the field's
    index in its row), or None when every quote closes. Quotes are read as the CSV reader reads
    them: a quote opens a field only at its start (after spaces), ``""`` inside it is a quote,
    and it may span lines (blank ones too). Only used on the error path."""
    open_at = None
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            for number, line in enumerate(f, start=1):
                if '"' in line:  # (a line without one leaves the state as it was)
                    open_at = _open_after(line, sep, number, open_at)
    except OSError:
        return None
    return open_at


def _open_after(line: str, sep: str, number: int, open_at: tuple[int, int] | None) -> tuple[int, int] | None:
    """The quoted field still open after ``line`` (line ``number``), given the one open before."""
    i, field = 0, 0 if open_at is None else open_at[1]
    while True:
        if open_at is None:
            i = _SPACES.match(line, i).end()
            if line.startswith('"', i):
                open_at, i = (number, field), i + 1
        if open_at is not None:
            i = _after_closing_quote(line, i)
            if i < 0:
                return open_at
            open_at = None
        k = line.find(sep, i)  # (the rest of the field is text, quotes included)
        if k < 0:
            return None
        field, i = field + 1, k + 1


def _after_closing_quote(line: str, i: int) -> int:
    """The index after the quote at or after ``i`` that closes a quoted field, or -1."""
    j = line.find('"', i)
    while j >= 0 and line.startswith('"', j + 1):  # "" is a quote inside the field
        j = line.find('"', j + 2)
    return j + 1 if j >= 0 else -1
