"""Trace loaders (ringsched.traces): hand-written files for every format, valid and malformed,
the filters, and the synthetic generator (the real traces of ../shared: test_traces_real.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SHARED
from ringsched.errors import InputError
from ringsched.perfmodel.catalogue import profile_names
from ringsched.traces import FORMATS, load_trace, parse_window, schema
from ringsched.traces import pollux

TRACES = SHARED / "traces"
PHILLY = TRACES / "philly-pollux" / "philly.csv"
ITP = TRACES / "microsoft-itp-elasticflow"
GAVEL = TRACES / "gavel-philly"
ALIBABA = TRACES / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"
EF_PHILLY = TRACES / "elasticflow-philly" / "philly_103959.csv"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def error(spec, **kw) -> InputError:
    with pytest.raises(InputError) as e:
        load_trace(spec, **kw)
    line = e.value.line()
    assert "\n" not in line
    return e.value


def assert_schema(df):
    assert list(df.columns) == list(schema.COLUMNS)
    again = schema.validate(df, "check")
    pd.testing.assert_frame_equal(again, df.reset_index(drop=True), check_like=False)
    assert df["arrival_s"].iloc[0] == 0
    assert df["arrival_s"].is_monotonic_increasing
    models = set(df["model"]) - {""}
    assert models <= set(profile_names()), models - set(profile_names())


# --------------------------------------------------------------------------- philly

PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def test_philly_small(tmp_path):
    p = write(tmp_path, "philly.csv", PHILLY_HEAD +
              "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
              "2017-10-09 06:13:03,2951.0,4,11804.0,6214e9\n"
              "2017-10-09 06:13:04,0,1,0,6214e9\n"          # zero duration: dropped
              "2017-10-09 08:00:00,10,2,20,103959\n")        # numeric-looking VC stays text
    df = load_trace(f"philly:{p}")
    assert_schema(df)
    assert list(df["job_id"]) == ["philly-3", "philly-2", "philly-5"]
    assert list(df["arrival_s"]) == [0.0, 2932.0, 6417.0]
    assert list(df["num_gpus"]) == [4, 1, 2]
    assert list(df["tenant"]) == ["6214e9", "11cb48", "103959"]
    assert df["work_samples"].isna().all() and (df["local_bsz"] == 0).all()
    assert df.attrs["dropped"] == 1 and df.attrs["dropped_reasons"] == {"zero duration": 1}
    assert df.attrs["trace"] == f"philly:{p}" and df.attrs["format"] == "philly"


@pytest.mark.parametrize("body,row,field,words", [
    ("2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 06:13:03,abc,1,1,b\n", 3, "duration", "finite number"),
    ("2017-10-09 07:01:55,66.0,1,66.0,a\n2017-13-09 06:13:03,1,1,1,b\n", 3, "timestamp", "unparsable"),
    ("yesterday,66.0,1,66.0,a\n", 2, "timestamp", "unparsable"),
    (",66.0,1,66.0,a\n", 2, "timestamp", "empty"),
    ("2017-10-09 07:01:55,66.0,0,66.0,a\n", 2, "num_gpus", "1..65,536"),
    ("2017-10-09 07:01:55,66.0,1.5,66.0,a\n", 2, "num_gpus", "whole"),
    ("2017-10-09 07:01:55,,1,66.0,a\n", 2, "duration", "empty"),
    ("2017-10-09 07:01:55,-5,1,66.0,a\n", 2, "duration", "[0, 1e+09] s"),
    ("2017-10-09 07:01:55,nan,1,66.0,a\n", 2, "duration", "finite"),
    ("2017-10-09 07:01:55,inf,1,66.0,a\n", 2, "duration", "finite"),
    ("2017-10-09 07:01:55,1,1,1,a\n2017-10-09 07:01:55,1,1,1,a,extra\n", 3, None, "readable CSV"),
    ("2017-10-09 07:01:55,1,1,1,a,7\n2017-10-09 07:01:55,1,1,1,a,8\n", 2, None, "more fields than the header"),
])
def test_philly_malformed(tmp_path, body, row, field, words):
    p = write(tmp_path, "philly.csv", PHILLY_HEAD + body)
    e = error(f"philly:{p}")
    assert (e.file, e.row, e.field) == (str(p), row, field)
    assert words in e.message


def test_philly_missing_things(tmp_path):
    p = write(tmp_path, "p.csv", "timestamp,duration,num_gpu\n2017-10-09 07:01:55,1,1\n")
    e = error(f"philly:{p}")
    assert (e.row, e.field) == (1, "num_gpus") and "missing column" in e.message
    e = error(f"philly:{tmp_path / 'nope.csv'}")
    assert e.file == str(tmp_path / "nope.csv") and "no such file" in e.message
    e = error(f"philly:{tmp_path}")
    assert "folder" in e.message
    p = write(tmp_path, "empty.csv", "")
    assert "empty" in error(f"philly:{p}").message
    p = write(tmp_path, "head.csv", PHILLY_HEAD)
    assert "no data rows" in error(f"philly:{p}").message
    p = tmp_path / "bin.csv"
    p.write_bytes(b"\x00\xff\xfe\x01garbage\x00")
    assert error(f"philly:{p}").file == str(p)
    p = write(tmp_path, "zero.csv", PHILLY_HEAD + "2017-10-09 07:01:55,0,1,0,a\n")
    e = error(f"philly:{p}")
    assert "no usable jobs" in e.message and "zero duration" in e.message


cell = st.one_of(st.sampled_from(["1", "0", "-1", "2.5", "x", "", "nan", "inf", "1e9", "2017-10-09 07:01:55",
                                  "2017-02-30 00:00:00", "6214e9"]),
                 st.text(alphabet="0123456789.-:e, \"", max_size=8))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(cell, min_size=4, max_size=6), min_size=1, max_size=5))
def test_philly_garbage_never_crashes(tmp_path_factory, rows):
    p = tmp_path_factory.mktemp("g") / "philly.csv"
    p.write_text(PHILLY_HEAD + "\n".join(",".join(r) for r in rows) + "\n")
    try:
        df = load_trace(f"philly:{p}")
    except InputError as e:
        assert str(p) in e.line() and "\n" not in e.line()
        return
    assert_schema(df)


# --------------------------------------------------------------------------- pollux

POLLUX_HEAD = "name,time,application,num_replicas,batch_size\n"


def test_pollux_small(tmp_path):
    p = write(tmp_path, "workload-1.csv", POLLUX_HEAD +
              "cifar10-0,107,cifar10,6,2048\n"
              "bert-1,110,bert,6,384\n"
              "ncf-2,300,ncf,1,32768\n"
              "yolo-3,200,yolov3,4,2\n")
    df = load_trace(f"pollux:{p}")
    assert_schema(df)
    assert list(df["job_id"]) == ["cifar10-0", "bert-1", "yolo-3", "ncf-2"]
    assert list(df["arrival_s"]) == [0, 3, 93, 193]
    assert list(df["model"]) == ["resnet18_cifar10", "bert_base", "yolov3", "ncf"]
    assert list(df["local_bsz"]) == [341, 64, 1, 32768]
    assert df["duration_s"].isna().all()
    assert pollux.WORK_SAMPLES["cifar10"] == 5_000_052
    # work at the job's own batch: M0-samples over the statistical efficiency, recomputed from
    # its definition E_e(M) = (phi_e + M0) / (phi_e + M) (cifar10 at 6 x 341 = 2,046 needs ~1.37x)
    from ringsched.perfmodel.efficiency import noise_scale

    def at_batch(app, model, batch):
        ns = noise_scale(model)
        phi = ns.phi_at([batch])[0]
        return pollux.WORK_SAMPLES[app] * float(np.mean((phi + batch) / (phi + ns.ref_batch)))

    want = [at_batch("cifar10", "resnet18_cifar10", 2046), at_batch("bert", "bert_base", 384),
            at_batch("yolov3", "yolov3", 4), at_batch("ncf", "ncf", 32768)]
    assert list(df["work_samples"]) == pytest.approx(want, rel=1e-12)
    assert 1.3 < want[0] / pollux.WORK_SAMPLES["cifar10"] < 1.45
    assert want[2] < pollux.WORK_SAMPLES["yolov3"]  # below M0 = 8 a sample is worth more


@pytest.mark.parametrize("body,row,field,words", [
    ("a,1,cifar10,6,2048\nb,2,mnist,1,1\n", 3, "application", "unknown application"),
    ("a,1,cifar10,0,2048\n", 2, "num_replicas", "1..65,536"),
    ("a,1,cifar10,2,x\n", 2, "batch_size", "whole number"),
    ("a,-1,cifar10,2,64\n", 2, "time", "[0, 1e+09] s"),
    ("a,1,cifar10,2,64\na,2,ncf,1,64\n", 3, "name", "duplicate"),
    (",1,cifar10,2,64\n", 2, "name", "empty"),
])
def test_pollux_malformed(tmp_path, body, row, field, words):
    p = write(tmp_path, "w.csv", POLLUX_HEAD + body)
    e = error(f"pollux:{p}")
    assert (e.file, e.row, e.field) == (str(p), row, field) and words in e.message


# --------------------------------------------------------------------------- itp / elasticflow

ITP_RAW = "job_id,submission_time,duration,num_gpu\n"
ITP_EF = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"


def test_itp_file_and_folder(tmp_path):
    d = tmp_path / "raw-traces"
    d.mkdir()
    write(d, "cluster01.csv", ITP_RAW + "a,100,700,1\nb,160,800,8\n")
    write(d, "cluster02.csv", ITP_RAW + "c,50,600,2\nd,130,0,1\n")   # d: zero duration, dropped
    write(d, "195job.csv", ITP_RAW + "a,100,700,1\n")                # not a cluster file: skipped
    one = load_trace(f"itp:{d / 'cluster01.csv'}")
    assert_schema(one)
    assert list(one["arrival_s"]) == [0, 60] and set(one["tenant"]) == {"cluster01"}
    both = load_trace(f"itp:{d}")
    assert_schema(both)
    assert list(both["job_id"]) == ["c", "a", "b"] and list(both["arrival_s"]) == [0, 50, 110]
    assert both.attrs["dropped"] == 1
    picked = load_trace(f"itp:{d}", vc="cluster01")
    pd.testing.assert_frame_equal(picked, one)
    # the dataset folder (holding raw-traces/) reads raw-traces/
    assert len(load_trace(f"itp:{tmp_path}")) == 3
    # window is on the folder's clock (first submission of all files), before the vc shift
    w = load_trace(f"itp:{d}", vc="cluster01", window=(100, 200))
    assert list(w["job_id"]) == ["b"] and list(w["arrival_s"]) == [0]


def test_itp_elasticflow_form(tmp_path):
    p = write(tmp_path, "cluster04.csv", ITP_EF +
              "x,10,100,inception3,500,64,16,288\n"
              "y,20,100,gpt2,900,32,64,300\n"
              "z,30,100,bert,900,128,1,300\n")
    df = load_trace(f"itp:{p}")
    assert_schema(df)
    assert list(df["model"]) == ["inception_v3", "gpt2_small", "bert_base"]
    assert list(df["local_bsz"]) == [4, 1, 128]
    assert list(df["duration_s"]) == [288, 300, 300] and df.attrs["itp_form"] == "elasticflow"
    # the elasticflow: loader reads the same file the same way
    ef = load_trace(f"elasticflow:{p}")
    pd.testing.assert_frame_equal(ef[list(schema.COLUMNS)], df[list(schema.COLUMNS)])


def test_itp_malformed(tmp_path):
    p = write(tmp_path, "cluster01.csv", ITP_RAW + "a,100,700,1\nb,x,800,8\n")
    e = error(f"itp:{p}")
    assert (e.file, e.row, e.field) == (str(p), 3, "submission_time")
    p = write(tmp_path, "cluster02.csv", "job_id,submission_time,num_gpu\na,1,1\n")
    e = error(f"itp:{p}")
    assert (e.row, e.field) == (1, "duration")
    d = tmp_path / "dup"
    d.mkdir()
    write(d, "cluster01.csv", ITP_RAW + "a,100,700,1\n")
    f2 = write(d, "cluster02.csv", ITP_RAW + "b,100,700,1\na,5,700,1\n")
    e = error(f"itp:{d}")
    assert (e.file, e.row, e.field) == (str(f2), 3, "job_id") and "duplicate" in e.message
    e = error(f"itp:{tmp_path / 'missing'}")
    assert "no such file" in e.message
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no ITP CSV files" in error(f"itp:{empty}").message
    p = write(tmp_path, "cluster03.csv", ITP_EF + "x,10,100,alexnet,500,64,16,288\n")
    e = error(f"itp:{p}")
    assert (e.row, e.field) == (2, "model_name") and "unknown model_name" in e.message


def test_elasticflow_philly_form(tmp_path):
    head = "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,duration,iteration\n"
    p = write(tmp_path, "philly_103959.csv", head +
              "0,0,10,vgg16,100,256,1,976,976,10\n"
              "1,219,10,resnet50,100,64,4,1792,1792,10\n")
    df = load_trace(f"elasticflow:{p}")
    assert_schema(df)
    assert list(df["tenant"]) == ["103959", "103959"]
    assert list(df["local_bsz"]) == [256, 16] and list(df["model"]) == ["vgg16", "resnet50"]
    assert list(df["job_id"]) == ["0", "1"]
    p = write(tmp_path, "philly_x.csv", head.replace("submit_time", "when") + "0,0,10,vgg16,100,256,1,976,976,10\n")
    e = error(f"elasticflow:{p}")
    assert (e.row, e.field) == (1, "submit_time")
    p = write(tmp_path, "philly_y.csv", head + "0,0,10,vgg16,100,0,1,976,976,10\n")
    assert (error(f"elasticflow:{p}").field, error(f"elasticflow:{p}").row) == ("batch_size", 2)


# --------------------------------------------------------------------------- gavel

def gavel_line(job_type, steps, arrival, sf):
    return f"{job_type}\tcd %s/x && python3 train.py --b 64\t--num_steps\t1\t{steps}\t{arrival}\t{sf}\n"


def test_gavel_file_and_folder(tmp_path):
    d = tmp_path / "seed=0"
    d.mkdir()
    write(d, "ee9e8c.trace", gavel_line("ResNet-50 (batch size 64)", 1000, "0.000000", 4) +
          gavel_line("CycleGAN", 50, "10.5", 1) + gavel_line("A3C", 7, "20", 1))
    write(d, "103959.trace", gavel_line("LM (batch size 20)", 100, "5", 2))
    df = load_trace(f"gavel:{d / 'ee9e8c.trace'}")
    assert_schema(df)
    assert list(df["job_id"]) == ["ee9e8c-1", "ee9e8c-2", "ee9e8c-3"]
    assert list(df["model"]) == ["resnet50", "resnet50", "mobilenet_v2"]
    assert list(df["local_bsz"]) == [64, 1, 1]
    assert list(df["work_samples"]) == [64_000, 50, 7] and df["duration_s"].isna().all()
    assert list(df["num_gpus"]) == [4, 1, 1] and set(df["tenant"]) == {"ee9e8c"}
    both = load_trace(f"gavel:{d}")
    assert len(both) == 4 and set(both["tenant"]) == {"ee9e8c", "103959"}
    pd.testing.assert_frame_equal(load_trace(f"gavel:{d}", vc="ee9e8c"), df)
    e = error(f"gavel:{d}", vc="nope")
    assert e.field == "vc" and "103959 (1)" in e.message and "ee9e8c (3)" in e.message


@pytest.mark.parametrize("text,row,field,words", [
    (gavel_line("ResNet-50 (batch size 64)", 10, 0, 1) + gavel_line("GAN", 10, 1, 1), 2, "job_type", "unknown Gavel job type"),
    (gavel_line("ResNet-50", 10, 0, 1), 1, "job_type", "unknown Gavel job type"),
    (gavel_line("LM (batch size 5)", 0, 0, 1), 1, "total_steps", "1..1e+15"),
    (gavel_line("LM (batch size 5)", 10, -3, 1), 1, "arrival_time", "[0, 1e+09] s"),
    (gavel_line("LM (batch size 5)", 10, 1, 0), 1, "scale_factor", "1..65,536"),
    ("LM (batch size 5)\tcmd\t-n\t1\t10\t0\n", 1, "scale_factor", "7 tab-separated fields"),
    (gavel_line("LM (batch size 5)", 10, 0, 1) + "a\tb\tc\td\te\tf\tg\th\n", 2, None, "readable"),
])
def test_gavel_malformed(tmp_path, text, row, field, words):
    p = write(tmp_path, "vc.trace", text)
    e = error(f"gavel:{p}")
    assert (e.file, e.row, e.field) == (str(p), row, field) and words in e.message


# --------------------------------------------------------------------------- alibaba

ALI_HEAD = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            "deletion_time,scheduled_time\n")


def test_alibaba_small(tmp_path):
    p = write(tmp_path, "pods.csv", ALI_HEAD +
              "p0,12000,16384,1,1000,,LS,Running,100,1000,150\n"
              "p1,6000,12288,1,460,,LS,Running,200,500,200\n"      # fractional -> 1 GPU
              "p2,6000,12288,0,0,,BE,Running,300,900,300\n"        # CPU-only: dropped
              "p3,6000,12288,2,1000,,LS,Pending,400,900,\n"        # never scheduled: dropped
              "p4,6000,12288,8,1000,,LS,Failed,450,460,460\n"      # zero duration: dropped
              "p5,6000,12288,4,1000,,LS,Succeeded,500,900,600\n")
    df = load_trace(f"alibaba:{p}")
    assert_schema(df)
    assert list(df["job_id"]) == ["p0", "p1", "p5"]
    assert list(df["arrival_s"]) == [0, 100, 400]
    assert list(df["duration_s"]) == [850, 300, 300] and list(df["num_gpus"]) == [1, 1, 4]
    assert df.attrs["dropped_reasons"] == {"no GPU": 1, "never scheduled": 1, "zero duration": 1}
    assert df.attrs["fractional_gpu_pods"] == 1


@pytest.mark.parametrize("body,row,field,words", [
    ("p0,1,1,1,1000,,LS,Running,10,50,60\n", 2, "deletion_time", "before scheduled_time"),
    ("p0,1,1,1,1000,,LS,Running,100,500,60\n", 2, "scheduled_time", "before creation_time"),
    ("p0,1,1,-1,1000,,LS,Running,100,500,160\n", 2, "num_gpu", "0..65,536"),
    ("p0,1,1,1,1000,,LS,Running,,500,160\n", 2, "creation_time", "empty"),
    ("p0,1,1,1,1000,,LS,Running,1,500,160\np0,1,1,1,1000,,LS,Running,1,500,160\n", 3, "name", "duplicate"),
])
def test_alibaba_malformed(tmp_path, body, row, field, words):
    p = write(tmp_path, "pods.csv", ALI_HEAD + body)
    e = error(f"alibaba:{p}")
    assert (e.file, e.row, e.field) == (str(p), row, field) and words in e.message


# --------------------------------------------------------------------------- spec, filters

def test_spec_errors(tmp_path):
    assert error("nope:x").field == "trace"
    assert "use one of" in error("philly.csv").message
    assert error("philly:").field == "trace"
    assert error("synthetic:abc").field == "trace"
    assert "synthetic: unknown option 'speed'" in error("synthetic:10,speed=3").message
    assert "not key=value" in error("synthetic:10,rate").message
    assert "not both" in error("synthetic:10,rate_per_h=3,load=0.5").message
    assert "diurnal" in error("synthetic:10,diurnal=1").message
    assert "tenants" in error("synthetic:10,tenants=2.5").message
    assert error("synthetic:0").field == "trace"
    assert error("synthetic:10", limit=0).field == "limit"
    assert error("synthetic:10", window=(5, 5)).field == "window"
    assert set(FORMATS) == {"synthetic", "demo", "philly", "pollux", "itp", "gavel", "elasticflow", "alibaba"}


def test_parse_window():
    assert parse_window("0:3600") == (0.0, 3600.0)
    assert parse_window("1h:2d") == (3600.0, 172800.0)
    assert parse_window(":10") == (0.0, 10.0)
    assert parse_window("10:") == (10.0, math.inf)
    for bad in ["10", "5:1", "a:b", "1:2:3", "-1:5", "3:3"]:
        with pytest.raises(InputError) as e:
            parse_window(bad)
        assert e.value.field == "window"


@pytest.mark.parametrize("window,bound", [("-5:10", "-5"), ("0:nan", "nan"), ("0:inf", "inf"), ("-1h:", "-1h"),
                                          ("x:5", "x")])
def test_a_negative_or_infinite_window_bound_says_what_a_bound_must_be(cli, window, bound):
    """``--window -5:10`` (or ``0:nan``, ``0:inf``) is one line saying the bound must be a finite
    time >= 0, exit 2. Mutant caught: the old wording ('-5' is not a time), which a negative or
    infinite number of seconds is."""
    code, out, err = cli("simulate", "--trace", "demo:50", "--cluster", "4x8", "--window", window)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"window bound '{bound}' must be a finite time >= 0 (seconds, or with s/m/h/d)" in err


def test_filters_order_and_rebase(tmp_path):

    p = write(tmp_path, "philly.csv", PHILLY_HEAD +
              "2017-10-09 00:00:00,10,1,10,A\n"
              "2017-10-09 00:01:00,10,1,10,B\n"
              "2017-10-09 00:02:00,10,1,10,A\n"
              "2017-10-09 00:03:00,10,1,10,B\n"
              "2017-10-09 00:04:00,10,1,10,A\n")
    full = load_trace(f"philly:{p}")
    assert list(full["arrival_s"]) == [0, 60, 120, 180, 240]
    b = load_trace(f"philly:{p}", vc="B")
    assert list(b["arrival_s"]) == [0, 120] and list(b["job_id"]) == ["philly-3", "philly-5"]
    # window counts from the trace's first submission (A's at 0), not B's
    w = load_trace(f"philly:{p}", vc="B", window=(100, 240))
    assert list(w["job_id"]) == ["philly-5"] and list(w["arrival_s"]) == [0]
    lim = load_trace(f"philly:{p}", vc="A", window=(60, 1e9), limit=1)
    assert list(lim["job_id"]) == ["philly-4"] and lim["arrival_s"].iloc[0] == 0
    assert lim.attrs["filters"] == {"vc": "A", "window": (60.0, 1e9), "limit": 1}
    assert lim.attrs["rows_loaded"] == 5
    e = error(f"philly:{p}", vc="C")
    assert e.field == "vc" and "A (3), B (2)" in e.message
    e = error(f"philly:{p}", window=(1000, 2000))
    assert e.field == "window" and "no jobs" in e.message
    p = write(tmp_path, "pods.csv", ALI_HEAD + "p0,1,1,1,1000,,LS,Running,1,500,160\n")
    assert "no tenants" in error(f"alibaba:{p}", vc="x").message



@pytest.mark.parametrize("fmt,name,text,row,field,words", [
    ("philly", "p.csv", PHILLY_HEAD + "2017-10-09 07:01:55,1e308,1,66.0,a\n", 2, "duration", "[0, 1e+09] s"),
    ("philly", "p.csv", "timestamp,duration,num_gpus,gpu_time,cluster,duration\n2017-10-09 07:01:55,5,1,5,a,6\n",
     1, "duration", "appears twice"),
    ("pollux", "w.csv", "name,time,application,num_replicas,batch_size\na,1e300,ncf,1,256\n", 2, "time", "1e+09"),
    ("pollux", "w.csv", "name,time,application,num_replicas,batch_size\na,0,ncf,1,9223372036854775808\n", 2,
     "batch_size", "1..1e+09"),
    ("pollux", "w.csv", "name,time,application,num_replicas,batch_size\na,0,ncf,1,100000000\n", 2,
     "batch_size", "per-GPU batch"),
    ("alibaba", "a.csv", "name,num_gpu,gpu_milli,creation_time,scheduled_time,deletion_time\np,1,5000,0,1,5\n", 2,
     "gpu_milli", "[0, 1,000]"),
    ("gavel", "v.trace", "ResNet-50 (batch size 0)\tc\ta\t1\t10\t0\t1\n", 1, "job_type", "batch size"),
    ("gavel", "v.trace", "ResNet-50 (batch size 64)\tc\ta\t1\t100000000000000\t0\t1\n", 1, "total_steps",
     "total_steps x batch"),
])
def test_numbers_out_of_bounds_name_file_row_field(tmp_path, fmt, name, text, row, field, words):
    p = write(tmp_path, name, text)
    e = error(f"{fmt}:{p}")
    assert (e.file, e.row, e.field) == (str(p), row, field)
    assert words in e.message


def test_schema_check_names_file_rows_1_based():
    df = pd.DataFrame({"job_id": ["a", "b"], "arrival_s": [0.0, 5.0], "num_gpus": [1, 0], "duration_s": [1.0, 2.0],
                       "work_samples": [np.nan, np.nan], "tenant": "", "model": "", "local_bsz": 0})
    with pytest.raises(InputError) as e:
        schema.validate(df, "f.csv", rows=np.array([7, 9]))
    assert (e.value.row, e.value.field) == (9, "num_gpus")
    with pytest.raises(InputError) as e:
        schema.validate(df, "f.csv")
    assert e.value.row == 2  # by position, counting from 1
    df2 = df.assign(num_gpus=[1, 1], arrival_s=[0.0, 1e300])
    with pytest.raises(InputError) as e:
        schema.validate(df2, "f.csv")
    assert (e.value.row, e.value.field) == (2, "arrival_s")


def test_rows_in_errors_are_file_lines_blank_lines_counted(tmp_path):
    p = write(tmp_path, "p.csv", PHILLY_HEAD + "\n2017-10-09 07:01:55,5,1,5,a\n\n\n2017-10-09 07:01:55,x,1,5,a\n")
    e = error(f"philly:{p}")
    assert (e.row, e.field) == (6, "duration")


OK_ROW = "2017-10-09 07:01:55,5,1,5,a\n"


@pytest.mark.parametrize("body,row,field", [
    (OK_ROW + '2017-10-09 07:01:56,5,1,5,"a\n' + OK_ROW, 3, "cluster"),
    ("\n\n" + OK_ROW + "\n" + '2017-10-09 07:01:56,5,1,5,"a\n\n' + OK_ROW, 6, "cluster"),  # blank lines
    ('2017-10-09 07:01:55,5,1,5,"two\n\nlines"\n' + OK_ROW + '"2017-10-09 07:01:56,5,1,5,a\n' + OK_ROW, 6,
     "timestamp"),  # a closed field over three lines, then the open one
    ('2017-10-09 07:01:55,5,1,5,"say ""hi"""\n' + '2017-10-09 07:01:56,5,1,5, "a ""b""\n' + OK_ROW, 3,
     "cluster"),  # quotes doubled inside quoted fields; a space before the opening quote
    ('2017-10-09 07:01:55,5,1,5,a"b\n' + '2017-10-09 07:01:56,"5,1,5,a\n', 3, "duration"),  # a"b: text
])
def test_an_unclosed_quote_is_named_by_the_line_and_field_where_it_opens(tmp_path, body, row, field):
    """A quote never closed swallows the rest of the file; the error names the file's line where
    it opens and its field, blank lines and closed multi-line fields counted as lines. Mutant
    caught: the parser's own message (no row; its "row N" counts records from 0, blank lines
    skipped), and that row + 1 mapped by physical_line (wrong after a closed multi-line field)."""
    p = write(tmp_path, "q.csv", PHILLY_HEAD + body)
    e = error(f"philly:{p}")
    assert (e.file, e.row, e.field) == (str(p), row, field)
    assert "never closed" in e.message


@pytest.mark.parametrize("spec,what", [("demo:10,load=1e-300", "load"), ("demo:10,load=1,load=2", "twice"),
                                       ("demo:10,time_scale=nan", "time_scale"), ("demo:10,bogus=1", "bogus"),
                                       ("demo:0", "number of jobs")])
def test_demo_options_are_bounded(spec, what):
    """The demo shape's options go through the same bounds as synthetic's (issue 20).
    Mutant caught: parse_demo_options without LIMITS (load=1e-300 then hangs the arrival draw)."""
    from ringsched.errors import InputError
    from ringsched.traces import load_trace

    with pytest.raises(InputError, match=what):
        load_trace(spec, seed=0)
