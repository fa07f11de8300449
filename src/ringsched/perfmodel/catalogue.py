"""Built-in model profiles on one NVIDIA H200, so jobs can name a model instead of a profile.

The numbers are literals printed by ``scripts/derive_catalogue.py`` from the measured data in
the shared folder (the data stays outside the repo); docs/catalogue.md gives the rules and
tests/test_catalogue.py re-derives them when the data is present. Times are seconds per
iteration of one GPU; ``compute_time_s(M) = base + per_sample * M``.
"""

from __future__ import annotations

from ringsched.errors import InputError
from ringsched.perfmodel.profiles import ModelProfile

GPU = "NVIDIA H200"
# Share of compute that is backward pass and can hide the all-reduce: a documented default
# (backward is about 2/3 of forward+backward FLOPs, less the last layers' gradients, which
# are ready only at the end); nothing here measures it per model.
OVERLAP = 0.6

_H200_FILE = "shared/profiles/h200-measured/profiles.json"
_POLLUX = "shared/profiles/pollux-measured"
# T4 -> H200 speed: ResNet-50 only (Pollux 'imagenet' on T4, 613.77 ms, vs H200 'resnet50' bf16,
# 55.79 ms, at batch 128). The CIFAR pair (23.27) is excluded: the H200 'resnet18_cifar10' is
# torchvision's ResNet-18 on 32x32 inputs, a ~15x cheaper network than Pollux's, and launch-bound.
T4_TO_H200_FACTOR = 11.0
# Converted bases are not allowed below the smallest fitted H200 compute_base_s (AlexNet's,
# 3.315 ms): per-iteration overhead does not shrink with a faster GPU.
H200_BASE_FLOOR_S = 3.315e-3


def _measured(model: str, batches: str) -> str:
    return (f"Measured on 1x {GPU}: {_H200_FILE}, model '{model}', bf16 rows, batch {batches}; "
            "constrained least-squares line of median_ms vs batch (coefficients >= 0); "
            "grad_bytes and max batch from the same rows (scripts/derive_catalogue.py).")


def _converted(folder: str, batches: str, grads: str) -> str:
    return (f"Measured on 1x NVIDIA T4 (Pollux, OSDI'21): {_POLLUX}/{folder}/placements.csv, "
            f"placement '1' rows, batch {batches}; least-squares line of step_time - sync_time; "
            f"per-sample time divided by the T4->H200 factor {T4_TO_H200_FACTOR} (ResNet-50 "
            f"measured on both, batch 128); base = max(T4 base / {T4_TO_H200_FACTOR}, H200 floor "
            f"{H200_BASE_FLOOR_S * 1e3:.3f} ms = smallest fitted H200 base, AlexNet), because "
            f"per-iteration overhead does not shrink with a faster GPU (docs/catalogue.md). "
            f"{grads}")


def _p(name: str, description: str, base: float, per_sample: float, grad_bytes: int,
       default_bsz: int, max_bsz: int, source: str) -> ModelProfile:
    return ModelProfile(name=name, description=description, compute_base_s=base,
                        compute_per_sample_s=per_sample, grad_bytes=grad_bytes,
                        default_local_bsz=default_bsz, max_local_bsz=max_bsz, gpu=GPU,
                        precision="bf16", source=source, overlap_fraction=OVERLAP)


