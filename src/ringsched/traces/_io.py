"""Shared helpers for the trace loaders: reading files into frames, column checks that raise
InputError naming the file, the row and the field, and the final schema frame.

Row numbers follow the spreadsheet convention: in a file with a header the header is row 1
and the first data row is row 2; in a header-less file (Gavel ``.trace``) the first line is
row 1. The CSV reader skips blank lines; the rows it counts are mapped back to the file's
line numbers when an error names one (``validation.tables.physical_line``).
"""

from __future__ import annotations

import csv
import re
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.errors import InputError
from ringsched.traces import schema
from ringsched.validation.bounds import Bound
from ringsched.validation.files import regular_file
from ringsched.validation.tables import check_table_file, physical_line, unclosed_quote


class BadRows:
    """``--skip-bad-rows``: the data rows of each file that failed a check, with why.

    A load under ``skipping_bad_rows`` runs the loader again and again: each failed check
    (``fail``) records every row it flags, by its row number in the file, and raises as usual;
    the next run's ``read_table`` leaves those rows out. Each run removes every row one check
    flags, so a load takes at most one run per distinct check. Problems of a whole file
    (missing column, unreadable text) are not rows to skip and still stop the load.
    """

    def __init__(self) -> None:
        self.drop: dict[str, dict[int, str]] = {}  # file -> row -> "field: message"
        self.kept: dict[str, np.ndarray] = {}  # file -> file row number of each row read
        self.recorded = False  # the last run recorded new rows

    def record(self, file: str, rows: np.ndarray, field: str, text: str) -> None:
        bad = self.drop.setdefault(file, {})
        for r in rows.tolist():
            bad.setdefault(int(r), f"{field}: {text}")
        self.recorded = True

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.drop.values())

    def examples(self, n: int = 3) -> list[str]:
        """The first ``n`` skipped rows as "file, row R, field: message"."""
        out = [(f, r, why) for f in sorted(self.drop) for r, why in sorted(self.drop[f].items())][:n]
        return [f"{f}, row {physical_line(Path(f), r)}, {why}" for f, r, why in out]


_BAD_ROWS: ContextVar[BadRows | None] = ContextVar("ringsched_bad_rows", default=None)


def skipping_bad_rows(load: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """``load()`` with rows that fail a check left out; the frame's attrs say how many
    (``bad_rows``) and show the first few (``bad_row_examples``)."""
    bad = BadRows()
    token = _BAD_ROWS.set(bad)
    try:
        while True:
            bad.recorded = False
            try:
                df = load()
                break
            except InputError:
                if not bad.recorded:
                    raise  # not a row that can be left out
    finally:
        _BAD_ROWS.reset(token)
    df.attrs.update(bad_rows=bad.count, bad_row_examples=bad.examples())
    return df


def file_rows(file: Path, n: int, offset: int) -> np.ndarray:
    """The file row number of each of the ``n`` rows read (rows left out are skipped)."""
    bad = _BAD_ROWS.get()
    kept = bad.kept.get(str(file)) if bad is not None else None
    return kept if kept is not None and len(kept) == n else np.arange(n) + offset


def first(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask, dtype=bool))[0])


def fail(mask, message, file: Path, field: str, offset: int) -> None:
    """Raise InputError at the first True of ``mask``; ``message`` may be a callable(i).
    Under ``skipping_bad_rows`` every flagged row is recorded first, to be left out."""
    mask = np.asarray(mask, dtype=bool)
    if mask.any():
        i = first(mask)
        text = message(i) if callable(message) else message
        rows = file_rows(file, mask.size, offset)
        bad = _BAD_ROWS.get()
        if bad is not None:
            bad.record(str(file), rows[mask], field, text)
        raise InputError(text, file=str(file), row=physical_line(Path(file), int(rows[i])), field=field)


def require_file(path: Path, *, suffix_hint: str = "") -> Path:
    return regular_file(path, hint=suffix_hint)  # a device or a pipe (/dev/zero) would be read for ever


