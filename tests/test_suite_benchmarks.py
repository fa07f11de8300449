"""The suite's benchmark scripts (``benchmarks/``): joining runs (``suite_join.py``), reading
trades against each baseline (``suite_against_each.py``), options that cannot work, sums by
job width (``by_width.py``) and the held-out lists (``heldout.py``)."""

from __future__ import annotations

import pandas as pd
import pytest

from ringsched.experiment.suite import duplicated_cell
from ringsched.experiment.workloads import perturb_arrivals


def _benchmark_module(name: str = "suite_against_each"):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_join_replaces_exactly_the_new_runs_policy_and_estimate_pairs():
    """``benchmarks/suite_join.py``: NEW's (policy, estimates) cells replace OLD's, everything
    else of OLD stays. Mutant caught: replacing by policy alone (OLD's lognormal gadget cells
    dropped although NEW ran gadget exact only)."""
    mod = _benchmark_module("suite_join")
    cols = ["workload", "seed", "estimates", "policy", "total_utility"]
    old = pd.DataFrame([("w", s, e, p, 1.0) for s in (0, 1) for e in ("exact", "lognormal:1") for p in ("gadget", "srtf")],
                       columns=cols)
    new = pd.DataFrame([("w", s, "exact", "gadget", 2.0) for s in (0, 1)], columns=cols).assign(extra=0)
    j = mod.join_cells(new, old)
    assert list(j.columns) == cols and len(j) == len(old)
    got = j.groupby(["estimates", "policy"]).total_utility.agg(["sum", "size"])
    assert got.loc[("exact", "gadget")].tolist() == [4.0, 2]
    assert got.drop(("exact", "gadget")).values.tolist() == [[2.0, 2]] * 3


