"""Derive the numbers of the built-in model catalogue (src/ringsched/perfmodel/catalogue.py).

Usage: python scripts/derive_catalogue.py

Reads the measured data in the shared folder (never copied into the repo) and prints, per
model, the linear compute-time fit, batch range and gradient bytes that catalogue.py carries
as literals. The shared folder is ``<repo>/../shared`` unless env RINGSCHED_SHARED says
otherwise; without it the script says so and exits 0, so a checkout without the data still
works. The test suite imports the functions here to re-check the catalogue literals.

Rules (docs/catalogue.md explains why):
  * H200 models: least-squares line of bf16 median_ms vs per-GPU batch, with both coefficients
    constrained >= 0 (if the free fit has a negative slope the line is flat at the mean; if it
    has a negative intercept the line goes through the origin).
  * NCF, YOLOv3 (measured on NVIDIA T4 only): the same fit of the single-GPU (placement "1")
    compute time step_time - sync_time. The per-sample slope is divided by the T4->H200
    factor; the base (per-iteration overhead, which a faster GPU does not shrink in
    proportion) becomes max(T4 base / factor, H200 floor), where the H200 floor is the
    smallest fitted compute_base_s among the H200-measured models.
  * T4->H200 factor: at the largest H200 bf16 batch inside the T4 batch range, T4 compute
    time (linearly interpolated between the two nearest T4 batches) / H200 median, for the
    one pair that is the same network on both machines: Pollux `imagenet` (ResNet-50) vs
    H200 `resnet50`. The CIFAR pair (Pollux `cifar10` vs H200 `resnet18_cifar10`) is
    computed and printed for information only and excluded: the H200 model is torchvision's
    ResNet-18 on 32x32 inputs, a different, ~15x cheaper network than Pollux's CIFAR
    ResNet-18, and launch-bound at the compared batch.
  * DeepSpeech2: no measurement; parameters counted from the AdaptDL benchmark model and
    compute time scaled by forward MACs from ResNet-101 (a measured model of nearly equal MACs).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from pathlib import Path

# Measured-model name in profiles.json -> catalogue name.
H200_MODELS = {
    "resnet18_cifar10": "resnet18_cifar10",
    "resnet18": "resnet18",
    "resnet50": "resnet50",
    "resnet101": "resnet101",
    "vgg16": "vgg16",
    "alexnet": "alexnet",
    "inception_v3": "inception_v3",
    "densenet121": "densenet121",
    "mobilenet_v2": "mobilenet_v2",
    "lstm_lm_wikitext2": "lstm_lm",
    "transformer_base": "transformer",
    "bert_base_seq128": "bert_base",
    "gpt2_small_seq512": "gpt2_small",
}
PRECISION = "bf16"  # the H200 sweep has bf16 and fp32 rows; the catalogue uses bf16

# Pollux (T4) model folder -> H200 measured model, for the speed factor. Only pairs in
# FACTOR_USED enter the factor; the others are computed and printed for information, with
# the reason they are excluded.
FACTOR_PAIRS = {"cifar10": "resnet18_cifar10", "imagenet": "resnet50"}
FACTOR_USED = {"imagenet"}
FACTOR_EXCLUDED = {
    "cifar10": "different network: H200 'resnet18_cifar10' is torchvision's ResNet-18 on "
               "32x32 inputs (~15x fewer MACs than Pollux's CIFAR ResNet-18, 3x3 stem) and "
               "launch-bound",
}

# Converted / estimated models: typical per-GPU batch and batch bound, from the Pollux
# benchmark jobs (petuum/adaptdl, benchmark/models/*): NCF --batch_size default 256,
# YOLOv3 cfg BATCH_SIZE 8, DeepSpeech2 --batch-size=20 with local_bsz_bounds=(10, 80).
NCF_DEFAULT_BSZ = 256
YOLOV3_DEFAULT_BSZ = 8
DS2_DEFAULT_BSZ, DS2_MAX_BSZ = 20, 80

# NCF (NeuMF-end, factor_num 32, 3 MLP layers, as in the AdaptDL/Pollux NCF benchmark) on
# MovieLens-1M: 6,040 users, 3,706 items (He et al., WWW 2017, Table 1).
NCF_USERS, NCF_ITEMS, NCF_FACTORS, NCF_LAYERS = 6040, 3706, 32, 3

# YOLOv3 (Darknet-53, 80 COCO classes): 61,949,149 trainable parameters (ultralytics/yolov3
# model summary; the Keras port reports the same). Pollux trains on PASCAL VOC (20 classes),
# so the three 1x1 detection convs (inputs 1024/512/256 channels) output 3*(5+20)=75
# channels instead of 255.
YOLOV3_COCO_PARAMS = 61_949_149

# DeepSpeech2 as in the AdaptDL benchmark (benchmark/models/deepspeech2/{model,train}.py):
# 2 conv layers (32 ch), 5 bidirectional GRU layers of 800 units, 161 spectrogram bins
# (16 kHz, 20 ms window), 29 output labels, 10 ms frame stride. Utterance length is an
# assumption: ~3 s (CMU ARCTIC prompts, the Pollux dataset, are short sentences).
DS2_HIDDEN, DS2_LAYERS, DS2_FREQ, DS2_LABELS = 800, 5, 161, 29
DS2_UTTERANCE_S = 3.0
# torchvision's listed cost of ResNet-101 at 224x224 ("GFLOPS" 7.80, which are multiply-adds).
RESNET101_GMACS = 7.80
DS2_REFERENCE = "resnet101"


def shared_dir() -> Path:
    """The shared data folder: env RINGSCHED_SHARED, else <repo>/../shared."""
    env = os.environ.get("RINGSCHED_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".." / "shared"


def h200_json(shared: Path) -> Path:
    return shared / "profiles" / "h200-measured" / "profiles.json"


def pollux_dir(shared: Path) -> Path:
    return shared / "profiles" / "pollux-measured"


def fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y on x with both >= 0.

    Compute time cannot fall with batch nor be negative at batch 0, so the constrained
    optimum is used: flat at the mean when the free slope is negative, through the origin
    when the free intercept is negative.
    """
    n = len(points)
    if n < 2:
        raise ValueError("need at least two points to fit a line")
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    intercept = my - slope * mx
    if slope < 0:
        return my, 0.0
    if intercept < 0:
        return 0.0, sum(x * y for x, y in points) / sum(x * x for x, _ in points)
    return intercept, slope


