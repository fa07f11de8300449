"""``ringsched sweep``: 2 loads x 2 seeds on a tiny trace, in local processes and as Ray tasks
on a local Ray instance; the intervals are Student-t intervals of the cells."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ARGS = ["--trace", "synthetic:40", "--cluster", "2x8", "--loads", "0.5,2", "--seeds", "0,1",
        "--policies", "fifo,srtf"]
KEYS = ["cluster", "load", "seed", "policy"]
METRICS = ["jobs", "completed", "mean_jct_s", "p99_jct_s", "total_utility", "gpu_utilization", "energy_kwh"]


def sweep(out, *extra) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "ringsched.cli.main", "sweep", *ARGS, *extra, "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def shared_sweep_run(tmp_path_factory) -> tuple[Path, str]:
    """The local sweep, run once per test session and shared with tests/test_report_browser.py."""
    out = tmp_path_factory.getbasetemp() / "shared-sweep-local"
    if not (out / "stdout.txt").exists():
        r = sweep(out)
        (out / "stdout.txt").write_text(r.stdout)
    return out, (out / "stdout.txt").read_text()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    return shared_sweep_run(tmp_path_factory)


def test_local_sweep_writes_cells_intervals_and_report(local_run):
    out, stdout = local_run
    cells = pd.read_csv(out / "cells.csv")
    assert len(cells) == 2 * 2 * 2
    assert sorted(set(cells["load"])) == [0.5, 2.0] and sorted(set(cells["seed"])) == [0, 1]
    assert (cells["jobs"] == 40).all()
    agg = pd.read_csv(out / "sweep.csv")
    assert {"cluster", "load", "policy", "metric", "n", "mean", "std", "ci_low", "ci_high", "confidence"} <= set(agg)
    for (load, pol), g in cells.groupby(["load", "policy"]):
        x = g["mean_jct_s"].to_numpy(float)
        row = agg[(agg["load"] == load) & (agg["policy"] == pol) & (agg["metric"] == "mean_jct_s")].iloc[0]
        lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert row["n"] == 2 and row["mean"] == pytest.approx(x.mean())
        # the interval is clipped to possible values: a JCT is never negative
        assert row["ci_low"] == pytest.approx(max(lo, 0.0)) and row["ci_high"] == pytest.approx(hi)
    from ringsched.reports.metrics import METRICS_BY_KEY

    # no impossible values (the old worst-rho band went to -60): each bound within its metric's range
    assert all(row.ci_low >= METRICS_BY_KEY[row.metric].lower for row in agg.itertuples())
    html = (out / "report.html").read_text()
    assert 'id="sweep-mean-jct-s"' in html and "<script" not in html and 'id="sweep-table"' in html
    for f in ("paired.csv", "experiment.yaml", "run.json"):
        assert (out / f).stat().st_size > 0, f
    assert stdout.strip().splitlines()[-1] == f"report: {out / 'report.html'}"


def test_sweep_config_file_reproduces_the_intervals(local_run, tmp_path):
    out, _ = local_run
    r = subprocess.run([sys.executable, "-m", "ringsched.cli.main", "sweep", "--config", str(out / "experiment.yaml"),
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for f in ("sweep.csv", "paired.csv", "experiment.yaml"):
        assert (tmp_path / f).read_bytes() == (out / f).read_bytes(), f


def test_load_factor_divides_arrival_times():
    from ringsched.experiment.workload import scale_arrivals
    from ringsched.cli.workload import load_workload

    jobs = load_workload("synthetic:20", "2x8", vc=None, window=None, limit=None, seed=0, rigid=False).jobs
    fast = scale_arrivals(jobs, 2.0)
    assert [j.arrival_s / 2 for j in jobs] == [j.arrival_s for j in fast]
    assert [j.job_id for j in jobs] == [j.job_id for j in fast]
    assert scale_arrivals(jobs, 1.0) == jobs


def test_paired_differences_are_per_seed_against_the_baseline():
    """Seed-to-seed spread shared by both policies cancels: b is a + 10 on every seed, so the
    paired interval is the point 10 while the unpaired intervals overlap widely."""
    from ringsched.reports import paired_differences

    a = [100.0, 300.0, 500.0]
    cells = pd.DataFrame({"cluster": "c", "load": 1.0, "seed": [0, 1, 2] * 2, "policy": ["a"] * 3 + ["b"] * 3,
                          "mean_jct_s": a + [x + 10.0 for x in a]})
    d = paired_differences(cells, "a")
    row = d[(d["policy"] == "b") & (d["metric"] == "mean_jct_s")].iloc[0]
    assert (row["n"], row["mean_diff"], row["ci_low"], row["ci_high"]) == (3, 10.0, 10.0, 10.0)
    assert set(d["policy"]) == {"b"} and (d["baseline"] == "a").all()


def test_intervals_never_leave_the_possible_values():
    """A worst rho is >= 1 (the old band went to -60, then to 0), a utilisation in [0, 1] and a
    difference of two utilisations in [-1, 1], however wide the t-interval of three seeds.
    Mutants caught: worst_ftf_rho's lower bound 0; paired differences left unclipped."""
    from ringsched.reports import aggregate_sweep, paired_differences

    cells = pd.DataFrame({"cluster": "c", "load": 1.0, "seed": [0, 1, 2] * 2, "policy": ["a"] * 3 + ["b"] * 3,
                          "worst_ftf_rho": [1.0, 1.0, 60.0, 1.0, 2.0, 1.0],
                          "gpu_utilization": [0.0, 0.9, 0.0, 0.9, 0.0, 0.9]})
    agg = aggregate_sweep(cells).set_index(["policy", "metric"])
    assert agg.loc[("a", "worst_ftf_rho"), "ci_low"] == 1.0 and agg.loc[("a", "worst_ftf_rho"), "ci_high"] > 60
    assert agg.loc[("a", "gpu_utilization"), "ci_low"] == 0.0
    assert (agg.xs("gpu_utilization", level="metric")["ci_high"] <= 1.0).all()
    d = paired_differences(cells, "a").set_index("metric")
    assert (d.loc["gpu_utilization", "ci_low"], d.loc["gpu_utilization", "ci_high"]) == (-1.0, 1.0)


