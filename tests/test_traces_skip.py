"""--skip-bad-rows: the loaders leave out and count every bad row, in files and folders, and
still refuse a file-level problem (ringsched.traces)."""

from __future__ import annotations

import json

import pandas as pd

from ringsched.traces import load_trace
from test_traces import ITP_RAW, PHILLY_HEAD, assert_schema, error, gavel_line, write


PHILLY_BAD = (PHILLY_HEAD
              + "2017-10-09 07:01:55,66.0,1,66.0,vc1\n"       # row 2: good
              + "2017-10-09 07:02:55,abc,1,66.0,vc1\n"        # row 3: duration not a number
              + "2017-10-09 07:03:55,100,0,66.0,vc1\n"        # row 4: no GPUs
              + "not-a-date,100,1,66.0,vc1\n"                 # row 5: timestamp
              + "2017-10-09 07:05:55,-5,2,66.0,vc1\n"         # row 6: negative duration
              + "2017-10-09 07:06:55,300,2,66.0,vc1\n")       # row 7: good


def test_skip_bad_rows_leaves_out_and_counts_every_bad_row(tmp_path):
    p = write(tmp_path, "p.csv", PHILLY_BAD)
    e = error(f"philly:{p}")  # without the option: the first bad row stops the load
    assert (e.row, e.field) == (5, "timestamp")
    df = load_trace(f"philly:{p}", skip_bad_rows=True)
    assert_schema(df)
    assert list(df["duration_s"]) == [66.0, 300.0] and list(df["num_gpus"]) == [1, 2]
    assert df.attrs["bad_rows"] == 4
    ex = df.attrs["bad_row_examples"]
    # rows are named by their number in the file, also those found after others were left out
    assert ex == [f"{p}, row 3, duration: must be a finite number in [0, 1e+09] s, got 'abc'",
                  f"{p}, row 4, num_gpus: must be a whole number in 1..65,536, got 0",
                  f"{p}, row 5, timestamp: unparsable timestamp 'not-a-date' (expected YYYY-MM-DD HH:MM:SS)"]
    clean = write(tmp_path, "clean.csv", PHILLY_HEAD + PHILLY_BAD.splitlines(keepends=True)[1]
                  + PHILLY_BAD.splitlines(keepends=True)[6])
    pd.testing.assert_frame_equal(df.drop(columns="job_id"), load_trace(f"philly:{clean}").drop(columns="job_id"))
    assert load_trace(f"philly:{clean}", skip_bad_rows=True).attrs["bad_rows"] == 0


def test_skip_bad_rows_in_folders_and_headerless_files(tmp_path):
    d = tmp_path / "raw-traces"
    d.mkdir()
    write(d, "cluster01.csv", ITP_RAW + "a,100,700,1\nb,x,800,8\nc,120,5,1\n")
    write(d, "cluster02.csv", ITP_RAW + "a,50,600,2\ne,70,30,1\nd,130,40,-1\n")  # a: a repeat of cluster01's a
    df = load_trace(f"itp:{d}", skip_bad_rows=True)
    assert sorted(df["job_id"]) == ["a", "c", "e"] and df.attrs["bad_rows"] == 3
    assert {x.split(", row ")[0].rsplit("/", 1)[1] + " " + x.split(", row ")[1].split(",")[0]
            for x in df.attrs["bad_row_examples"]} == {"cluster01.csv 3", "cluster02.csv 2", "cluster02.csv 4"}
    g = write(tmp_path, "vc.trace", gavel_line("GAN", 10, 0, 1) + gavel_line("LM (batch size 5)", 10, 1, 1)
              + gavel_line("LM (batch size 5)", 0, 2, 1))
    gd = load_trace(f"gavel:{g}", skip_bad_rows=True)
    assert list(gd["job_id"]) == ["vc-2"] and gd.attrs["bad_rows"] == 2
    assert [x.split(", ")[1] for x in gd.attrs["bad_row_examples"]] == ["row 1", "row 3"]


def test_skip_bad_rows_does_not_hide_file_problems(tmp_path):
    p = write(tmp_path, "p.csv", "timestamp,duration,cluster\n2017-10-09 07:01:55,66.0,vc1\n")
    assert error(f"philly:{p}", skip_bad_rows=True).field == "num_gpus"  # a missing column
    p = write(tmp_path, "q.csv", PHILLY_HEAD + "2017-10-09 07:02:55,abc,1,66.0,vc1\nx,1,1,1,vc1\n")
    e = error(f"philly:{p}", skip_bad_rows=True)
    assert "every data row is bad (2 skipped; first: row 2, duration" in e.message


def test_cli_skip_bad_rows(tmp_path, cli):
    p = write(tmp_path, "p.csv", PHILLY_BAD)
    code, out, err = cli("simulate", "--trace", f"philly:{p}", "--cluster", "2x8", "--policy", "fifo", "--json")
    assert code == 2 and out == "" and err.count("\n") == 1 and "row 5, field 'timestamp'" in err
    code, out, err = cli("simulate", "--trace", f"philly:{p}", "--cluster", "2x8", "--policy", "fifo", "--json",
                         "--skip-bad-rows")
    assert code == 0 and json.loads(out)["jobs"] == 2
    assert "skipped 4 bad trace row(s); first: " + f"{p}, row 3, duration" in err
    code, out, err = cli("compare", "--trace", f"philly:{p}", "--cluster", "2x8", "--policies", "fifo",
                         "--out", tmp_path / "cmp", "--skip-bad-rows", "--workers", "1")
    assert code == 0 and "skipped 4 bad trace row(s)" in err
    assert len(pd.read_parquet(tmp_path / "cmp" / "jobs.parquet")) == 2
    # the workload is named in full: the title and the summary say rows were skipped
    assert f"philly:{p}, bad rows skipped, load 1" in " ".join(out.split())
    assert pd.read_csv(tmp_path / "cmp" / "summary.csv")["skip_bad_rows"].tolist() == [True]
