"""Fuzzed bad input at the command line: every malformed trace, cluster, jobs file, step-time
CSV, policy spec or option gives one line ``ringsched: error: ...`` naming the file, the row
(1-based, as in the file) and the field, exit code 2, no traceback.

A valid small file of each format gets exactly one cell or value broken (hypothesis picks
which and how), so the expected row and field are known. Commands run in-process through
``ringsched.cli.errors.run`` (what ``main`` runs); the inputs that used to hang or eat memory
run in a subprocess under an address-space and a wall-clock limit.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bad_inputs.corpus import TABLES
from ringsched.validation.bounds import LIMITS

FUZZ = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# format -> column -> the bound its values obey (the CSV loaders' columns)
COLUMN_BOUNDS: dict[str, dict[str, str]] = {
    "philly": {"duration": "duration_s", "num_gpus": "job_gpus"},
    "pollux": {"time": "time_s", "num_replicas": "job_gpus", "batch_size": "global_bsz"},
    "itp": {"submission_time": "time_s", "duration": "duration_s", "num_gpu": "job_gpus"},
    "itp_ef": {"submission_time": "time_s", "batch_size": "global_bsz", "num_gpu": "job_gpus",
               "duration": "duration_s"},
    "elasticflow": {"submit_time": "time_s", "batch_size": "global_bsz", "num_gpu": "job_gpus",
                    "duration": "duration_s"},
    "gavel": {"total_steps": "steps", "arrival_time": "time_s", "scale_factor": "job_gpus"},
    "alibaba": {"num_gpu": "pod_gpus", "gpu_milli": "gpu_milli", "creation_time": "time_s"},
}
GAVEL_FIELDS = ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time",
                "scale_factor"]


def run_cli(*args) -> tuple[int, str, str]:
    """``ringsched ARGS`` in-process: (exit code, stdout, stderr). A RuntimeWarning (an overflow
    on the way) is an error too: it would print a second line."""
    from ringsched.cli.errors import run
    from ringsched.cli.main import app

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        code = run(app, [str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def assert_one_line(result, *, file=None, row=None, field=None) -> str:
    code, _, err = result
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, f"exit {code}, stderr {err!r}"
    assert len(lines) == 1 and lines[0].startswith("ringsched: error: "), err
    line = lines[0]
    if file is not None:
        assert str(file) in line, line
    if row is not None:
        assert f"row {row}," in line or line.endswith(f"row {row}") or f"row {row}:" in line, line
    if field is not None:
        assert field.lower() in line.lower(), line
    return line


def _num(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() or abs(v) >= 1e16 else str(int(v))


def bad_values(name: str) -> st.SearchStrategy[str]:
    """Text that ``LIMITS[name]`` refuses: out of range, not whole, not finite, not a number."""
    b = LIMITS[name]
    above = st.floats(min_value=b.hi * 1.5 + 1, max_value=1e308).map(_num)
    below = st.floats(min_value=-1e308, max_value=b.lo - 0.5 * (abs(b.lo) + 1)).map(_num)
    words = st.text(alphabet="abcxyzQ!?_%&", min_size=1, max_size=6)
    choices = [above, below, words, st.sampled_from(["nan", "inf", "-inf", "NaN", "1e999", "true"])]
    if b.integer:
        choices.append(st.floats(min_value=max(b.lo, 1) + 0.01, max_value=min(b.hi, 1e6) - 0.01)
                       .filter(lambda v: not v.is_integer()).map(repr))
    return st.one_of(choices)


@st.composite
def broken_table(draw):
    fmt = draw(st.sampled_from(sorted(COLUMN_BOUNDS)))
    prefix, fname, header, rows, sep = TABLES[fmt]
    cols = header or GAVEL_FIELDS
    col = draw(st.sampled_from(sorted(COLUMN_BOUNDS[fmt])))
    r = draw(st.integers(0, len(rows) - 1))
    cells = [list(x) for x in rows]
    cells[r][cols.index(col)] = draw(bad_values(COLUMN_BOUNDS[fmt][col]))
    text = "\n".join(([sep.join(header)] if header else []) + [sep.join(x) for x in cells]) + "\n"
    return fmt, prefix, fname, text, (r + (1 if header is None else 2)), col


@FUZZ
@given(case=broken_table(), command=st.sampled_from(["simulate", "compare", "sweep"]))
def test_a_broken_trace_cell_is_one_line_naming_file_row_field(tmp_path_factory, case, command):
    fmt, prefix, fname, text, row, col = case
    d = tmp_path_factory.mktemp("trace")
    (d / fname).write_text(text)
    args = [command, "--trace", f"{prefix}:{d / fname}", "--cluster", "2x4"]
    args += ["--policy", "fifo"] if command == "simulate" else ["--policies", "fifo", "--out", d / "out"]
    assert_one_line(run_cli(*args), file=d / fname, row=row, field=col)


# --- cluster specs -------------------------------------------------------------------------
SPEC_KEYS = {"intra_GBps": ("bandwidth_Bps", 1e-9), "nic_Gbps": ("bandwidth_Bps", 8e-9), "racks": ("racks", 1),
             "oversub": ("oversub", 1), "latency_intra_us": ("latency_s", 1e6), "latency_inter_us": ("latency_s", 1e6)}


@st.composite
def bad_cluster_spec(draw):
    n, g = draw(st.integers(1, 64)), draw(st.integers(1, 16))
    kind = draw(st.sampled_from(["value", "unknown", "repeat", "size"]))
    if kind == "size":
        which = draw(st.sampled_from(["servers", "server_gpus"]))
        big = draw(st.integers(int(LIMITS[which].hi) + 1, 10**12))
        return f"{big}x{g}" if which == "servers" else f"{n}x{big}"
    key = draw(st.sampled_from(sorted(SPEC_KEYS)))
    if kind == "unknown":
        return f"{n}x{g},{key}_x=1"
    if kind == "repeat":
        return f"{n}x{g},{key}=1,{key}=2"
    name, scale = SPEC_KEYS[key]
    b = LIMITS[name].scaled(scale, "")
    value = draw(st.one_of(st.floats(min_value=b.hi * 1.5 + 1, max_value=1e308).map(_num),
                           st.floats(max_value=b.lo - 0.5 * (abs(b.lo) + 1e-9), min_value=-1e308).map(_num),
                           st.sampled_from(["nan", "inf", "x", ""]),
                           st.just("1.5") if name == "racks" else st.just("-1")))
    return f"{n}x{g},{key}={value}"


@FUZZ
@given(spec=bad_cluster_spec(), command=st.sampled_from(["simulate", "model-table", "run"]))
def test_a_bad_cluster_spec_is_one_line(tmp_path_factory, spec, command):
    d = tmp_path_factory.mktemp("spec")
    args = {"simulate": ["simulate", "--trace", "synthetic:3", "--cluster", spec],
            "model-table": ["model", "table", "--cluster", spec, "--model", "resnet50"],
            "run": ["run", "--cluster", spec, "--state", d / "s"]}[command]
    assert_one_line(run_cli(*args), field="cluster")


# --- YAML: clusters and jobs, one value broken at a known line -------------------------------
CLUSTER_LINES = [("servers:", None), ("  - count: 2", ("count", "servers")), ("    gpus: 4", ("gpus", "server_gpus")),
                 ("    nic_Bps: 1.25e10", ("nic_Bps", "bandwidth_Bps")),
                 ("    intra_Bps: 1.5e11", ("intra_Bps", "bandwidth_Bps")),
                 ("latency_inter_s: 2.5e-5", ("latency_inter_s", "latency_s")),
                 ("reduction_Bps: 1.0e12", ("reduction_Bps", "reduction_Bps"))]
JOB_LINES = [("jobs:", None), ("  - name: j1", None), ("    entry: trainmod:main", None),
             ("    batch: 32", ("batch", "local_bsz")), ("    min_workers: 1", ("min_workers", "job_workers")),
             ("    arrival_s: 0", ("arrival_s", "time_s")), ("    seed: 3", ("seed", "job_seed")),
             ("    work: {epochs: 2, epoch_samples: 100}", ("epochs", "epochs"))]
YAML_BAD = st.sampled_from([".inf", "-.inf", ".nan", "true", "false", "null", "[1]", "{a: 1}", "x", "''"])


def yaml_bad(name: str) -> st.SearchStrategy[str]:
    """Values ``LIMITS[name]`` refuses, written so that the YAML itself stays well-formed."""
    return st.one_of(YAML_BAD, bad_values(name).filter(lambda t: t not in ("true", "nan", "inf", "-inf", "NaN")
                                                       and not set(t) & set("!?%&")))


@st.composite
def broken_yaml(draw, lines):
    i = draw(st.sampled_from([k for k, (_, where) in enumerate(lines) if where]))
    text, (key, name) = lines[i]
    head = text.split(":")[0] if key != "epochs" else text.split("{")[0] + "{epochs: "
    value = draw(yaml_bad(name))
    out = [t for t, _ in lines]
    out[i] = (f"{head}: {value}" if key != "epochs" else f"{head}{value}, epoch_samples: 100}}")
    return "\n".join(out) + "\n", i + 1, key


@FUZZ
@given(case=broken_yaml(CLUSTER_LINES), command=st.sampled_from(["simulate", "model-table"]))
def test_a_broken_cluster_yaml_value_names_its_line(tmp_path_factory, case, command):
    text, row, key = case
    f = tmp_path_factory.mktemp("yaml") / "c.yaml"
    f.write_text(text)
    args = (["simulate", "--trace", "synthetic:3", "--cluster", f] if command == "simulate"
            else ["model", "table", "--cluster", f, "--model", "resnet50"])
    assert_one_line(run_cli(*args), file=f, row=row, field=key)


@FUZZ
@given(case=broken_yaml(JOB_LINES))
def test_a_broken_jobs_file_value_names_its_line(tmp_path_factory, case):
    text, row, key = case
    d = tmp_path_factory.mktemp("jobs")
    (d / "jobs.yaml").write_text(text)
    (d / "trainmod.py").write_text("def main(ctx):\n    pass\n")
    (d / "statefile").write_text("an accepted file would stop here, at --state")
    line = assert_one_line(run_cli("run", "--jobs", d / "jobs.yaml", "--cluster", "1x2", "--state", d / "statefile"),
                           file=d / "jobs.yaml", row=row, field=key)
    assert "--state" not in line


# --- step-time CSVs ----------------------------------------------------------------------------
FIT_ROWS = [["1", "32", "0.1"], ["2", "32", "0.12"], ["4", "32", "0.15"], ["22", "32", "0.2"], ["44", "32", "0.3"]]


@FUZZ
@given(col=st.sampled_from(["local_bsz", "step_time"]), r=st.integers(0, 4), data=st.data())
def test_a_broken_step_time_cell_is_one_line(tmp_path_factory, col, r, data):
    rows = [list(x) for x in FIT_ROWS]
    bound = "local_bsz" if col == "local_bsz" else "step_time_s"
    rows[r][1 if col == "local_bsz" else 2] = data.draw(bad_values(bound))
    f = tmp_path_factory.mktemp("fit") / "data.csv"
    f.write_text("placement,local_bsz,step_time\n" + "\n".join(",".join(x) for x in rows) + "\n")
    assert_one_line(run_cli("model", "fit", f), file=f, row=r + 2, field=col)


# --- policy and objective specs, numeric options, usage errors ---------------------------------
@FUZZ
@given(spec=st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
        lambda s: s not in __import__("ringsched.policies", fromlist=["x"]).policy_names()),
    st.sampled_from(["fifo", "gadget", "srtf", "tiresias"]).flatmap(
        lambda n: st.sampled_from([f"{n}:nosuchkey=1", f"{n}:=1", f"{n}:x"])),
    st.just("gadget:admission=strict,admission=deferred")))
def test_a_bad_policy_spec_is_one_line(spec):
    assert_one_line(run_cli("simulate", "--trace", "synthetic:3", "--cluster", "1x2", "--policy", spec),
                    field="policy")


OPTION_LIMITS = {"--seed": "seed", "--slot-s": "slot_s", "--restart-s": "restart_s", "--checkpoint-s": "checkpoint_s",
                 "--mtbf": "mtbf_h", "--mttr": "mttr_h", "--horizon-s": "horizon_s"}


@FUZZ
@given(flag=st.sampled_from(sorted(OPTION_LIMITS)), data=st.data(), command=st.sampled_from(["simulate", "compare"]))
def test_a_numeric_option_out_of_bounds_is_one_line(tmp_path_factory, flag, data, command):
    value = data.draw(bad_values(OPTION_LIMITS[flag]).filter(lambda t: t != "true"))
    args = ["simulate", "--policy", "fifo"] if command == "simulate" else \
        ["compare", "--policies", "fifo", "--out", tmp_path_factory.mktemp("o")]
    assert_one_line(run_cli(*args, "--trace", "synthetic:3", "--cluster", "1x2", f"{flag}={value}"),
                    field=flag.lstrip("-"))


@FUZZ
@given(argv=st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=3, max_size=10).map(lambda s: ["simulate", f"--{s}x"]),
    st.sampled_from([["model", "fit"], ["nosuchcommand"], ["simulate", "--seed"], ["simulate", "--limit", "abc"],
                     ["model", "predict", "only-one-arg"], ["compare"]])))
def test_a_usage_error_is_one_line_not_a_box(argv):
    assert_one_line(run_cli(*argv))


def test_output_paths_are_checked_before_any_work(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "data.csv").write_text("placement,local_bsz,step_time\n" + "\n".join(",".join(r) for r in FIT_ROWS))
    for args, path in ((["simulate", "--trace", "synthetic:3", "--out", tmp_path / "file"], tmp_path / "file"),
                       (["model", "fit", tmp_path / "data.csv", "--out", tmp_path], tmp_path),
                       (["model", "fit", tmp_path / "data.csv", "--out", "/proc/no/such/p.json"], "/proc/no/such"),
                       (["compare", "--trace", "synthetic:3", "--out", "/proc/ringsched-x/out"], "/proc/ringsched-x"),
                       (["optimum-check", "--instances", "1", "--details", tmp_path], tmp_path),
                       (["run", "--jobs", "demo:1", "--state", "/proc/ringsched-x/state"], "/proc/ringsched-x")):
        assert_one_line(run_cli(*args), file=path)


def test_model_fit_never_writes_nan(tmp_path):
    """Step times no finite fit explains: an error, exit 2, and no parameter file."""
    f = tmp_path / "data.csv"
    f.write_text("placement,local_bsz,step_time\n" + "\n".join(f"{p},32,1e-9" for p in (1, 2, 4, 22, 44)) + "\n")
    code, out, err = run_cli("model", "fit", f, "--out", tmp_path / "p.json")
    if code == 0:  # a finite fit is fine; NaN or Infinity in the file is not
        text = (tmp_path / "p.json").read_text()
        assert "NaN" not in text and "Infinity" not in text
    else:
        assert_one_line((code, out, err), file=f, field="step_time")
        assert not (tmp_path / "p.json").exists()


def test_numba_cache_falls_back_when_home_and_package_are_unwritable(tmp_path):
    from ringsched.cli.errors import numba_cache_fallback

    assert numba_cache_fallback(Path("/proc/ringsched-pkg"), Path("/proc/ringsched-home/.cache")) is not None
    assert numba_cache_fallback(tmp_path, Path("/proc/ringsched-home/.cache")) is None
    assert numba_cache_fallback(Path("/proc/ringsched-pkg"), tmp_path / "new" / ".cache") is None


# --- inputs that used to hang or grow without bound: a real process, limited -------------------
def _limited(mem_bytes: int):
    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return preexec


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("argv,field", [
    (["simulate", "--trace", "synthetic:10,load=1e-300", "--cluster", "1x2"], "trace"),
    (["simulate", "--trace", "synthetic:3", "--cluster", "1x2", "--mtbf", "1e-9"], "mtbf"),
    (["sweep", "--trace", "synthetic:3", "--cluster", "1x2", "--loads", "1e-300", "--seeds", "0",
      "--policies", "fifo", "--out", "{d}/o"], "loads"),
    (["simulate", "--trace", "pollux:{d}/w.csv", "--cluster", "1x2"], "time"),
    (["model", "table", "--cluster", "{d}/bomb.yaml"], None),
    (["model", "table", "--cluster", "100000000x8"], "cluster"),
    (["sweep", "--trace", "synthetic:3", "--seeds", "0-99999999999", "--out", "{d}/o"], "seeds"),
])
def test_inputs_that_hung_end_fast_with_one_line(tmp_path, argv, field):
    (tmp_path / "w.csv").write_text("name,time,application,num_replicas,batch_size\na,0,ncf,1,256\nb,1e300,ncf,1,256\n")
    (tmp_path / "bomb.yaml").write_text(BOMB)
    args = [a.replace("{d}", str(tmp_path)) for a in argv]
    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "ringsched.cli.main", *args], capture_output=True, text=True, env=env,
                       timeout=60, preexec_fn=_limited(3 << 30), cwd=tmp_path)
    assert "Traceback" not in r.stderr
    assert_one_line((r.returncode, r.stdout, r.stderr), field=field)


def test_a_fit_that_is_not_finite_is_an_error_not_a_file():
    """The guard itself: a fit result holding NaN or an infinite error never becomes JSON."""
    from ringsched.errors import InputError
    from ringsched.perfmodel.fit import FitResult
    from ringsched.perfmodel.ring import RingParams

    good = RingParams(compute_base_s=0.01, compute_per_sample_s=1e-4)
    assert FitResult("ring", good, 5, 0.1, 0.2).checked_json("d.csv")["params"]["compute_base_s"] == 0.01
    diverged = RingParams(compute_base_s=0.01, compute_per_sample_s=1e-4)
    object.__setattr__(diverged, "compute_base_s", float("nan"))  # what a diverged optimiser could leave
    for res in (FitResult("ring", diverged, 5, 0.1, 0.2), FitResult("ring", good, 5, float("inf"), 0.2)):
        with pytest.raises(InputError) as e:
            res.checked_json("d.csv")
        assert e.value.file == "d.csv" and "not finite" in e.value.message


# --- files that are not files, nesting, repeats: the edge cases that hung or raised ---------------
PARAMS_OK = '{"format": "ringsched-step-model/1", "model": "ring", "params": {"compute_base_s": 0.01}}'


@pytest.mark.parametrize("argv, file, field", [
    (["model", "predict", "{d}/pipe", "{d}/q.csv"], "{d}/pipe", None),          # a FIFO: read for ever
    (["compare", "--config", "/dev/zero", "--out", "{d}/o"], "/dev/zero", None),  # a device: MemoryError
    (["model", "table", "--cluster", "{d}/deep.yaml"], "{d}/deep.yaml", None),  # RecursionError in PyYAML
    (["model", "predict", "{d}/deep.json", "{d}/q.csv"], "{d}/deep.json", None),  # RecursionError in json
    (["simulate", "--trace", "synthetic:3", "--seed", "1", "--seed", "2"], None, "--seed"),  # the last one won
    (["compare", "--trace", "synthetic:3", "--load", "1e-300", "--out", "{d}/o"], None, "load"),  # ran
])
def test_edge_inputs_that_hung_or_raised_are_one_line(tmp_path, argv, file, field):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "q.csv").write_text("placement,local_bsz\n1,32\n")
    (tmp_path / "deep.yaml").write_text("servers: " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "deep.json").write_text(PARAMS_OK[:-2] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    args = [a.replace("{d}", str(tmp_path)) for a in argv]
    assert_one_line(run_cli(*args), file=file and file.replace("{d}", str(tmp_path)), field=field)
