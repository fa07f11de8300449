"""GPU types: what a model computes on each kind of GPU (docs/catalogue.md, "GPU types").

A server has a GPU type (``Server.gpu``, default ``h200``). On a type, a model's step time
comes from, in order:

1. a **parameter file** for (type, model): the output of ``ringsched model fit`` (PARAMS.json,
   format ``ringsched-step-model/1``, ring model), i.e. compute *and* communication fitted on
   measurements of that type. Built in: ``gpu_profiles/t4/*.json``, fitted on Pollux's T4
   measurements (scripts/derive_gpu_types.py); more with ``--gpu-profiles DIR`` / env
   RINGSCHED_PROFILES (``DIR/<type>/<model>.json``; a new directory name is a new type);
2. else the catalogue profile (H200 numbers) with its compute time multiplied by the type's
   ``compute_factor`` and communication from the server's bandwidths (``perfmodel/physical.py``).

A ring runs on one type: type-aware policies place a job on servers of one type, and a ring
that spans types anyway runs at the pace of its slowest type (``SpeedModel``), since every
all-reduce step waits for the slowest worker.
"""

from __future__ import annotations

import dataclasses
from ringsched.perfmodel.params_io import read_params_json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ringsched.cluster.model import GPU_LINKS_BPS
from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS
from ringsched.perfmodel.catalogue import T4_TO_H200_FACTOR, get_profile
from ringsched.perfmodel.profiles import ModelProfile
from ringsched.perfmodel.ring import RingParams

_BUILTIN = Path(__file__).with_name("gpu_profiles")


@dataclass(frozen=True)
class GpuType:
    """One kind of GPU server: speed relative to the catalogue's H200 and default links."""

    name: str
    description: str
    compute_factor: float  # compute time / H200 compute time, for models not measured on it
    intra_Bps: float  # default per-GPU intra-server all-reduce bandwidth, bytes/s
    nic_Bps: float  # default NIC bandwidth per server, bytes/s each direction
    source: str


GPU_TYPES: dict[str, GpuType] = {t.name: t for t in (
    GpuType("h200", "NVIDIA H200 (NVLink server), the catalogue's reference", 1.0, *GPU_LINKS_BPS["h200"],
            "catalogue measurements (profiles/h200-measured); links: docs/cluster.md defaults"),
    GpuType("t4", "NVIDIA T4 (PCIe server of 4, as in Pollux's testbed)", T4_TO_H200_FACTOR, *GPU_LINKS_BPS["t4"],
            "compute factor 11.0 = ResNet-50 T4 / H200 (docs/catalogue.md); links: the median over "
            "the six T4 fits of the effective all-reduce bandwidth they imply, grad_bytes / "
            "intra_transfer_s = 2.73 GB/s and grad_bytes / inter_transfer_s = 0.83 GB/s (NCCL over "
            "TCP, far below the NIC's line rate; docs/catalogue.md)"),
)}


@dataclass(frozen=True)
class TypedModel:
    """A model on a GPU type: fitted parameters, or a profile to build them from."""

    profile: ModelProfile
    fitted: RingParams | None
    max_local_bsz: int
    source: str


def _read_params(path: Path) -> tuple[RingParams, dict]:
    """A ``ringsched model fit --model ring`` output file (read without importing the fitter)."""
    doc = read_params_json(path)
    try:
        if not isinstance(doc, dict) or doc.get("format") != "ringsched-step-model/1":
            raise ValueError("missing format 'ringsched-step-model/1'")
        if doc.get("model") != "ring":
            raise ValueError(f"model must be 'ring' (model fit --model ring), got {doc.get('model')!r}")
        params = RingParams.from_dict(doc.get("params", {}))
    except (OSError, ValueError, TypeError) as e:
        raise InputError(f"not a usable parameter file ({e})", file=str(path)) from None
    if "max_local_bsz" in doc:
        LIMITS["local_bsz"].check(doc["max_local_bsz"], file=str(path), field="max_local_bsz")
    return params, doc


class GpuProfiles:
    """Parameter files by (GPU type, model): the built-in ones plus any ``--gpu-profiles DIR``."""

    def __init__(self, extra_dirs: tuple[str | Path, ...] = ()):
        self.files: dict[tuple[str, str], Path] = {}
        for root in (_BUILTIN, *map(Path, extra_dirs)):
            if root is not _BUILTIN and not root.is_dir():
                raise InputError("no such directory", file=str(root), field="profiles")
            for f in sorted(root.glob("*/*.json")):
                model = get_profile_name(f.stem, f)
                self.files[(f.parent.name.lower(), model)] = f
                if root is not _BUILTIN:  # a user's file is checked now, used or not
                    _cached_params(f)
        self.types = sorted(set(GPU_TYPES) | {g for g, _ in self.files})

    def check_type(self, gpu: str) -> None:
        if gpu not in self.types:
            raise InputError(f"unknown GPU type {gpu!r}; known: {', '.join(self.types)}", field="gpu")

    def model_on(self, model: str, gpu: str) -> TypedModel:
        """``model`` (a catalogue name) on GPU type ``gpu``."""
        base = get_profile(model)
        path = self.files.get((gpu, base.name))
        if path is not None:
            params, doc = _cached_params(path)
            bsz = int(doc.get("max_local_bsz", base.max_local_bsz))
            return TypedModel(base, params, bsz, doc.get("source", str(path)))
        t = GPU_TYPES.get(gpu)
        if t is None:
            raise InputError(f"no parameters for model {base.name} on GPU type {gpu!r}", field="model")
        if t.compute_factor == 1.0:
            return TypedModel(base, None, base.max_local_bsz, base.source)
        conv = dataclasses.replace(
            base, compute_base_s=base.compute_base_s * t.compute_factor,
            compute_per_sample_s=base.compute_per_sample_s * t.compute_factor, gpu=t.description,
            source=f"{base.source} Converted to {t.name}: compute x {t.compute_factor} ({t.source}).")
        return TypedModel(conv, None, base.max_local_bsz, conv.source)


def get_profile_name(stem: str, path: Path) -> str:
    try:
        return get_profile(stem).name
    except InputError:
        raise InputError(f"file name {stem!r} is not a catalogue model", file=str(path), field="model") from None


@cache
def _cached_params(path: Path) -> tuple[RingParams, dict]:
    return _read_params(path)


PROFILES_ENV = "RINGSCHED_PROFILES"  # folders of parameter files, separated by os.pathsep


def default_profiles() -> GpuProfiles:
    """The built-in parameter files plus the folders named by env RINGSCHED_PROFILES (set by
    ``use_profiles``; an environment variable so that worker processes see them too)."""
    return _profiles_for(tuple(d for d in os.environ.get(PROFILES_ENV, "").split(os.pathsep) if d))


def use_profiles(dirs) -> None:
    """Make every SpeedModel created from now on (in this process and its children) also read
    the parameter files in ``dirs`` (``--gpu-profiles DIR``); checks them now."""
    dirs = tuple(str(d) for d in dirs)
    _profiles_for(dirs)
    os.environ[PROFILES_ENV] = os.pathsep.join(dirs)


@cache
def _profiles_for(dirs: tuple[str, ...]) -> GpuProfiles:
    return GpuProfiles(dirs)