_PROFILES = [
    _p("resnet18_cifar10", "ResNet-18 (torchvision) on 32x32 CIFAR-10 images",
       9.383e-3, 0.0, 44_726_568, 128, 256,
       _measured("resnet18_cifar10", "32/64/128/256") + " Launch-bound on H200 over the "
       "measured range: the fitted slope is negative, so the line is flat at the mean."),
    _p("resnet18", "ResNet-18 on 224x224 ImageNet images",
       6.040e-3, 1.311e-4, 46_758_048, 64, 128, _measured("resnet18", "16/32/64/128")),
    _p("resnet50", "ResNet-50 on 224x224 ImageNet images",
       1.451e-2, 3.078e-4, 102_228_128, 64, 128, _measured("resnet50", "16/32/64/128")),
    _p("resnet101", "ResNet-101 on 224x224 ImageNet images",
       1.802e-2, 5.574e-4, 178_196_640, 32, 64, _measured("resnet101", "16/32/64")),
    _p("vgg16", "VGG-16 on 224x224 ImageNet images",
       4.198e-3, 4.064e-4, 553_430_176, 64, 128, _measured("vgg16", "16/32/64/128")),
    _p("alexnet", "AlexNet on 224x224 ImageNet images",
       3.315e-3, 2.262e-5, 244_403_360, 128, 256, _measured("alexnet", "32/64/128/256")),
    _p("inception_v3", "Inception-v3 on 299x299 ImageNet images",
       2.945e-2, 5.608e-4, 95_338_272, 32, 64, _measured("inception_v3", "16/32/64")),
    _p("densenet121", "DenseNet-121 on 224x224 ImageNet images",
       5.332e-2, 2.580e-4, 31_915_424, 32, 64, _measured("densenet121", "16/32/64")),
    _p("mobilenet_v2", "MobileNet-v2 on 224x224 ImageNet images",
       1.292e-2, 3.367e-4, 14_019_488, 64, 128, _measured("mobilenet_v2", "32/64/128")),
    _p("lstm_lm", "2-layer 650-unit LSTM language model (WikiText-2 vocab 33,278, seq 35)",
       6.149e-3, 2.960e-5, 200_260_312, 40, 80, _measured("lstm_lm_wikitext2", "20/40/80")),
    _p("transformer", "Transformer base seq2seq (d=512, 6+6 layers, seq 64, vocab 10k)",
       5.434e-2, 0.0, 217_562_176, 64, 128,
       _measured("transformer_base", "32/64/128") + " bf16 medians fall with batch "
       "(55.8, 64.4, 42.8 ms; noisy), so the fitted slope is negative and the line is flat "
       "at the mean; treat as uncertain."),
    _p("bert_base", "BERT-base sequence classification (seq 128)",
       2.806e-2, 1.661e-4, 437_935_112, 32, 64, _measured("bert_base_seq128", "16/32/64")),
    _p("gpt2_small", "GPT-2 small language model (124M parameters, seq 512)",
       2.125e-2, 2.537e-3, 497_759_232, 8, 16, _measured("gpt2_small_seq512", "4/8/16")),
    _p("ncf", "Neural collaborative filtering (NeuMF) on MovieLens-1M, as in Pollux",
       3.315e-3, 3.924e-8, 6_410_628, 256, 32768,
       _converted("ncf", "32..32768", "grad_bytes = 4 x 1,602,657 parameters: NeuMF-end, "
                  "32 factors, 3 MLP layers (AdaptDL benchmark/models/ncf) on MovieLens-1M "
                  "with 6,040 users and 3,706 items (He et al., WWW'17, Table 1). Default "
                  "batch 256 is the benchmark's --batch_size. The T4 base (7.35 ms) / 11.0 = "
                  "0.67 ms is below the H200 floor, so the base is the floor (3.315 ms); "
                  "NCF time is almost all per-iteration overhead, so treat it as uncertain.")),
    _p("yolov3", "YOLOv3 (Darknet-53) on PASCAL VOC, as in Pollux",
       1.967e-2, 2.209e-3, 246_504_196, 8, 16,
       _converted("yolov3", "4..16", "grad_bytes = 4 x 61,626,049 parameters: YOLOv3 has "
                  "61,949,149 with the 80-class COCO head (ultralytics/yolov3 model summary); "
                  "the 20-class VOC head has 323,100 fewer. Default batch 8 is the benchmark "
                  "config's BATCH_SIZE; max 16 is the largest measured on the 16 GB T4. T4 base "
                  "216.4 ms / 11.0 = 19.67 ms is above the H200 floor, so it is kept.")),
    _p("deepspeech2", "DeepSpeech2 (2 conv + 5 bidirectional GRU-800) speech recognition, "
       "as in Pollux; ESTIMATED, not measured",
       1.802e-2, 5.584e-4, 164_751_872, 20, 80,
       "ESTIMATE, no measurement: grad_bytes = 4 x 41,187,968 parameters counted from the "
       "AdaptDL DeepSpeech2 benchmark (benchmark/models/deepspeech2: 2 conv layers, 5 "
       "bidirectional GRU layers of 800 units, 161 spectrogram bins, 29 labels). Compute: "
       "~7.81 G forward multiply-adds per ~3 s utterance (assumed length), about ResNet-101's "
       "7.80 (torchvision); so the ResNet-101 H200 bf16 line with per-sample time scaled by "
       "7.81/7.80. Batch 20 default and 80 max are the benchmark's --batch-size and "
       "local_bsz_bounds. Recurrent layers usually run below conv efficiency, so real time "
       "is likely higher."),
]

CATALOGUE: dict[str, ModelProfile] = {p.name: p for p in _PROFILES}

# Other spellings users write (matched case-insensitively, ignoring '-', '_', ' ' and '.'),
# including the measured-model names of profiles.json and the Pollux trace names.
ALIASES: dict[str, str] = {
    "resnet18-cifar": "resnet18_cifar10",
    "cifar10": "resnet18_cifar10",
    "imagenet": "resnet50",
    "vgg-16": "vgg16", "inception": "inception_v3", "googlenet-v3": "inception_v3",
    "densenet": "densenet121", "mobilenet": "mobilenet_v2",
    "lstm": "lstm_lm", "lstm_lm_wikitext2": "lstm_lm", "lstm-lm": "lstm_lm",
    "transformer_base": "transformer", "transformer-base": "transformer",
    "bert": "bert_base", "bert-base": "bert_base", "bert_base_seq128": "bert_base",
    "gpt2": "gpt2_small", "gpt-2": "gpt2_small", "gpt2_small_seq512": "gpt2_small",
    "neumf": "ncf", "yolo": "yolov3", "yolo-v3": "yolov3",
    "ds2": "deepspeech2", "deepspeech": "deepspeech2", "deep-speech-2": "deepspeech2",
}


def _key(name: str) -> str:
    """Canonical spelling for lookup: lower case without separators ('ResNet-50' -> 'resnet50')."""
    return "".join(ch for ch in name.lower() if ch not in "-_ .")


_LOOKUP: dict[str, str] = {_key(n): n for n in CATALOGUE}
_LOOKUP.update({_key(a): n for a, n in ALIASES.items()})


def profile_names() -> list[str]:
    """Catalogue names, sorted (aliases excluded)."""
    return sorted(CATALOGUE)


def get_profile(name: str) -> ModelProfile:
    """The profile for a catalogue name or alias; InputError (field 'model') if unknown."""
    found = _LOOKUP.get(_key(name))
    if found is None:
        raise InputError(f"unknown model '{name}'; known: {', '.join(profile_names())}",
                         field="model")
    return CATALOGUE[found]