def load_h200(path: Path) -> dict[str, list[dict]]:
    """bf16 rows of profiles.json grouped by measured model name, sorted by batch."""
    rows = json.loads(path.read_text())["rows"]
    out: dict[str, list[dict]] = {}
    for r in rows:
        if r["precision"] == PRECISION:
            out.setdefault(r["model"], []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r["batch"])
    return out


def h200_profiles(path: Path) -> dict[str, dict]:
    """Per catalogue name: fitted base/per-sample seconds, batches, grad bytes, params."""
    out = {}
    for measured, rows in load_h200(path).items():
        base_ms, slope_ms = fit_line([(r["batch"], r["median_ms"]) for r in rows])
        batches = [r["batch"] for r in rows]
        out[H200_MODELS[measured]] = {
            "measured_name": measured,
            "compute_base_s": base_ms / 1e3,
            "compute_per_sample_s": slope_ms / 1e3,
            "batches": batches,
            "medians_s": [r["median_ms"] / 1e3 for r in rows],
            # Typical, not memory-maximal: the second-largest measured batch.
            "default_local_bsz": batches[-2] if len(batches) > 1 else batches[0],
            "max_local_bsz": batches[-1],
            "grad_bytes": rows[0]["grad_bytes"],
            "params": rows[0]["params"],
        }
    return out


