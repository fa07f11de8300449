"""A simulator-only install (`pip install ringsched`, without the `[run]` extra) works: the
command line, simulate, compare and the Python API never import torch, Ray, FastAPI or
uvicorn. Checked in a process where importing them fails, as it would with them absent."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pandas as pd

RUN_EXTRA = ("torch", "ray", "fastapi", "uvicorn")

BLOCK = textwrap.dedent(f"""
    import sys

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {RUN_EXTRA!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}} (simulator-only install)")
            return None

    sys.meta_path.insert(0, NotInstalled())
""")


def _run_without_extra(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_the_simulator_needs_nothing_of_the_run_extra(tmp_path):
    """Mutant caught: a module the CLI imports at start-up importing torch at its top."""
    out = tmp_path / "cmp"
    r = _run_without_extra(f"""
        from ringsched.cli.main import main
        sys.argv = ["ringsched", "compare", "--trace", "synthetic:20", "--cluster", "2x8",
                    "--policies", "fifo,gadget", "--workers", "1", "--out", {str(out)!r}]
        try:
            main()
        except SystemExit as e:
            assert not e.code, e.code
        import ringsched
        r = ringsched.simulate("synthetic:20", "2x8", "srtf")
        assert r.summary["jobs"] == 20
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {RUN_EXTRA!r})
        print("loaded:", loaded)
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "loaded: []" in r.stdout
    assert pd.read_csv(out / "summary.csv")["policy"].tolist() == ["fifo", "gadget"]


def test_run_and_serve_without_the_extra_say_what_to_install(tmp_path):
    """`ringsched run` and `serve` without torch: one line naming the extra, exit code 2, before
    any worker starts (they ran the job's workers, which then failed one by one). Mutant
    caught: check_execution_options without require_run_extra."""
    for args in (["run", "--backend", "local", "--cluster", "1x1", "--jobs", "demo:1"],
                 ["serve", "--cluster", "1x1", "--state", str(tmp_path / "state")]):
        r = _run_without_extra(f"""
            from ringsched.cli.main import main
            sys.argv = ["ringsched", *{args!r}]
            main()
        """)
        assert r.returncode == 2, (args, r.returncode, r.stderr[-2000:])
        assert "Traceback" not in r.stderr and "pip install 'ringsched[run]'" in r.stderr, r.stderr[-2000:]
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
