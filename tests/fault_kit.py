"""Shared by the fault suites (test_faults.py, test_faults_worker.py, test_faults_real.py): the
injected-fault counter, and the forged files they inject (crafted checkpoints, lying sidecars)."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import pickle
from pathlib import Path

import pytest

from ringsched.backends import ckpt_store

FAULTS: collections.Counter = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def fault_totals():
    yield
    print(f"\ninjected faults (this session so far): {sum(FAULTS.values())} {dict(sorted(FAULTS.items()))}")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Payload:
    """Unpickling this runs a shell command (what a crafted checkpoint would do)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def crafted_checkpoint(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps({"format": ckpt_store.CKPT_FORMAT, "model": Payload(marker), "step": 1,
                                   "samples": 64}))


def sidecar(folder: Path, attempt: int, step: int, samples: int, done: bool, *, good_hash: bool = True) -> Path:
    pt = folder / f"a{attempt}-s{step}.pt"
    pt.parent.mkdir(parents=True, exist_ok=True)
    pt.write_bytes(os.urandom(64))
    info = {"path": str(pt), "sha256": sha(pt) if good_hash else "0" * 64, "bytes": 64, "step": step,
            "samples": samples, "done": done, "attempt": attempt}
    Path(str(pt) + ".json").write_text(json.dumps(info))
    return pt