def pollux_single_gpu(model_dir: Path) -> list[tuple[int, float]]:
    """(local_bsz, compute seconds) of one-GPU rows: step_time minus sync_time."""
    pts = []
    with open(model_dir / "placements.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["placement"] == "1":
                pts.append((int(r["local_bsz"]), float(r["step_time"]) - float(r["sync_time"])))
    return sorted(pts)


def interpolate(points: list[tuple[int, float]], x: float) -> float:
    """Linear interpolation of sorted (x, y) points at x inside their range."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    raise ValueError(f"{x} outside measured range {points[0][0]}..{points[-1][0]}")


def t4_to_h200_factor(shared: Path) -> tuple[float, dict[str, dict]]:
    """How many times faster one H200 (bf16) computes than one T4 (Pollux setup).

    Per pair: the largest H200 bf16 batch within the T4 batch range (largest, because small
    H200 batches are launch-bound); ratio = T4 compute time there / H200 median. Returns the
    geometric mean over the pairs in FACTOR_USED (only ResNet-50) and the details of every
    pair, each with "used" and, if excluded, "excluded_because".
    """
    h200 = load_h200(h200_json(shared))
    pairs = {}
    for t4_name, h_name in FACTOR_PAIRS.items():
        t4 = pollux_single_gpu(pollux_dir(shared) / t4_name)
        inside = [r for r in h200[h_name] if t4[0][0] <= r["batch"] <= t4[-1][0]]
        row = inside[-1]
        t4_s = interpolate(t4, row["batch"])
        h_s = row["median_ms"] / 1e3
        pairs[t4_name] = {"h200_model": h_name, "batch": row["batch"], "t4_s": t4_s,
                          "h200_s": h_s, "ratio": t4_s / h_s, "used": t4_name in FACTOR_USED,
                          "excluded_because": FACTOR_EXCLUDED.get(t4_name, "")}
    used = [p["ratio"] for p in pairs.values() if p["used"]]
    factor = math.exp(sum(math.log(r) for r in used) / len(used))
    return factor, pairs


def h200_base_floor(shared: Path) -> tuple[float, str]:
    """(seconds, catalogue name) of the smallest fitted compute_base_s among H200 models.

    No iteration on the H200 costs less than this fixed part, so a converted base is not
    allowed to fall below it.
    """
    fits = h200_profiles(h200_json(shared))
    name = min(fits, key=lambda n: fits[n]["compute_base_s"])
    return fits[name]["compute_base_s"], name


def ncf_params() -> int:
    """NeuMF-end parameters: GMF and MLP embeddings, MLP tower, predict layer."""
    f, L = NCF_FACTORS, NCF_LAYERS
    emb = (NCF_USERS + NCF_ITEMS) * (f + f * 2 ** (L - 1))
    mlp = sum((f * 2 ** (L - i)) * (f * 2 ** (L - i) // 2) + f * 2 ** (L - i) // 2
              for i in range(L))
    return emb + mlp + (2 * f + 1)


def yolov3_voc_params() -> int:
    """YOLOv3 with a 20-class head: COCO count minus the (255-75)-channel head difference."""
    d_out = 3 * (5 + 80) - 3 * (5 + 20)
    return YOLOV3_COCO_PARAMS - d_out * (1024 + 512 + 256) - d_out * 3


def _ds2_dims() -> tuple[int, int]:
    """(GRU input size, frames after the conv stack) for one utterance."""
    freq = (DS2_FREQ + 2 * 20 - 41) // 2 + 1      # conv1 (41x11, stride 2x2)
    freq = (freq + 2 * 10 - 21) // 2 + 1          # conv2 (21x11, stride 2x1)
    frames = int(DS2_UTTERANCE_S / 0.01) + 1
    t = (frames + 2 * 5 - 11) // 2 + 1            # only conv1 strides in time
    return 32 * freq, t


def ds2_params() -> int:
    """Trainable parameters of the AdaptDL DeepSpeech2 (BatchNorm affine terms included)."""
    rnn_in, _ = _ds2_dims()
    h = DS2_HIDDEN
    conv = (32 * 41 * 11 + 32) + (32 * 32 * 21 * 11 + 32) + 2 * (2 * 32)

    def gru(n_in: int) -> int:  # one bidirectional GRU layer: 3 gates, 2 biases each
        return 2 * 3 * h * (n_in + h + 2)

    rnns = gru(rnn_in) + (DS2_LAYERS - 1) * (gru(h) + 2 * h)  # later layers have a BatchNorm
    fc = 2 * h + h * DS2_LABELS
    return conv + rnns + fc


def ds2_gmacs() -> float:
    """Forward multiply-adds (G) of one ~3 s utterance."""
    rnn_in, t = _ds2_dims()
    h = DS2_HIDDEN
    f1 = (DS2_FREQ + 2 * 20 - 41) // 2 + 1
    f2 = rnn_in // 32
    conv = f1 * t * 32 * 41 * 11 + f2 * t * 32 * 32 * 21 * 11
    gru = 2 * t * 3 * h * (rnn_in + h) + (DS2_LAYERS - 1) * 2 * t * 3 * h * (h + h)
    return (conv + gru + t * h * DS2_LABELS) / 1e9


def converted_profiles(shared: Path) -> tuple[float, dict[str, dict]]:
    """NCF and YOLOv3 from T4 measurements, DeepSpeech2 estimated; plus the factor.

    Converted: per-sample = T4 slope / factor; base = max(T4 base / factor, H200 floor).
    """
    factor, _ = t4_to_h200_factor(shared)
    floor, _ = h200_base_floor(shared)
    out = {}
    for name, params, default in (("ncf", ncf_params(), NCF_DEFAULT_BSZ),
                                  ("yolov3", yolov3_voc_params(), YOLOV3_DEFAULT_BSZ)):
        pts = pollux_single_gpu(pollux_dir(shared) / name)
        base, slope = fit_line(pts)
        out[name] = {"compute_base_s": max(base / factor, floor),
                     "compute_per_sample_s": slope / factor,
                     "t4_base_s": base, "t4_per_sample_s": slope,
                     "base_floored": base / factor < floor,
                     "batches": [b for b, _ in pts], "default_local_bsz": default,
                     "max_local_bsz": pts[-1][0], "params": params, "grad_bytes": 4 * params}
    ref = h200_profiles(h200_json(shared))[DS2_REFERENCE]
    scale = ds2_gmacs() / RESNET101_GMACS
    out["deepspeech2"] = {"compute_base_s": ref["compute_base_s"],
                          "compute_per_sample_s": ref["compute_per_sample_s"] * scale,
                          "mac_scale": scale, "default_local_bsz": DS2_DEFAULT_BSZ,
                          "max_local_bsz": DS2_MAX_BSZ, "params": ds2_params(),
                          "grad_bytes": 4 * ds2_params()}
    return factor, out


def main() -> int:
    shared = shared_dir()
    if not h200_json(shared).is_file():
        print(f"skipped: measured profiles not found under {shared.resolve()} "
              "(set RINGSCHED_SHARED to the shared folder)")
        return 0
    print(f"# H200 bf16 fits ({h200_json(shared)}); times in ms")
    print(f"{'name':18} {'base_ms':>8} {'per_sample_ms':>13} {'default':>7} {'max':>6} "
          f"{'grad_bytes':>11} {'params':>11}  batches")
    for name, p in h200_profiles(h200_json(shared)).items():
        print(f"{name:18} {p['compute_base_s'] * 1e3:8.4g} {p['compute_per_sample_s'] * 1e3:13.4g} "
              f"{p['default_local_bsz']:7d} {p['max_local_bsz']:6d} {p['grad_bytes']:11d} "
              f"{p['params']:11d}  {p['batches']}")
    factor, pairs = t4_to_h200_factor(shared)
    print("\n# T4 -> H200 speed factor (T4 compute / H200 bf16 median at the same batch)")
    for t4_name, p in pairs.items():
        tag = "USED" if p["used"] else f"EXCLUDED (information only: {p['excluded_because']})"
        print(f"{t4_name:9} vs {p['h200_model']:17} batch {p['batch']:4d}: "
              f"T4 {p['t4_s'] * 1e3:8.2f} ms / H200 {p['h200_s'] * 1e3:6.2f} ms = "
              f"{p['ratio']:.2f}  {tag}")
    used = [n for n, p in pairs.items() if p["used"]]
    print(f"factor (geometric mean of used pairs {used}) = {factor:.3f}")
    floor, floor_name = h200_base_floor(shared)
    print(f"H200 base floor (smallest fitted H200 compute_base_s, {floor_name}) = "
          f"{floor * 1e3:.4g} ms")
    _, conv = converted_profiles(shared)
    print("\n# converted (per-sample = T4 slope / factor; base = max(T4 base / factor, floor)) "
          "and estimated models; times in ms")
    for name, p in conv.items():
        extra = (f"T4 fit base {p['t4_base_s'] * 1e3:.4g} "
                 f"per-sample {p['t4_per_sample_s'] * 1e3:.4g}; base/factor "
                 f"{p['t4_base_s'] / factor * 1e3:.4g}"
                 f"{' < floor, floored' if p['base_floored'] else ' >= floor'}"
                 if "t4_base_s" in p else f"MAC scale vs {DS2_REFERENCE} {p['mac_scale']:.3f} "
                 f"({ds2_gmacs():.2f} GMACs)")
        print(f"{name:12} base {p['compute_base_s'] * 1e3:8.4g} per-sample "
              f"{p['compute_per_sample_s'] * 1e3:9.4g} default {p['default_local_bsz']:5d} "
              f"max {p['max_local_bsz']:5d} params {p['params']:10d} grad_bytes "
              f"{p['grad_bytes']:10d}  {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
