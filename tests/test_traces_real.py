"""The real traces in ../shared, when present: row counts from their SOURCE.md, the reference
workloads of issue 4, the Pollux work constants recomputed from the curve files."""

from __future__ import annotations

import ast
import glob
import json
from functools import lru_cache

import pandas as pd
import pytest

from conftest import POLLUX, needs_shared
from ringsched.perfmodel.catalogue import profile_names
from ringsched.traces import gavel, load_trace, pollux, synthetic
from test_traces import ALIBABA, EF_PHILLY, GAVEL, ITP, PHILLY, TRACES


@lru_cache(maxsize=None)
def real(spec: str, vc: str | None = None) -> pd.DataFrame:
    return load_trace(spec, vc=vc)


@needs_shared(TRACES)
def test_real_philly():
    df = real(f"philly:{PHILLY}")
    assert len(df) == 82_247 and df.attrs["dropped"] == 0
    assert df["tenant"].nunique() == 15
    counts = df["num_gpus"].value_counts().to_dict()
    for g, c in synthetic.GPU_COUNTS.items():     # the generator's constants are the trace's
        assert counts[g] == c
    assert df["duration_s"].median() == synthetic.DURATION_P50_S
    assert df["duration_s"].quantile(0.9) == pytest.approx(synthetic.DURATION_P90_S, abs=2)
    assert df["duration_s"].max() == 4_628_226
    assert df.attrs["source"] == str(PHILLY)


@needs_shared(TRACES)
def test_reference_workload_philly_ee9e8c():
    """Issue 4's 'Philly VC ee9e8c (--vc ee9e8c, 1,511 jobs)' is philly.csv's cluster ee9e8c."""
    df = real(f"philly:{PHILLY}", "ee9e8c")
    assert len(df) == 1_511 and set(df["tenant"]) == {"ee9e8c"}
    assert df["arrival_s"].iloc[0] == 0
    # the Gavel file of the same VC is capped at 2,000 (from the raw Philly log), not 1,511
    assert len(real(f"gavel:{GAVEL / 'seed=0'}", "ee9e8c")) == 2_000


@needs_shared(TRACES)
def test_reference_workload_itp_cluster04():
    """Issue 4's 'ITP cluster04 (15,802 jobs)': the raw-traces folder with --vc cluster04, or
    the file; the ElasticFlow form has the same jobs."""
    a = real(f"itp:{ITP / 'raw-traces'}", "cluster04")
    b = real(f"itp:{ITP / 'raw-traces' / 'cluster04.csv'}")
    assert len(a) == 15_802
    pd.testing.assert_frame_equal(a, b)
    ef = real(f"itp:{ITP / 'elasticflow-traces'}", "cluster04")
    cols = ["job_id", "arrival_s", "num_gpus", "duration_s", "tenant"]
    pd.testing.assert_frame_equal(ef[cols], a[cols])
    assert (ef["model"] != "").all() and (ef["local_bsz"] >= 1).all()


@needs_shared(TRACES)
def test_real_itp_counts():
    expect = {"cluster01": 1_595, "cluster02": 5_778, "cluster03": 3_011, "cluster04": 15_802,
              "cluster05": 3_629, "cluster06": 2_396, "cluster07": 12_699, "cluster08": 13_047,
              "cluster09": 11_134, "cluster10": 260}
    for form in ("raw-traces", "elasticflow-traces"):
        df = real(f"itp:{ITP / form}")
        assert len(df) == 69_351 and df["tenant"].value_counts().to_dict() == expect
        assert df["duration_s"].min() >= 600
    assert len(real(f"elasticflow:{ITP / 'elasticflow-traces' / '195job.csv'}")) == 195


@needs_shared(TRACES)
def test_real_gavel():
    df = real(f"gavel:{GAVEL / 'seed=0'}")
    assert len(df) == 15_264 and df["tenant"].nunique() == 15
    assert df["num_gpus"].value_counts().to_dict() == {1: 10_480, 4: 2_044, 8: 1_916, 2: 463, 16: 255, 32: 91,
                                                       12: 6, 24: 5, 7: 2, 64: 1, 20: 1}
    assert df["duration_s"].isna().all() and (df["work_samples"] > 0).all()
    # every job type of Gavel's throughput table has a catalogue mapping
    table = json.loads((GAVEL / "simulation_throughputs.json").read_text())
    types = {ast.literal_eval(k)[0] for k in table["v100"]}  # keys are "('<job type>', scale_factor)"
    assert len(types) == 26
    for t in types:
        m = gavel.job_type_model(t)
        assert m is not None and m[0] in profile_names(), t


@needs_shared(TRACES)
def test_real_elasticflow_philly():
    df = real(f"elasticflow:{EF_PHILLY}")
    assert len(df) == 876 and set(df["tenant"]) == {"103959"}
    assert df["num_gpus"].value_counts().to_dict() == {1: 513, 4: 330, 2: 33}
    assert df["duration_s"].min() == 602 and df["duration_s"].max() == 1_792_395
    assert df["model"].value_counts().to_dict() == {"resnet50": 214, "vgg16": 186, "gpt2_small": 126,
                                                    "bert_base": 122, "deepspeech2": 118, "inception_v3": 110}


@needs_shared(TRACES)
def test_real_alibaba():
    df = real(f"alibaba:{ALIBABA}")
    assert df.attrs["dropped_reasons"] == {"no GPU": 1_088, "never scheduled": 861}
    assert len(df) == 8_152 - 1_088 - 861 == 6_203
    assert df["num_gpus"].value_counts().to_dict() == {1: 6_129, 8: 44, 4: 15, 2: 15}
    assert df.attrs["fractional_gpu_pods"] == 2_573


@needs_shared(TRACES)
def test_real_pollux_workloads():
    files = sorted(glob.glob(str(TRACES / "philly-pollux" / "workloads" / "workload-*.csv")))
    assert len(files) == 8
    for f in files:
        df = real(f"pollux:{f}")
        assert len(df) == 160 and df["work_samples"].notna().all()


@needs_shared(POLLUX)
def test_pollux_work_constants_from_curves():
    for app in ("cifar10", "imagenet", "ncf", "yolov3"):
        curves = {int(p.stem.split("-")[1]): pd.read_csv(p) for p in (POLLUX / app).glob("validation-*.csv")}
        m0, epochs, progress, _ = pollux.WORK_PROVENANCE[app]
        assert min(curves) == m0
        assert min(c["progress"].iloc[epochs - 1] for c in curves.values()) == progress
        assert all(len(c) >= epochs for c in curves.values())
    # dataset size x epochs, as a sanity check on the units
    assert pollux.WORK_SAMPLES["cifar10"] == pytest.approx(50_000 * 100, rel=1e-3)
    assert pollux.WORK_SAMPLES["imagenet"] == pytest.approx(1_281_167 * 90, rel=1e-3)
    assert pollux.WORK_SAMPLES["yolov3"] == pytest.approx(16_551 * 50, rel=1e-3)