def folder_files(path: Path, *, pattern: str, glob: str, what: str) -> list[Path]:
    """Files of a trace folder: those whose name matches ``pattern`` (a regex), or, if none
    does, every file matching ``glob``. Sorted by name."""
    if not path.exists():
        raise InputError("no such file or folder", file=str(path))
    rx = re.compile(pattern)
    files = sorted(p for p in path.iterdir() if p.is_file() and rx.fullmatch(p.name))
    if not files:
        files = sorted(p for p in path.glob(glob) if p.is_file())
    if not files:
        raise InputError(f"folder holds no {what} files ({glob})", file=str(path))
    return files


def read_table(path: Path, required: list[str], *, text: tuple[str, ...] = (), sep: str = ",",
               names: list[str] | None = None) -> pd.DataFrame:
    """Read a delimited text file; check the required columns.

    Columns named in ``text`` are read as strings, the others are left to the parser (a
    numeric column comes back numeric, fast; one with any non-number comes back as strings
    and ``numbers`` finds the bad cell). Only an empty field is missing (NaN); "nan", "NA"
    etc. stay text. With ``names`` the file has no header and must have exactly that many
    fields per line.
    """
    require_file(path)
    check_table_file(path, sep=sep, has_header=names is None)
    kwargs: dict = dict(sep=sep, dtype={c: str for c in text}, keep_default_na=False, na_values=[""],
                        skipinitialspace=True, index_col=False)
    if names is not None:
        kwargs.update(header=None, names=names, quoting=csv.QUOTE_NONE)
    try:
        with warnings.catch_warnings():
            # pandas only warns (and drops the extra cells) when lines are longer than the header
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(path, **kwargs)
    except pd.errors.ParserWarning:
        row = _first_long_line(path, sep, None if names is None else len(names))
        row = None if row is None else physical_line(path, row)
        raise InputError("line has more fields than the header", file=str(path), row=row) from None
    except pd.errors.EmptyDataError:
        raise InputError("file is empty", file=str(path)) from None
    except pd.errors.ParserError as e:
        raise _unreadable(path, e, sep, quoted=names is None) from None
    except UnicodeDecodeError:
        raise InputError("not a text file (cannot decode as UTF-8)", file=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror or e})", file=str(path)) from None
    if names is None:
        df.columns = [str(c).strip() for c in df.columns]
        missing = [c for c in required if c not in df.columns]
        if missing:
            have = ", ".join(map(str, df.columns)) or "none"
            raise InputError(f"missing column(s) {', '.join(missing)} (the header has: {have})",
                             file=str(path), row=1, field=missing[0])
    else:
        # A line with fewer fields than `names` leaves NaN in the last ones.
        n_fields = len(names)
        short = df[names[-1]].isna().to_numpy()
        if short.any():
            i = first(short)
            raise InputError(f"expected {n_fields} tab-separated fields", file=str(path), row=physical_line(path, i + 1),
                             field=next(c for c in names if pd.isna(df[c].iloc[i])))
    bad = _BAD_ROWS.get()
    if bad is not None:  # --skip-bad-rows: leave out the rows an earlier run flagged
        rows = np.arange(len(df)) + (1 if names is not None else 2)
        skip = bad.drop.get(str(path))
        if skip:
            keep = ~np.isin(rows, np.fromiter(skip, dtype=np.int64))
            df, rows = df[keep].reset_index(drop=True), rows[keep]
            if len(df) == 0:
                raise InputError(f"every data row is bad ({len(skip)} skipped; first: row {min(skip)}, "
                                 f"{skip[min(skip)]})", file=str(path))
        bad.kept[str(path)] = rows
    if len(df) == 0:
        raise InputError("file has a header but no data rows", file=str(path))
    return df


