"""The layers hold: import-linter's contracts (pyproject.toml) pass, no module outside
policies tests a policy's class or name, and docs/architecture.md's table is the one the
contracts and the import graph give."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "ringsched"


def test_import_linter_contracts_pass():
    """`lint-imports` as CI runs it, through this interpreter (the script need not sit beside it)."""
    pytest.importorskip("importlinter", reason="import-linter is not installed (pip install import-linter==2.16)")
    r = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                        "lint_imports_command()"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_no_policy_class_or_name_tests_outside_policies():
    """A policy declares what it needs (its Params fields, ``rigid``); nothing else asks which
    policy it is (the old report tested ``"gadget" in policies``, objectives ``issubclass(.., Gadget)``)."""
    pattern = re.compile(r"issubclass\([^)]*(Gadget|Oasis)|isinstance\([^)]*(Gadget|Oasis)|"
                         r"""["'](gadget|oasis|fifo|srtf|tiresias|themis|optimus|drf)["']\s*(==|!=|in\b)|"""
                         r"""(==|!=)\s*["'](gadget|oasis|fifo|srtf|tiresias|themis|optimus|drf)["']""")
    found = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] in ("policies", "optimum"):  # the optimum is built from GADGET's parts
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_architecture_doc_is_generated_from_the_contracts():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import architecture_table
    finally:
        sys.path.pop(0)
    doc = (REPO / "docs" / "architecture.md").read_text()
    start, end = doc.find(architecture_table.BEGIN), doc.find(architecture_table.END)
    assert start >= 0 and end > start, "docs/architecture.md lacks the generated layer table's markers"
    assert doc[start:end + len(architecture_table.END)] == architecture_table.table(), (
        "docs/architecture.md is out of date: run python scripts/architecture_table.py and paste its output")
