"""Derive the built-in T4 parameter files (src/ringsched/perfmodel/gpu_profiles/t4/*.json).

Usage: python scripts/derive_gpu_types.py [--artifact DIR] [--write]

For every Pollux application measured on the T4 cluster (nodes of 4 NVIDIA T4s, the Pollux
paper's testbed), fit ringsched's step-time model (``ringsched model fit``: perfmodel/fit.py)
on **all** rows of its ``placements.csv`` and ``scalability.csv`` and keep the result in the
format of ``ringsched model fit --out PARAMS.json`` plus a ``source`` line. The four shared
applications come from ``<repo>/../shared/profiles/pollux-measured`` (or RINGSCHED_SHARED);
bert and deepspeech2 from ``--artifact DIR`` = a copy of petuum/adaptdl
``simulator/traces`` (branch osdi21-artifact, commit de25dcc), which the shared folder lacks.
Without data the script says so and exits 0. ``--write`` writes the files; without it the
script prints the fits. tests/test_gpu_types.py re-fits the shared four and compares.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ringsched.perfmodel.data import read_pollux_profile_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling script, also when loaded by path
from derive_efficiency import measured_folders  # noqa: E402
from ringsched.perfmodel.fit import MODELS, fit

# Pollux application -> catalogue model
APPS = {"cifar10": "resnet18_cifar10", "imagenet": "resnet50", "ncf": "ncf", "yolov3": "yolov3",
        "bert": "bert_base", "deepspeech2": "deepspeech2"}
ARTIFACT_ONLY = ("bert", "deepspeech2")
OUT = Path(__file__).resolve().parents[1] / "src" / "ringsched" / "perfmodel" / "gpu_profiles" / "t4"


def shared_dir() -> Path:
    env = os.environ.get("RINGSCHED_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".." / "shared"


def _rounded(v):
    """9 decimals for times, 6 for the knot lists (JSON lists): stable text, same predictions."""
    if isinstance(v, (list, tuple)):
        return [round(float(x), 6) for x in v]
    return round(v, 9) if isinstance(v, float) else v


def derive(folder: Path, app: str, where: str) -> dict:
    """The PARAMS.json document (plus source and batch range) of one application."""
    table = read_pollux_profile_dir(folder)
    res = fit(MODELS["ring"], table)
    doc = res.to_json()
    doc["params"] = {k: _rounded(v) for k, v in doc["params"].items()}
    doc["fit"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in doc["fit"].items()}
    doc["max_local_bsz"] = int(table.local_bsz.max())
    doc["source"] = (f"Measured on NVIDIA T4 nodes of 4 GPUs (Pollux, OSDI'21): {where}/{app}/"
                     f"placements.csv + scalability.csv, all {len(table)} rows; ringsched model fit "
                     f"(scripts/derive_gpu_types.py)")
    return doc


def derive_all(shared: Path, artifact: Path | None) -> dict[str, dict]:
    return {APPS[app]: derive(folder, app, source)
            for app, folder, source in measured_folders(shared, artifact, APPS, ARTIFACT_ONLY)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, help="adaptdl simulator/traces folder (bert, deepspeech2)")
    ap.add_argument("--write", action="store_true", help=f"write {OUT}/<model>.json")
    args = ap.parse_args(argv)
    shared = shared_dir()
    if not (shared / "profiles" / "pollux-measured").is_dir():
        print(f"skipped: no Pollux measurements under {shared} (set RINGSCHED_SHARED)")
        return 0
    for model, doc in derive_all(shared, args.artifact).items():
        print(f"{model:18s} rows={doc['fit']['rows']:<5d} median={doc['fit']['median_ape']:.3f} "
              f"p90={doc['fit']['p90_ape']:.3f} base={doc['params']['compute_base_s']:.4g} "
              f"per_sample={doc['params']['compute_per_sample_s']:.4g}")
        if args.write:
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / f"{model}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
