"""The demo workload (``demo:N``, traces/synthetic.py): seeded, shaped like Philly's busy
periods, and a demo in which scheduling visibly matters (issue 19's targets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ringsched.traces import load_trace
from ringsched.traces import synthetic as syn


def test_same_seed_same_bytes_other_seed_other_jobs():
    a, b = load_trace("demo:300", seed=4), load_trace("demo:300", seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not load_trace("demo:300", seed=5)["duration_s"].equals(a["duration_s"])


def test_shape_follows_the_busy_periods():
    """Sizes from the busy windows' counts, durations growing with size, and the offered load
    the formula promises (sampled over 40,000 jobs)."""
    f = load_trace("demo:40000,time_scale=1", seed=1)
    share_multi = (f["num_gpus"] > 1).mean()
    expect = 1 - syn.BUSY_GPU_COUNTS[1] / sum(syn.BUSY_GPU_COUNTS.values())
    assert share_multi == pytest.approx(expect, abs=0.01)
    med = {k: f.loc[f["num_gpus"].between(lo, hi), "duration_s"].median()
           for k, (lo, hi) in {"1": (1, 1), "2-4": (2, 4), "8+": (8, 128)}.items()}
    assert med["1"] == pytest.approx(1_844, rel=0.05) and med["8+"] > 30 * med["1"] and med["8+"] > med["2-4"]
    span_s = f["arrival_s"].max()
    offered = float((f["num_gpus"] * f["duration_s"]).sum()) / span_s / syn.CLUSTER_GPUS
    assert offered == pytest.approx(syn.DEMO_DEFAULTS["load"], rel=0.15)


def test_time_scale_divides_durations_and_arrivals_alike():
    a, b = load_trace("demo:200,time_scale=1", seed=2), load_trace("demo:200,time_scale=4", seed=2)
    assert np.allclose(b["arrival_s"], a["arrival_s"] / 4)
    assert np.allclose(b["duration_s"], np.maximum(np.round(a["duration_s"] / 4), 1.0), atol=1.0)


def test_bad_demo_options_are_input_errors():
    from ringsched.errors import InputError

    for spec in ("demo:x", "demo:10,speed=2", "demo:10,load=-1", "demo:10,load=1,load=2"):
        with pytest.raises(InputError):
            load_trace(spec)


@pytest.mark.slow
def test_the_demo_separates_the_policies(cli, tmp_path):
    """`ringsched demo` (what `make demo` runs): best and worst mean JCT at least 1.5x apart, the
    JCT distributions and queue lengths of best and worst distinct, and the headline says so."""
    code, out, err = cli("demo", "--out", tmp_path)
    assert code == 0, err
    s = pd.read_csv(tmp_path / "summary.csv").set_index("policy")
    best, worst = s["mean_jct_s"].idxmin(), s["mean_jct_s"].idxmax()
    assert s.loc[worst, "mean_jct_s"] >= 1.5 * s.loc[best, "mean_jct_s"]
    jobs = pd.read_parquet(tmp_path / "jobs.parquet")
    jct = {p: np.sort(jobs.loc[jobs["policy"] == p, "jct_s"].dropna().to_numpy()) for p in (best, worst)}
    grid = np.quantile(np.concatenate(list(jct.values())), np.linspace(0, 1, 200))
    cdf = {p: np.searchsorted(v, grid, side="right") / v.size for p, v in jct.items()}
    assert np.abs(cdf[best] - cdf[worst]).max() > 0.2  # Kolmogorov-Smirnov distance
    tl = pd.read_parquet(tmp_path / "timeline.parquet")
    peak = tl.groupby("policy")["waiting"].max()
    assert peak[worst] > 2 * max(peak[best], 1)
    said = " ".join(out.split())  # (the sentence wraps at the terminal's width, 100 on a pipe)
    assert f"{best} has the lowest mean JCT" in said and f"than {worst}" in said
