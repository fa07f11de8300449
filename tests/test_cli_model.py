"""`ringsched model fit / predict / fidelity` end to end, and their handling of bad input."""

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from conftest import POLLUX, needs_shared

GOOD = """placement,local_bsz,step_time,sync_time
1,32,0.043,0.0005
1,64,0.060,0.0005
1,128,0.100,0.0005
2,32,0.046,0.001
4,64,0.070,0.004
11,32,0.104,0.062
22,64,0.150,0.09
1111,128,0.151,0.044
44,32,0.185,0.142
2244,64,0.17,0.1
"""


@pytest.fixture
def good(tmp_path):
    f = tmp_path / "data.csv"
    f.write_text(GOOD)
    return f


def test_fit_then_predict_roundtrip(cli, good, tmp_path):
    params = tmp_path / "p.json"
    code, out, err = cli("model", "fit", good, "--out", params)
    assert code == 0, err
    doc = json.loads(params.read_text())
    assert doc["model"] == "ring" and doc["fit"]["rows"] == 10
    query = tmp_path / "q.csv"
    query.write_text("num_nodes,num_replicas,local_bsz,note\n1,1,32,a\n2,8,64,b\n4,16,64,c\n")
    code, out, err = cli("model", "predict", params, query)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "num_nodes,num_replicas,local_bsz,note,step_time_pred"
    pred = pd.read_csv(io.StringIO(out))
    assert list(pred.note) == ["a", "b", "c"]
    assert (pred.step_time_pred > 0).all()
    assert pred.step_time_pred[0] == pytest.approx(0.043, rel=0.15)
    out_file = tmp_path / "pred.csv"
    code, _, err = cli("model", "predict", params, query, "--out", out_file)
    assert code == 0 and out_file.read_text() == out


def test_fit_pollux_model_option(cli, good):
    code, out, err = cli("model", "fit", good, "--model", "pollux")
    assert code == 0, err
    assert json.loads(out)["model"] == "pollux"


BAD_CASES = [
    ("missing column", "placement,step_time\n1,0.1\n", "field 'local_bsz'", "missing column"),
    ("nan", "placement,local_bsz,step_time\n1,32,0.1\n1,64,nan\n", "row 3, field 'step_time'", "finite"),
    ("negative", "placement,local_bsz,step_time\n1,32,0.1\n1,64,-0.2\n", "row 3, field 'step_time'", "[1e-09, 1,000,000] s"),
    ("unknown digit", "placement,local_bsz,step_time\n1,32,0.1\n1x2,64,0.2\n", "row 3, field 'placement'", "digit 'x'"),
    ("zero digit", "placement,local_bsz,step_time\n10,32,0.1\n", "row 2, field 'placement'", "digit '0'"),
    ("empty", "", "", "empty"),
    ("header only", "placement,local_bsz,step_time\n", "", "no data rows"),
    ("blank value", "placement,local_bsz,step_time\n1,,0.1\n", "row 2, field 'local_bsz'", "empty"),
    ("text", "num_nodes,num_replicas,local_bsz,step_time\n1,1,32,fast\n", "row 2, field 'step_time'", "'fast'"),
    ("replicas < nodes", "num_nodes,num_replicas,local_bsz,step_time\n3,2,32,0.1\n", "row 2, field 'num_replicas'", "at least"),
    ("no shape columns", "a,b\n1,2\n", "field 'placement'", "missing column"),
]


@pytest.mark.parametrize("name,text,where,what", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_gives_one_clear_line_and_exit_2(cli, tmp_path, name, text, where, what):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    code, out, err = cli("model", "fit", f)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(f) in lines[0] and where in lines[0] and what in lines[0]
    assert "Traceback" not in err


def test_predict_bad_params_and_query(cli, good, tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text("{not json")
    code, _, err = cli("model", "predict", bad, good)
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1
    bad.write_text(json.dumps({"format": "other"}))
    code, _, err = cli("model", "predict", bad, good)
    assert code == 2 and "ringsched parameter file" in err
    params = tmp_path / "ok.json"
    assert cli("model", "fit", good, "--out", params)[0] == 0
    q = tmp_path / "q.csv"
    q.write_text("placement,local_bsz\n12,0\n")
    code, _, err = cli("model", "predict", params, q)
    assert code == 2 and "row 2, field 'local_bsz'" in err


def test_no_traceback_in_a_real_process(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("placement,local_bsz,step_time\n1,32,NaN\n")
    r = subprocess.run([sys.executable, "-m", "ringsched.cli.main", "model", "fit", str(f)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"ringsched: error: {f}, row 2, field 'step_time': must be a finite number in [1e-09, 1,000,000] s, got 'NaN'"


def test_fidelity_on_a_synthetic_profile_folder(cli, tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for pl in ["1", "2", "4", "11", "22", "44", "111", "1111", "2222", "12", "13", "24", "123", "1234"]:
        digits = [int(c) for c in pl]
        w, k = sum(digits), len(digits)
        for b in (16, 32, 64, 128):
            comm = 0 if w == 1 else (0.002 if k == 1 else 0.03) * 2 * (w - 1) / w
            rows.append((pl, b, (0.01 + 1e-4 * b + comm) * np.exp(rng.normal(0, 0.01))))
    d = tmp_path / "prof"
    d.mkdir()
    pd.DataFrame(rows, columns=["placement", "local_bsz", "step_time"]).to_csv(d / "placements.csv", index=False)
    code, out, err = cli("model", "fidelity", d, "--seeds", "2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    prof = doc["profiles"][0]
    assert prof["profile"] == "prof" and prof["shapes"] == 13
    assert set(prof["median_ape"]) == {"ring", "pollux"}


def test_fidelity_missing_dir(cli, tmp_path):
    code, _, err = cli("model", "fidelity", tmp_path / "nope")
    assert code == 2 and "no such directory" in err


@needs_shared(POLLUX)
def test_fit_on_measured_profile(cli, tmp_path):
    code, out, err = cli("model", "fit", POLLUX / "cifar10" / "placements.csv")
    assert code == 0, err
    assert json.loads(out)["fit"]["median_ape"] < 0.06


def test_model_table_fits_100_columns_when_piped(cli, capsys):
    """`model table` piped (as here): no line over 100 columns, every header whole, and the
    caption says how many placements a wider terminal adds; 170 columns show them all.
    Mutant caught: the old fixed 170-column console for pipes."""
    from ringsched.cli.model_cmd import print_catalogue_tables

    code, out, err = cli("model", "table")
    assert code == 0, err
    lines = out.splitlines()
    assert max(map(len, lines)) <= 100 and "…" not in out
    header = next(line for line in lines if "model" in line and "batch" in line)
    assert "1 GPU" in header and "8 on 1" in header and "more placements: a wider terminal shows them" in out
    print_catalogue_tables("16x8", ["resnet50"], width=170)
    wide = capsys.readouterr().out
    assert "128 on 16" in wide and "more placements" not in wide and "…" not in wide


def test_model_help_says_table_is_what_make_table_prints(cli):
    """`ringsched model --help` and `model table --help` say the table is what `make table` prints
    (the demo prints the policy comparison). Mutant caught: the old "(what the demo prints)"."""
    for args in (("model", "--help"), ("model", "table", "--help")):
        code, out, err = cli(*args)
        assert code == 0, err
        text = " ".join(out.replace("│", " ").split())
        assert "what make table prints" in text and "demo" not in text, text
