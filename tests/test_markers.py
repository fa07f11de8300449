"""The marker lists of conftest.py name tests that exist: a renamed or moved test would otherwise
drop out of its marker silently (the old `test_ctrl_c_keeps_the_finished_policies` entry did,
and its 50 s ran in `make test-fast`)."""

from __future__ import annotations

import ast
from pathlib import Path

import conftest
import pytest

TESTS = Path(__file__).resolve().parent


def _test_functions(file: Path) -> set[str]:
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize("listed", conftest.SLOW_TESTS + conftest.BACKEND_TESTS)
def test_every_listed_test_exists(listed):
    file, _, name = listed.partition("::")
    assert (TESTS / file).exists(), f"conftest.py names {listed}, but tests/{file} does not exist"
    assert name.split("[")[0] in _test_functions(TESTS / file), f"conftest.py names {listed}: no such test"


def test_every_listed_backend_file_exists():
    for file in conftest.BACKEND_FILES:
        assert (TESTS / file).exists(), file