def test_sweep_table_shows_clipped_intervals_and_the_paired_difference():
    """At 100 columns: each mean with its interval as clipped (never a ``±`` reaching below 0),
    and after mean JCT the per-seed paired difference against the baseline. Mutants caught:
    the ``mean ±half`` format; the paired column left out."""
    from rich.console import Console

    from ringsched.reports import aggregate_sweep, paired_differences
    from ringsched.reports.terminal import sweep_table

    a = [100.0, 3600.0, 30000.0]
    cells = pd.DataFrame({"cluster": "c", "load": 1.0, "seed": [0, 1, 2] * 2, "policy": ["a"] * 3 + ["b"] * 3,
                          "mean_jct_s": a + [x + 360.0 for x in a], "p99_jct_s": a + a})
    console = Console(width=100, record=True, color_system=None)
    console.print(sweep_table(aggregate_sweep(cells), "t", 100, paired=paired_differences(cells, "a"),
                              baseline="a"))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 100 and "±" not in text
    assert "vs a h" in text and "baseline" in text
    row_b = next(line for line in text.splitlines() if line.split()[2:3] == ["b"])
    assert "3.22 [0.00, 14.50]" in row_b and "0.10 [0.10, 0.10]" in row_b  # (b - a) = 360 s on every seed


def test_t_interval_with_one_seed_is_a_point():
    from ringsched.reports import t_interval

    assert t_interval(np.array([3.0])) == (3.0, 3.0, 3.0, 1)
    m, lo, hi, n = t_interval(np.array([1.0, 2.0, 3.0, np.nan]))
    assert (m, n) == (2.0, 3) and lo < 2.0 < hi


def test_bad_sweep_input_is_one_line_exit_2(cli, tmp_path):
    code, _, err = cli("sweep", "--trace", "synthetic:10", "--loads", "0,1", "--out", tmp_path)
    assert code == 2 and "load" in err
    code, _, err = cli("sweep", "--trace", "synthetic:10", "--engine", "spark", "--out", tmp_path)
    assert code == 2 and "ray" in err
    code, _, err = cli("sweep", "--trace", "synthetic:10", "--address", "auto", "--out", tmp_path)
    assert code == 2 and "--engine ray" in err


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_ray_engine_on_a_local_ray_instance_gives_the_local_results(local_run, tmp_path):
    out = tmp_path / "ray"
    r = sweep(out, "--engine", "ray", "--address", "local", "--workers", "2")
    assert "engine ray" in r.stderr
    ray_cells = pd.read_csv(out / "cells.csv").sort_values(KEYS).reset_index(drop=True)
    local_cells = pd.read_csv(local_run[0] / "cells.csv").sort_values(KEYS).reset_index(drop=True)
    pd.testing.assert_frame_equal(ray_cells[KEYS + METRICS], local_cells[KEYS + METRICS])
    assert (out / "report.html").exists() and (out / "sweep.csv").exists()
