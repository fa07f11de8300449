"""The bad-input corpus (tests/bad_inputs) run through the real CLI by its runner
(scripts/bad_input_corpus.py: a forked child per case, under a memory and a time limit): no
traceback, no hang, nothing silently accepted, one line naming file, row and field, exit 2.

Every case takes a second or more, so the test runs a fixed sample (every
``SAMPLE_EVERY``-th case, and every case of the edge set whose name says it once hung or
raised: 53 cases, 6 s on the 2-core machine idle, 80 s when it is shared: marked slow). The
whole corpus (645 cases: 199 s idle, 22 min shared) is the script's:
``python scripts/bad_input_corpus.py``. The fast guards of the same edges are in
test_fuzz_inputs.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bad_inputs import cases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bad_input_corpus as runner  # noqa: E402

SAMPLE_EVERY = 32
# the edge cases that hung or gave a traceback before the fix (a FIFO or /dev/zero read for
# ever, Python's recursion limit, an int beyond a double, a URL without a scheme)
ONCE_BROKEN = ("fifo", "device", "nested", "huge integer", "not a url", "unwritable", "suite --out",
               "exits at import", "given twice")


def failures(todo, tmp_path: Path) -> list[str]:
    import ringsched.cli.main  # noqa: F401 - imported once, before the forks

    out = []
    for case, folder, res in runner.run_all(todo, tmp_path, jobs=2, timeout_s=60.0, extra_mem_bytes=2 << 30):
        bad = runner.classify(case, folder, res)
        if bad:
            last = (res["stderr"].strip().splitlines() or ["(no stderr)"])[-1]
            out.append(f"{case.name}: {', '.join(bad)}: rc={res['rc']} {last[:200]}")
        for p in folder.rglob("*"):  # read-only folders of the case, for the cleanup
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o700)
    return out


def test_the_corpus_is_big_and_covers_every_command():
    every = cases()
    assert len(every) >= 600
    commands = {c.argv[0] if c.argv[0] != "model" else " ".join(c.argv[:2]) for c in every}
    assert {"simulate", "compare", "sweep", "suite", "run", "serve", "submit", "optimum-check", "model fit",
            "model predict", "model table", "model fidelity"} <= commands
    assert len({c.name for c in every}) == len(every), "two cases share a name"


@pytest.mark.slow
def test_a_sample_of_the_corpus_fails_cleanly(tmp_path):
    every = cases()
    todo = [c for i, c in enumerate(every) if i % SAMPLE_EVERY == 0 or any(w in c.name for w in ONCE_BROKEN)]
    assert failures(todo, tmp_path) == []

