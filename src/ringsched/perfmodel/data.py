"""Reading measured step times (and placement queries) from CSV, with row-level validation.

Two formats are accepted, for any model:

* Pollux format: ``placement,local_bsz[,step_time][,sync_time]``; ``placement`` has one digit
  (1-9) per server used, giving that server's number of workers, e.g. ``2244``.
* Shape format: ``num_nodes,num_replicas,local_bsz[,step_time][,sync_time][,max_per_node]``;
  ``max_per_node`` defaults to the balanced value ceil(num_replicas / num_nodes).

Row numbers in errors count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS, Bound
from ringsched.validation.files import regular_file
from ringsched.validation.tables import check_table_file, physical_line


@dataclass(frozen=True)
class PlacementTable:
    """Column arrays of placements: one row per measured or queried (placement, batch)."""

    num_nodes: np.ndarray
    num_replicas: np.ndarray
    max_per_node: np.ndarray
    local_bsz: np.ndarray
    step_time: np.ndarray | None = None
    sync_time: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.local_bsz)

    def subset(self, mask: np.ndarray) -> "PlacementTable":
        pick = lambda a: None if a is None else a[mask]  # noqa: E731
        return PlacementTable(self.num_nodes[mask], self.num_replicas[mask], self.max_per_node[mask],
                              self.local_bsz[mask], pick(self.step_time), pick(self.sync_time))

    @staticmethod
    def concat(tables: list["PlacementTable"]) -> "PlacementTable":
        def cat(name):
            parts = [getattr(t, name) for t in tables]
            return None if any(p is None for p in parts) else np.concatenate(parts)
        return PlacementTable(*(cat(n) for n in ("num_nodes", "num_replicas", "max_per_node",
                                                  "local_bsz", "step_time", "sync_time")))

    def shapes(self) -> np.ndarray:
        """The placement shape (num_nodes, num_replicas) of every row, as an (n, 2) array."""
        return np.stack([self.num_nodes, self.num_replicas], axis=1)


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _numeric(df: pd.DataFrame, col: str, path: str, bound: Bound) -> np.ndarray:
    """The column as float64, every value within ``bound`` (``validation.bounds.LIMITS``)."""
    raw = df[col]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = bound.bad(values)
    if bad.any():
        i = _first_bad(bad)
        shown = raw.iloc[i]
        what = "is empty" if (shown is None or (isinstance(shown, float) and np.isnan(shown)) or str(shown).strip() == "") \
            else f"must be {bound.describe()}, got {str(shown).strip()!r}"
        raise InputError(what, file=path, row=physical_line(Path(path), i + 2), field=col)
    return values


def _parse_placements(col: pd.Series, path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.empty(len(col))
    w = np.empty(len(col))
    d = np.empty(len(col))
    for i, raw in enumerate(col.to_numpy()):
        s = "" if raw is None or (isinstance(raw, float) and np.isnan(raw)) else str(raw).strip()
        if not s:
            raise InputError("is empty", file=path, row=physical_line(Path(path), i + 2), field="placement")
        for ch in s:
            if ch not in "123456789":
                raise InputError(f"unknown placement digit {ch!r} in {s!r} (one digit 1-9 per server)",
                                 file=path, row=physical_line(Path(path), i + 2), field="placement")
        if LIMITS["nodes"].problem(len(s)):
            raise InputError(f"a placement of {len(s):,} servers: the number of servers must be "
                             f"{LIMITS['nodes'].describe()}", file=path, row=physical_line(Path(path), i + 2),
                             field="placement")
        digits = [int(ch) for ch in s]
        k[i], w[i], d[i] = len(digits), sum(digits), max(digits)
    return k, w, d


def read_placements(path: str | Path, *, require_step_time: bool) -> tuple[pd.DataFrame, PlacementTable]:
    """Read and validate a step-time CSV (``require_step_time``) or a query CSV.

    Returns the raw frame (all columns kept, as text, for pass-through) and the table.
    """
    path = str(path)
    p = Path(path)
    regular_file(p, hint=".csv")
    check_table_file(p)
    try:
        df = pd.read_csv(p, dtype=str, skipinitialspace=True, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise InputError("file is empty", file=path) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else "parse error"
        m = re.search(r"line (\d+)", msg)
        raise InputError(f"not a readable CSV file ({msg})", file=path, row=int(m.group(1)) if m else None) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise InputError("file has a header but no data rows", file=path)
    df = df.replace("", np.nan)

    if "placement" in df.columns:
        k, w, d = _parse_placements(df["placement"], path)
    elif "num_nodes" in df.columns or "num_replicas" in df.columns:
        for col in ("num_nodes", "num_replicas"):
            if col not in df.columns:
                raise InputError("missing column", file=path, row=1, field=col)
        k = _numeric(df, "num_nodes", path, LIMITS["nodes"])
        w = _numeric(df, "num_replicas", path, LIMITS["replicas"])
        bad = w < k
        if bad.any():
            i = _first_bad(bad)
            raise InputError(f"must be at least num_nodes ({k[i]:g}), got {w[i]:g}", file=path, row=physical_line(Path(path), i + 2),
                             field="num_replicas")
        if "max_per_node" in df.columns:
            d = _numeric(df, "max_per_node", path, LIMITS["server_gpus"])
            bad = (d < np.ceil(w / k)) | (d > w - (k - 1))
            if bad.any():
                i = _first_bad(bad)
                raise InputError(f"impossible for {w[i]:g} replicas on {k[i]:g} nodes, got {d[i]:g}",
                                 file=path, row=physical_line(Path(path), i + 2), field="max_per_node")
        else:
            d = np.ceil(w / k)
    else:
        raise InputError("missing column: need 'placement' or 'num_nodes' and 'num_replicas'",
                         file=path, row=1, field="placement")

    if "local_bsz" not in df.columns:
        raise InputError("missing column", file=path, row=1, field="local_bsz")
    bsz = _numeric(df, "local_bsz", path, LIMITS["local_bsz"])
    step = None
    if require_step_time:
        if "step_time" not in df.columns:
            raise InputError("missing column", file=path, row=1, field="step_time")
        step = _numeric(df, "step_time", path, LIMITS["step_time_s"])
    sync = _numeric(df, "sync_time", path, LIMITS["sync_time_s"]) if "sync_time" in df.columns else None
    return df, PlacementTable(k, w, d, bsz, step, sync)


def read_pollux_profile_dir(directory: str | Path) -> PlacementTable:
    """placements.csv and scalability.csv of a Pollux-format profile folder, as one table."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError("no such directory", file=str(directory))
    tables = []
    for name in ("placements.csv", "scalability.csv"):
        f = directory / name
        if f.exists():
            tables.append(read_placements(f, require_step_time=True)[1])
    if not tables:
        raise InputError("has neither placements.csv nor scalability.csv", file=str(directory))
    return PlacementTable.concat(tables)