def _unreadable(path: Path, e: Exception, sep: str, *, quoted: bool) -> InputError:
    """The parser's complaint as an InputError. A quote that is never closed is named by the
    line and field where it opens, found in the file (the parser counts records, not lines)."""
    what = f"not a readable {'tab-separated' if sep == chr(9) else 'CSV'} file"
    where = unclosed_quote(path, sep=sep) if quoted else None
    if where is not None:
        row, index = where
        names = header(path) if row > 1 else []
        return InputError(f"{what} (the quote that opens this field is never closed)", file=str(path), row=row,
                          field=names[index] if index < len(names) else None)
    msg = str(e).strip().splitlines()[0] if str(e).strip() else "parse error"
    m = re.search(r"line (\d+)", msg)
    return InputError(f"{what} ({msg})", file=str(path), row=int(m.group(1)) if m else None)


def _first_long_line(path: Path, sep: str, n_fields: int | None) -> int | None:
    """Row number (as in errors) of the first line with more fields than the header; only used
    on the error path."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter=sep, quoting=csv.QUOTE_NONE if n_fields else csv.QUOTE_MINIMAL)
            row = 0
            for fields in reader:
                if not fields or not "".join(fields).strip():
                    continue
                row += 1
                if n_fields is None:
                    n_fields = len(fields)
                elif len(fields) > n_fields:
                    return row
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return None


def strings(df: pd.DataFrame, col: str, file: Path, offset: int, *, required: bool = True) -> pd.Series:
    """The column as stripped strings; '' (missing) is an error when ``required``."""
    s = df[col].fillna("").astype(str).str.strip()
    if required:
        fail((s == "").to_numpy(), "is empty", file, col, offset)
    return s


def numbers(df: pd.DataFrame, col: str, file: Path, offset: int, bound: Bound, *,
            allow_missing: bool = False) -> np.ndarray:
    """The column as float64, every value within ``bound`` (``validation.bounds.LIMITS``).
    Missing ('') is an error unless ``allow_missing`` (then NaN); text that is not a number,
    NaN, infinities, non-integers of a whole-number bound and values out of range are errors."""
    col_data = df[col]
    if pd.api.types.is_numeric_dtype(col_data.dtype) and not pd.api.types.is_bool_dtype(col_data.dtype):
        values = col_data.to_numpy(dtype=float, na_value=np.nan)
        empty = np.isnan(values)
        raw = None
    else:
        raw = col_data.fillna("").astype(str).str.strip()
        empty = (raw == "").to_numpy()
        values = pd.to_numeric(raw.where(~empty, "nan"), errors="coerce").to_numpy(dtype=float)
        fail(np.isnan(values) & ~empty, lambda i: f"must be {bound.describe()}, got {raw.iloc[i]!r}", file, col,
             offset)
    if not allow_missing:
        fail(empty, "is empty", file, col, offset)

    def shown(i: int) -> str:
        return repr(raw.iloc[i]) if raw is not None else f"{values[i]:g}"

    fail(~empty & bound.bad(values), lambda i: f"must be {bound.describe()}, got {shown(i)}", file, col, offset)
    return values


def unique_ids(ids: pd.Series, file: Path, col: str, offset: int) -> None:
    dup = ids.duplicated().to_numpy()
    fail(dup, lambda i: f"duplicate job id {ids.iloc[i]!r}", file, col, offset)


def frame(*, job_id, arrival_s, num_gpus, duration_s=None, work_samples=None, tenant="",
          model="", local_bsz=0) -> pd.DataFrame:
    """A frame with the schema's columns; scalars broadcast; missing duration/work = NaN."""
    n = len(arrival_s)
    nan = np.full(n, np.nan)
    cols = {
        "job_id": _str_col(job_id, n),
        "arrival_s": np.asarray(arrival_s, dtype=float),
        "num_gpus": np.asarray(num_gpus, dtype=np.int64),
        "duration_s": nan if duration_s is None else np.asarray(duration_s, dtype=float),
        "work_samples": nan if work_samples is None else np.asarray(work_samples, dtype=float),
        "tenant": _str_col(tenant, n),
        "model": _str_col(model, n),
        "local_bsz": np.broadcast_to(np.asarray(local_bsz, dtype=np.int64), (n,)).copy(),
    }
    return pd.DataFrame(cols)[list(schema.COLUMNS)]


