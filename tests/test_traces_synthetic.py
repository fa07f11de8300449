"""The seeded synthetic generator (ringsched.traces.synthetic): deterministic, prefixes stable,
the default rate gives offered load 0.7, every option bounded, and a property over its options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringsched.traces import load_trace, synthetic
from test_traces import assert_schema, error


def test_synthetic_deterministic_and_prefix():
    a = load_trace("synthetic:500,diurnal=0.5", seed=3)
    b = load_trace("synthetic:500,diurnal=0.5", seed=3)
    assert a.to_csv().encode() == b.to_csv().encode()
    assert (pd.util.hash_pandas_object(a) == pd.util.hash_pandas_object(b)).all()
    c = load_trace("synthetic:500,diurnal=0.5", seed=4)
    assert not a["arrival_s"].equals(c["arrival_s"])
    longer = load_trace("synthetic:800,diurnal=0.5", seed=3)
    pd.testing.assert_frame_equal(longer.iloc[:500].reset_index(drop=True), a)
    assert_schema(a)
    assert (a["model"] == "").all() and (a["local_bsz"] == 0).all() and a["work_samples"].isna().all()


def test_synthetic_default_rate_gives_load_07():
    # the comment's derivation: 0.7 x 128 / (1.30382 x 5,522.8 s) = 44.80 jobs/h
    assert synthetic.mean_gpus() == pytest.approx(1.30382, abs=1e-5)
    assert synthetic.mean_duration_s() == pytest.approx(5522.8, abs=0.1)
    assert synthetic.default_rate_per_h() == pytest.approx(44.80, abs=0.01)
    df = synthetic.generate(100_000, seed=1)
    span = df["arrival_s"].iloc[-1]
    rate = (len(df) - 1) / span * 3600
    assert rate == pytest.approx(44.80, rel=0.02)
    load = rate / 3600 * (df["num_gpus"] * df["duration_s"]).mean() / 128
    assert load == pytest.approx(0.7, rel=0.08)   # heavy-tailed product: loose
    d = df["duration_s"]
    assert d.median() == pytest.approx(1144, rel=0.03) and d.quantile(0.9) == pytest.approx(11266, rel=0.03)
    assert d.max() <= 604_800 and d.min() >= 1
    shares = df["tenant"].value_counts(normalize=True)
    assert shares.index[0] == "vc01" and shares.iloc[0] == pytest.approx(0.519, abs=0.01)
    assert synthetic.default_rate_per_h(load=0.35) == pytest.approx(22.40, abs=0.01)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 400), seed=st.integers(0, 2**32 - 1), diurnal=st.sampled_from([0.0, 0.3, 0.9]),
       tenants=st.integers(1, 12), rate=st.sampled_from([None, 0.5, 44.8, 5000.0]))
def test_synthetic_property(n, seed, diurnal, tenants, rate):
    spec = f"synthetic:{n},diurnal={diurnal},tenants={tenants}" + (f",rate_per_h={rate}" if rate else "")
    df = load_trace(spec, seed=seed)
    assert len(df) == n
    assert_schema(df)
    assert df["job_id"].is_unique and df["tenant"].nunique() <= tenants
    assert set(df["num_gpus"]) <= set(synthetic.GPU_COUNTS)
    assert np.isfinite(df["duration_s"]).all() and (df["duration_s"] >= 1).all()


@pytest.mark.parametrize("spec,words", [
    ("synthetic:10,load=1e-300", "load must be"), ("synthetic:5000000,rate_per_h=0.001", "arrive over"),
    ("synthetic:10,load=2,load=3", "given twice"), ("synthetic:10,,", "not key=value"),
    ("synthetic:10,max_duration_s=1e308", "max_duration_s must be"), ("synthetic:10,tenants=1.5", "whole number"),
])
def test_synthetic_options_are_bounded(spec, words):
    e = error(spec)
    assert e.field == "trace" and words in e.message
