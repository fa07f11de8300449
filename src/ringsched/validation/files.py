"""User files opened in one place: every reader of a trace, cluster, jobs, experiment,
step-time or parameter file checks its path here first.

A path must name a regular file: a folder, a named pipe or a device (``/dev/zero`` would be
read for ever), a dangling link or a loop of links is refused with one line saying which.
Text is read up to a size limit, as UTF-8 with an optional byte-order mark. JSON is read
with repeated keys refused and nesting too deep for Python's parser one line, not a traceback.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ringsched.errors import InputError

MAX_JSON_BYTES = 16 << 20         # a parameter file: 16 MiB (a fitted model is a few KB)


def regular_file(path: str | Path, *, hint: str = "") -> Path:
    """``path`` if it names a regular file (links followed), else InputError naming it."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror or e})", file=str(path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a folder{'; expected a ' + hint + ' file' if hint else ''}", file=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise InputError("is not a regular file (a pipe or a device)", file=str(path))
    return p


def read_bytes(path: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``."""
    p = regular_file(path)
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror or e})", file=str(path)) from None
    if len(data) > max_bytes:
        raise InputError(f"file is larger than {_size(max_bytes)}", file=str(path))
    return data


def read_text(path: str | Path, *, max_bytes: int) -> str:
    """The text of a regular UTF-8 file (a leading byte-order mark dropped)."""
    data = read_bytes(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"not a text file (cannot decode as UTF-8 at byte {e.start})", file=str(path)) from None


def read_json(path: str | Path, *, max_bytes: int = MAX_JSON_BYTES):
    """The plain value of a JSON file, no key repeated. NaN and Infinity are read as floats:
    the caller refuses them naming their field."""
    text = read_text(path, max_bytes=max_bytes)
    try:
        return json.loads(text, object_pairs_hook=_no_repeats)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON ({e.msg})", file=str(path), row=e.lineno) from None
    except ValueError as e:  # a repeated key, an integer of more than 4,300 digits
        raise InputError(f"not valid JSON ({e})", file=str(path)) from None
    except RecursionError:  # the parser recurses once per level of nesting
        raise InputError("not valid JSON (nested too deeply)", file=str(path)) from None


def _no_repeats(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {k!r} appears twice")
        out[k] = v
    return out


def _size(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"