def _str_col(v, n: int):
    if isinstance(v, str):
        return pd.array(np.full(n, v, dtype=object), dtype="string")
    if isinstance(v, pd.Series):
        v = v.array
    elif not isinstance(v, pd.api.extensions.ExtensionArray):
        v = np.asarray(v, dtype=object)
    return pd.array(v, dtype="string")


def finish(df: pd.DataFrame, source: Path | str, *, fmt: str, dropped: dict[str, int] | None = None,
           rows: np.ndarray | None = None, **attrs) -> pd.DataFrame:
    """Validate against the schema (``rows``: the file row of each job), sort, attach provenance."""
    try:
        out = schema.validate(df, str(source), rows)
    except InputError as e:  # name the row as the file shows it (blank lines counted)
        if e.row is None or not Path(str(source)).is_file():
            raise
        raise InputError(e.message, file=e.file, row=physical_line(Path(str(source)), e.row), field=e.field) from None
    reasons = {k: int(v) for k, v in (dropped or {}).items() if v}
    out.attrs.update(format=fmt, source=str(source), dropped=sum(reasons.values()),
                     dropped_reasons=reasons, **attrs)
    return out


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


class Part:
    """One file's jobs before the files of a folder are combined: a schema frame whose
    arrival_s is still on the source clock, the file row of every job, and drop counts."""

    def __init__(self, df: pd.DataFrame, rows: np.ndarray, path: Path, dropped: dict[str, int]):
        self.df, self.rows, self.path, self.dropped = df, rows, path, dropped


def combine(parts: list[Part], source: Path, *, fmt: str, id_field: str = "job_id", **attrs) -> pd.DataFrame:
    """Concatenate parts, re-base arrivals to the earliest (source clock), check that job ids
    are unique across files (naming the file and row of the first repeat), and finish."""
    df = concat([p.df for p in parts])
    dup = df["job_id"].duplicated().to_numpy()
    if dup.any():
        starts = np.cumsum([0] + [len(p.df) for p in parts])
        what = f"duplicate job id {df['job_id'].iloc[first(dup)]!r} (also in an earlier row or file)"
        bad = _BAD_ROWS.get()
        for k, part in enumerate(parts):  # each repeat is a bad row of its own file
            mine = dup[starts[k]:starts[k + 1]]
            if mine.any():
                if bad is not None:
                    bad.record(str(part.path), part.rows[mine], id_field, "duplicate job id")
                else:
                    break
        i = first(dup)
        k = int(np.searchsorted(starts, i, side="right") - 1)
        row = physical_line(parts[k].path, int(parts[k].rows[i - starts[k]]))
        raise InputError(what, file=str(parts[k].path), row=row, field=id_field)
    if len(df):
        df["arrival_s"] = df["arrival_s"] - df["arrival_s"].min()
    dropped: dict[str, int] = {}
    for p in parts:
        for k2, v in p.dropped.items():
            dropped[k2] = dropped.get(k2, 0) + int(v)
    if len(parts) > 1:
        attrs.setdefault("files", [str(p.path) for p in parts])
    return finish(df, source, fmt=fmt, dropped=dropped, rows=np.concatenate([p.rows for p in parts]), **attrs)


def header(path: Path) -> list[str]:
    """The header line's column names (stripped), to choose a parser before reading."""
    require_file(path)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            line = f.readline()
    except UnicodeDecodeError:
        raise InputError("not a text file (cannot decode as UTF-8)", file=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror or e})", file=str(path)) from None
    return [c.strip() for c in next(csv.reader([line]), [])] if line.strip() else []