def test_a_join_refuses_a_cell_that_is_there_twice(tmp_path):
    """A cells table with one cell twice (a folder joined with itself, say) is one error line
    naming the file and the row, exit code 2, nothing written; the same table with the row gone
    joins. Mutant caught: no check (the cell counted twice in every mean)."""
    import subprocess
    import sys
    from pathlib import Path

    cols = ["workload", "seed", "estimates", "policy", "decided_as", "total_utility"]
    old = pd.DataFrame([("w", s, "exact", p, "jct", 1.0) for s in (0, 1) for p in ("gadget", "srtf")], columns=cols)
    for name, t in (("new", pd.concat([old.iloc[:2], old.iloc[[1]]], ignore_index=True)), ("old", old)):
        (tmp_path / name).mkdir()
        t.to_parquet(tmp_path / name / "cells.parquet", index=False)
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "suite_join.py"
    run = subprocess.run([sys.executable, str(path), str(tmp_path / "new"), str(tmp_path / "old"),
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    assert "new/cells.parquet" in lines[0] and "row 3" in lines[0] and "policy=srtf" in lines[0]
    assert not (tmp_path / "out").exists()
    assert duplicated_cell(old) is None


def test_trades_separate_utility_bought_mean_jct_from_losses():
    """``benchmarks/suite_against_each.py --trades``: a baseline faster but with far less utility
    is a trade (its mean JCT does not count at the kept utility), one at least as good on both
    is a loss. Mutants caught: no utility filter (the ratio 2.0 against the trade), the
    dominance test on mean JCT alone (the trade listed as a loss)."""
    mod = _benchmark_module()
    rows = [("w", s, p, u, j) for s in (0, 1) for p, u, j in
            (("gadget", 100.0, 200.0), ("fast", 60.0, 100.0), ("even", 101.0, 160.0), ("slow", 99.0, 400.0))]
    cells = pd.DataFrame(rows, columns=["workload", "seed", "policy", "total_utility", "mean_jct_s"]).assign(estimates="exact")
    t = mod.trades(cells, "gadget", keep=0.97).iloc[0]
    assert t.fastest == "fast" and t.mean_jct_ratio == pytest.approx(2.0)
    assert t.fastest_utility_ratio == pytest.approx(0.6)
    assert t.mean_jct_ratio_at_utility == pytest.approx(200.0 / 160.0)
    assert t.at_least_as_good_on_both == "even"


def test_trades_per_seed_show_a_seed_the_means_hide():
    """``--trades --per-seed``: srtf wins both metrics on seed 1 only; the means over seeds show
    no loss, the per-seed rows show it on seed 1 and not on seed 0. Mutant caught: the seed
    left out of the grouping keys (one row, no loss)."""
    mod = _benchmark_module()
    rows = [("w", 0, "gadget", 120.0, 100.0), ("w", 0, "srtf", 80.0, 110.0),
            ("w", 1, "gadget", 100.0, 200.0), ("w", 1, "srtf", 105.0, 150.0)]
    cells = pd.DataFrame(rows, columns=["workload", "seed", "policy", "total_utility", "mean_jct_s"]).assign(estimates="exact")
    assert mod.trades(cells).at_least_as_good_on_both.tolist() == [""]  # means: gadget 110 / 150 s, srtf 92.5 / 130 s
    t = mod.trades(cells, per_seed=True)
    assert t.seed.tolist() == [0, 1] and t.at_least_as_good_on_both.tolist() == ["", "srtf"]
    assert t.mean_jct_ratio.tolist() == pytest.approx([100.0 / 110.0, 200.0 / 150.0])


@pytest.mark.parametrize("script, args, names", [
    ("heldout.py", ["OUT", "--workloads", "ho-philly-2869ce,nope"], "--workloads"),
    ("heldout.py", ["OUT", "--objective", "deadline,slack=-1"], "--objective"),
    ("heldout.py", ["OUT", "--estimates", "lognormal:x"], "--estimates"),
    ("heldout.py", ["OUT", "--policies", "fifo,gadget:bogus=1"], "--policies"),
    ("suite_against_each.py", ["OUT", "--per-seed"], "--per-seed"),
    ("suite_against_each.py", ["OUT", "--trades"], "cells.parquet"),
    ("suite_join.py", ["OUT", "OUT", "OUT"], "cells.parquet"),
    ("by_width.py", ["--workloads", "syn-3,nope"], "--workloads"),
    ("by_width.py", ["--workloads", "syn-3", "--seeds", "0,x"], "--seeds"),
    ("by_width.py", ["--workloads", "syn-3", "--policies", "gadget:bogus=1"], "--policies"),
    ("by_width.py", ["--workloads", "syn-3", "--estimates", "lognormal:x"], "--estimates"),
    ("by_width.py", ["--workloads", "syn-3", "--objective", "deadline,slack=-1"], "--objective"),
    ("by_width.py", ["--trace", "synthetic:20", "--cluster", "4xZ"], "4xZ"),
    ("by_width.py", ["--trace", "philly:/nonexistent/none.csv"], "none.csv"),
])
def test_benchmark_options_that_cannot_work_are_one_error_line(tmp_path, script, args, names):
    """An unknown held-out workload or a bad objective, ``--per-seed`` without ``--trades``, a
    folder without a suite's cells, a bad seed list, policy, estimate, cluster or trace file:
    one line on stderr naming the option or file, exit code 2, nothing run.
    Mutants caught: argparse's ``ap.error`` (a usage line before the error); the cells read
    before the options are checked, or read without a check (a traceback); the objective not
    checked before the runs (a traceback); heldout.py's estimates or policies not checked before
    the runs (every cell failed); by_width's estimates, objective or workloads' worlds not checked before the runs
    (a traceback; a failed cell's line and exit 1)."""
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / script
    run = subprocess.run([sys.executable, str(path), *[str(tmp_path / a) if a == "OUT" else a for a in args]],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0], lines
    assert "Traceback" not in run.stderr and not list(tmp_path.iterdir())


def test_by_width_sums_each_width_and_reads_ratios_to_the_first_policy():
    """``benchmarks/by_width.py``: per width and policy the utility summed, the mean JCT and the
    restarts; per policy the totals and their ratios to the first policy named. Mutants caught:
    ratios to the last policy; policies sorted by name instead of kept in order (the first is
    then another); the mean JCT over all widths in every row; workloads pooled without their own
    tables, or a pooled table for one workload."""
    mod = _benchmark_module("by_width")
    rows = [(1, 2.0, 10.0, 0, "z"), (1, 4.0, 30.0, 1, "z"), (8, 6.0, 100.0, 2, "z"),
            (1, 1.0, 20.0, 0, "a"), (8, 9.0, 300.0, 5, "a")]
    jobs = pd.DataFrame(rows, columns=["requested_gpus", "utility", "jct_s", "restarts", "policy"])
    wide, tot = mod.tables(jobs)
    assert list(tot.index) == ["z", "a"]
    assert tot.utility.tolist() == [12.0, 10.0] and tot.utility_ratio.tolist() == pytest.approx([1.0, 10.0 / 12.0])
    assert tot.mean_jct_ratio.tolist() == pytest.approx([1.0, 160.0 / (140.0 / 3)])
    assert wide.loc[1, ("mean_jct_s", "z")] == 20.0 and wide.loc[8, ("mean_jct_s", "a")] == 300.0
    assert wide.loc[1, ("jobs", "z")] == 2 and wide.loc[8, ("restarts", "a")] == 5
    assert wide.loc[8, ("utility", "z")] == 6.0
    two = pd.concat([jobs.assign(workload="w2"), jobs.assign(workload="w1", utility=jobs.utility * 2)])
    got = mod.by_workload(two)
    assert [g[0] for g in got] == ["w2", "w1", "every workload above, pooled"]
    assert [g[2].loc["z", "utility"] for g in got] == [12.0, 24.0, 36.0]
    assert [g[0] for g in mod.by_workload(jobs.assign(workload="w"))] == ["w"]


def test_by_width_runs_the_suites_world_with_contention_when_asked(monkeypatch):
    """A cell's jobs come from the suite's world (``cell_world``: arrivals moved from seed 1 on),
    so their utility is the suite cell's total; ``--contention`` reaches the world. Mutants
    caught: ``cell_world`` (the suite's and this script's) without ``perturb_arrivals``; the cell's
    world built at seed 0 (another total); the flag dropped (contention off in the world's config)."""
    import ringsched.experiment.run as run_mod
    from ringsched.cli.workload import load_workload
    from ringsched.experiment.suite import Cell, cell_world, run_cell
    from ringsched.experiment.workloads import SuiteWorkload

    mod = _benchmark_module("by_width")
    cell = Cell(SuiteWorkload("t", "synthetic", "synthetic:30", "2x8", "test"), 1, "exact", "gadget")
    raw = load_workload("synthetic:30", "2x8", vc=None, window=None, limit=None, seed=1, rigid=False).jobs
    assert cell_world(cell)[0] == perturb_arrivals(raw, 1) != raw
    jobs = mod.width_jobs(cell, False)
    assert jobs.utility.sum() == pytest.approx(run_cell(cell)["total_utility"], rel=1e-12)
    assert set(jobs.policy) == {"gadget"} and set(jobs.seed) == {1}
    seen = []
    real = run_mod.run_one
    monkeypatch.setattr(run_mod, "run_one", lambda *a, **k: seen.append(a[4].contention) or real(*a, **k))
    mod.width_jobs(cell, True)
    assert seen == [True]


def test_by_width_counts_deadlines_met_by_width_as_the_objective_does():
    """Under ``--objective deadline`` each job's deadline met or not, summed by width and in the
    totals with their ratio to the first policy; the cell's count is the objective report's.
    Mutants caught: the objective not passed to the cells (no deadlines: no column); the totals
    without the count; the count's column taken whether the jobs have it or not (a KeyError)."""
    import argparse

    from ringsched.experiment.suite import run_cell
    from ringsched.experiment.workloads import SuiteWorkload

    mod = _benchmark_module("by_width")
    w = SuiteWorkload("t", "synthetic", "synthetic:40,load=10", "1x4", "test")
    a = argparse.Namespace(estimates="exact", objective="deadline")
    (cell,) = mod.cells_of(a, [w], [1], ["gadget"])
    jobs = mod.width_jobs(cell, False)
    met = int(jobs.deadline_met.sum())
    assert met == run_cell(cell)["deadline_met"] and 0 < met < len(jobs)
    jobs["utility"] = 1.0
    wide, tot = mod.tables(pd.concat([jobs, jobs.assign(policy="x", deadline_met=0)]))
    assert tot.deadline_met.tolist() == [met, 0] and tot.deadline_met_ratio.tolist() == [1.0, 0.0]
    assert wide[("deadline_met", "gadget")].sum() == met
    assert "deadline_met" not in mod.tables(jobs.drop(columns="deadline_met"))[1]


def test_heldout_runs_the_list_asked_for_and_names_from_either():
    """``benchmarks/heldout.py --set``: the first list by default, the second on request; its
    names are in neither the suite nor the first list, and ``--workloads`` finds a name of
    either list whatever ``--set`` says. Mutants caught: ``--set`` ignored (the first list
    always); ``--workloads`` looked up in the chosen list only (the other list's name unknown);
    a second-list workload named like a first-list or suite one."""
    import argparse

    from ringsched.experiment.workloads import WORKLOADS

    mod = _benchmark_module("heldout")

    def names(**kw):
        opts = dict(workloads=None, objective="jct", estimates="exact", policies="fifo", set="first") | kw
        return [w.name for w in mod.checked(argparse.Namespace(**opts))[0]]

    first, second = names(), names(set="second")
    assert len(first) == 10 and len(second) == 8
    assert not set(second) & (set(first) | {w.name for w in WORKLOADS})
    assert names(workloads="ho2-syn-4x8-2") == ["ho2-syn-4x8-2"]
    assert names(set="second", workloads="ho-philly-2869ce") == ["ho-philly-2869ce"]


def test_heldout_reads_a_policy_with_several_options_as_one():
    """``benchmarks/heldout.py --policies`` as the suite reads it: ``b:k=v,k2=v2`` is one policy.
    Mutant caught: the list split at every comma (``retry_backoff=5`` a policy of its own)."""
    import argparse

    mod = _benchmark_module("heldout")
    a = argparse.Namespace(workloads="ho-syn-3x8-rigid-2", objective="jct", estimates="exact",
                           policies="fifo,gadget:pack_slack=0,retry_backoff=5", set="first")
    ws, metrics, pols = mod.checked(a)
    assert pols == ["fifo", "gadget:pack_slack=0,retry_backoff=5"]
    assert [w.name for w in ws] == ["ho-syn-3x8-rigid-2"] and metrics == []

