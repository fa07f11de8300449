"""Shared test helpers: where ../shared lives, and running the CLI in-process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RINGSCHED_SHARED", REPO.parent / "shared"))
POLLUX = SHARED / "profiles" / "pollux-measured"


def needs_shared(path: Path = SHARED):
    return pytest.mark.skipif(not path.exists(), reason=f"shared data not present at {path}")


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `ringsched ARGS...` in-process; returns (exit_code, stdout, stderr)."""
    from ringsched.cli.main import main

    def run(*args: str):
        monkeypatch.setattr(sys, "argv", ["ringsched", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return run


# Markers of tests in files that do not mark themselves (pyproject.toml registers the markers;
# `make test-fast` leaves out slow, backend and browser). Measured on the shared 2-core machine:
# each "slow" test takes 8 s or more there.
BACKEND_FILES = ("test_backends.py", "test_backend_ray.py")
SLOW_TESTS = (
    "test_cli_model.py::test_fidelity_on_a_synthetic_profile_folder",
    "test_cli_model.py::test_no_traceback_in_a_real_process",
    "test_baselines.py::test_every_policy_on_a_random_workload[gadget]",
    "test_gadget_bounds.py::test_payoff_bound_is_never_below_the_search",
    "test_gadget_bounds.py::test_payoff_bound_leaves_decisions_unchanged",
    "test_gadget_kernels.py::test_uniform_plans_equal_the_numpy_reference",
    "test_gadget_kernels.py::test_contiguous_plans_equal_the_numpy_reference",
    # cross-validated fits on ../shared's measured profiles (skipped without it): 7-23 s each at a
    # load of 1.3, 20-27 s at 5-8
    "test_fit.py::test_fidelity_on_measured_profiles",  # every parameter
)
BACKEND_TESTS = ("test_sweep.py::test_ray_engine_on_a_local_ray_instance_gives_the_local_results",
                 "test_suite.py::test_ray_engine_gives_the_rows_of_processes",
                 "test_gpu_slots.py::test_the_zygotes_warm_up_leaves_cuda_uninitialised")


def _listed(item, names: tuple[str, ...]) -> bool:
    """``item`` is named in ``names`` as FILE::TEST[PARAMS] or, for every parameter, FILE::TEST
    (tests/test_markers.py checks that every name still names a test)."""
    file = Path(str(item.fspath)).name
    return f"{file}::{item.name}" in names or f"{file}::{getattr(item, 'originalname', item.name)}" in names


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).name in BACKEND_FILES or _listed(item, BACKEND_TESTS):
            item.add_marker(pytest.mark.backend)
        if _listed(item, SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
