"""One suite run's cells with some policies run again: OLD's cells, except that for every
(policy, estimates) pair NEW has, NEW's cells replace OLD's; the suite's tables are written
from the joined cells into OUT (``experiment.suite.write_suite``) and printed. How
docs/suite.md's six-seed tables are kept current when a change touches only some policies
(GADGET and OASiS share their machinery; the other baselines' decisions are untouched):

    ringsched suite --seeds 6 --policies gadget,oasis --out NEW
    python benchmarks/suite_join.py NEW OLD OUT [--target gadget]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def join_cells(new: pd.DataFrame, old: pd.DataFrame) -> pd.DataFrame:
    """OLD's cells without NEW's (policy, estimates) pairs, then NEW's (OLD's columns), sorted."""
    keys = set(zip(new.policy, new.estimates))
    kept = old[[(p, e) not in keys for p, e in zip(old.policy, old.estimates)]]
    cells = pd.concat([kept, new[old.columns.intersection(new.columns)]], ignore_index=True)
    return cells.sort_values(["workload", "estimates", "seed", "policy"], kind="stable").reset_index(drop=True)


def main(argv=None) -> None:
    from ringsched.experiment.suite import duplicated_cell, write_suite
    from ringsched.experiment.suite_report import print_report
    from ringsched.reports.terminal import stdout_console

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new", type=Path)
    ap.add_argument("old", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--target", default="gadget")
    a = ap.parse_args(argv)
    for folder in (a.new, a.old):
        if not (folder / "cells.parquet").is_file():
            print(f"suite_join.py: {folder / 'cells.parquet'}: no such file (a suite's --out folder)", file=sys.stderr)
            sys.exit(2)
    tables = {}
    for folder in (a.new, a.old):
        tables[folder] = pd.read_parquet(folder / "cells.parquet")
        bad = duplicated_cell(tables[folder])
        if bad:
            print(f"suite_join.py: {folder / 'cells.parquet'}: {bad}", file=sys.stderr)
            sys.exit(2)
    cells = join_cells(tables[a.new], tables[a.old])
    print_report(write_suite(a.out, cells, a.target), a.target, stdout_console())


if __name__ == "__main__":
    main()
