"""Print docs/architecture.md's layer table from the import-linter contracts in pyproject.toml,
with each package's actual direct dependencies (grimp's import graph), so the doc cannot drift:
tests/test_layers.py checks the doc holds exactly this text between its markers."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- layers:begin (scripts/architecture_table.py) -->", "<!-- layers:end -->"


def contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def dependencies() -> dict[str, set[str]]:
    """Top-level package -> the top-level ringsched packages it imports directly."""
    import grimp

    g = grimp.build_graph("ringsched")
    top = lambda m: ".".join(m.split(".")[:2])  # noqa: E731
    deps: dict[str, set[str]] = {}
    for m in g.modules:
        for imported in g.find_modules_directly_imported_by(m):
            a, b = top(m), top(imported)
            if a != b and b != "ringsched":
                deps.setdefault(a, set()).add(b)
    return deps


def table() -> str:
    layers = next(c for c in contracts() if c["type"] == "layers")["layers"]
    deps = dependencies()
    short = lambda m: m.removeprefix("ringsched.")  # noqa: E731
    rows = ["| layer (top first) | package | imports directly |", "|---|---|---|"]
    for i, layer in enumerate(layers):
        for pkg in (p.strip() for p in layer.split("|")):
            used = ", ".join(f"`{short(d)}`" for d in sorted(deps.get(pkg, ()))) or "nothing of ringsched"
            rows.append(f"| {i + 1} | `{short(pkg)}` | {used} |")
    lines = [BEGIN, *rows, ""]
    for c in contracts():
        if c["type"] == "forbidden":
            lines.append(f"- {c['name']}: `{'`, `'.join(map(short, c['source_modules']))}` never import "
                         f"`{'`, `'.join(map(short, c['forbidden_modules']))}`"
                         + (" directly" if c.get("allow_indirect_imports") else "") + ".")
    return "\n".join([*lines, END])


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
