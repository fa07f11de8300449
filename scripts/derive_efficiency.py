"""Derive the gradient noise scales of src/ringsched/perfmodel/noise_scale.json.

Usage: python scripts/derive_efficiency.py [--artifact DIR] [--write]

For every Pollux application with convergence curves (``validation-<B>.csv``: progress,
iteration, metric, grad_sqr, grad_var; one row per epoch of a run at total batch B), the noise
scale of epoch e in the run at batch B is

    phi[B][e] = M0 * grad_var / grad_sqr           (M0 = the smallest curve batch)

which is the phi of the Pollux paper's efficiency E(M) = (phi + M0) / (phi + M): the curves'
``grad_var`` is the variance of an M0-sample gradient, so M0 * var / sqr is McCandlish et al.'s
simple noise scale tr(Sigma) / |g|^2 in samples. The shared folder (``<repo>/../shared`` or
env RINGSCHED_SHARED) has cifar10, imagenet, ncf and yolov3; ``--artifact DIR`` points at a
checkout of petuum/adaptdl ``simulator/traces`` (branch osdi21-artifact) for bert and
deepspeech2, which the shared folder lacks. Without data the script says so and exits 0.
``--write`` rewrites the JSON (values rounded to 5 significant digits); without it the script
prints what it would write. tests/test_efficiency.py imports ``derive`` to re-check the file.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

# Pollux application -> (catalogue model, epochs trained in the Pollux simulator's
# applications.py at commit de25dcc, where the curves come from).
APPS = {
    "cifar10": ("resnet18_cifar10", 100),
    "imagenet": ("resnet50", 90),
    "ncf": ("ncf", 10),
    "yolov3": ("yolov3", 50),
    "bert": ("bert_base", 2),
    "deepspeech2": ("deepspeech2", 80),
}
ARTIFACT_ONLY = ("bert", "deepspeech2")
NO_SIGNAL = 1e30  # phi where grad_sqr is 0 (deepspeech2's late epochs): efficiency 1
OUT = Path(__file__).resolve().parents[1] / "src" / "ringsched" / "perfmodel" / "noise_scale.json"


def shared_dir() -> Path:
    env = os.environ.get("RINGSCHED_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".." / "shared"


def _curves(folder: Path) -> dict[int, list[dict]]:
    out = {}
    for path in folder.glob("validation-*.csv"):
        with path.open() as f:
            out[int(path.stem.split("-")[-1])] = list(csv.DictReader(f))
    return dict(sorted(out.items()))


def _min_local(folder: Path) -> int:
    with (folder / "placements.csv").open() as f:
        return min(int(r["local_bsz"]) for r in csv.DictReader(f))


def _phi(m0: int, sqr: float, var: float) -> float:
    """M0 var / sqr, 5 significant digits; NO_SIGNAL where the measured sqr is 0 (noise only:
    every batch is fully efficient, as Pollux's gain formula gives then)."""
    return NO_SIGNAL if sqr <= 0 else float(f"{m0 * var / sqr:.5g}")


def derive(folder: Path, app: str, source: str) -> dict:
    """The JSON entry of one application from its folder of curves."""
    model, epochs = APPS[app]
    curves = _curves(folder)
    m0 = min(curves)
    phi = {}
    for b, rows in curves.items():
        if len(rows) < epochs:
            raise ValueError(f"{folder}/validation-{b}.csv: {len(rows)} rows, need {epochs}")
        phi[str(b)] = [_phi(m0, float(r["grad_sqr"]), float(r["grad_var"])) for r in rows[:epochs]]
    return {"application": app, "ref_batch": m0, "max_batch": max(curves),
            "min_local_bsz": _min_local(folder), "epochs": epochs, "phi": phi,
            "source": f"{source}/{app}/validation-*.csv: phi = {m0} x grad_var / grad_sqr per "
                      f"epoch (scripts/derive_efficiency.py)"}


def measured_folders(shared: Path, artifact: Path | None, apps, artifact_only):
    """(app, folder, source) of every Pollux application measured here: shared/'s four, and the
    artifact's bert and deepspeech2 when its folder is given (also used by derive_gpu_types)."""
    pollux = shared / "profiles" / "pollux-measured"
    for app in apps:
        if app in artifact_only:
            if artifact is not None and (artifact / app).is_dir():
                yield app, artifact / app, "adaptdl@de25dcc simulator/traces"
        elif (pollux / app).is_dir():
            yield app, pollux / app, "shared/profiles/pollux-measured"


def derive_all(shared: Path, artifact: Path | None) -> dict[str, dict]:
    return {APPS[app][0]: derive(folder, app, source)
            for app, folder, source in measured_folders(shared, artifact, APPS, ARTIFACT_ONLY)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, help="adaptdl simulator/traces folder (bert, deepspeech2)")
    ap.add_argument("--write", action="store_true", help=f"rewrite {OUT.name}")
    args = ap.parse_args(argv)
    shared = shared_dir()
    if not (shared / "profiles" / "pollux-measured").is_dir():
        print(f"skipped: no Pollux curves under {shared} (set RINGSCHED_SHARED)")
        return 0
    entries = derive_all(shared, args.artifact)
    if args.write:
        old = json.loads(OUT.read_text()) if OUT.exists() else {}
        old.update(entries)  # keeps artifact-only entries when --artifact is not given
        OUT.write_text(json.dumps(dict(sorted(old.items())), indent=1) + "\n")
    for model, e in entries.items():
        first = {b: v[0] for b, v in e["phi"].items()}
        last = {b: v[-1] for b, v in e["phi"].items()}
        print(f"{model:18s} M0={e['ref_batch']:<5d} epochs={e['epochs']:<4d} phi first {first} last {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
