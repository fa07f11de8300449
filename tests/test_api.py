"""The Python API (docs/api.md): its example runs as written, the results are typed and agree
with the command line, and an installed package's policy appears through its entry point."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def test_the_docs_example_runs_as_written(capsys):
    """Every ```python block of docs/api.md, in order, in one namespace (a notebook)."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(), re.S)
    assert len(blocks) >= 3
    ns: dict = {}
    for code in blocks:
        exec(compile(code, "docs/api.md", "exec"), ns)  # noqa: S102 - our own documentation
    assert isinstance(ns["cmp"].summary, pd.DataFrame) and isinstance(ns["sw"].paired, pd.DataFrame)
    assert "demo:200, load 1, seed 1, cluster 4x8" in capsys.readouterr().out


def test_compare_from_python_writes_what_the_command_writes(cli, tmp_path):
    import ringsched

    r = ringsched.compare("synthetic:40", "2x8", policies="fifo,srtf", seed=3, out=tmp_path)
    assert type(r).__name__ == "CompareResult" and r.summary["policy"].tolist() == ["fifo", "srtf"]
    code, _, err = cli("compare", "--config", tmp_path / "experiment.yaml", "--out", tmp_path / "cli")
    assert code == 0, err
    assert (tmp_path / "cli" / "summary.csv").read_bytes() == (tmp_path / "summary.csv").read_bytes()


def test_bad_input_from_python_is_an_input_error():
    import pytest

    import ringsched
    from ringsched.errors import InputError

    with pytest.raises(InputError, match="nope"):
        ringsched.compare("synthetic:10", "2x8", policies=["nope"])
    with pytest.raises(InputError, match="slot_s"):
        ringsched.simulate("synthetic:10", "2x8", "fifo", simulator={"slot_s": -1})


def test_an_installed_packages_policy_appears_in_the_cli(tmp_path):
    """A distribution on sys.path with a ringsched.policies entry point: `ringsched policies`
    lists its policy and `compare` runs it, without editing ringsched."""
    (tmp_path / "my_sched.py").write_text(textwrap.dedent('''
        """Greedy: a plugin policy (first come, first served, under another name)."""
        from ringsched.policies.fifo import Fifo


        class Greedy(Fifo):
            """Greedy: FIFO from another package."""
            name = "greedy"
    '''))
    dist = tmp_path / "my_sched-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-sched\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ringsched.policies]\ngreedy = my_sched:Greedy\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    run = lambda *a: subprocess.run([sys.executable, "-m", "ringsched.cli.main", *a], capture_output=True,  # noqa: E731
                                    text=True, timeout=300, env=env)
    listed = run("policies")
    assert listed.returncode == 0 and re.search(r"^greedy\s+Greedy: FIFO from another package", listed.stdout, re.M)
    out = tmp_path / "out"
    r = run("compare", "--trace", "synthetic:20", "--cluster", "2x8", "--policies", "fifo,greedy", "--out", str(out))
    assert r.returncode == 0, r.stderr
    s = pd.read_csv(out / "summary.csv")
    assert s["policy"].tolist() == ["fifo", "greedy"]
    assert s["mean_jct_s"].iloc[0] == s["mean_jct_s"].iloc[1]  # FIFO under another name
