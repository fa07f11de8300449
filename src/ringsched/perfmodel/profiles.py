"""Model profiles: what the performance model needs to know about one kind of training job."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelProfile:
    """Compute and communication facts of one model, on the catalogue's reference GPU.

    Compute time per iteration of one worker is ``compute_base_s + compute_per_sample_s * M``
    for a per-worker mini-batch M (a linear fit of measured iteration times). ``grad_bytes``
    is what one ring all-reduce moves per iteration (fp32 gradients). ``source`` says where
    every number comes from.
    """

    name: str
    description: str
    compute_base_s: float
    compute_per_sample_s: float
    grad_bytes: int
    default_local_bsz: int
    max_local_bsz: int
    gpu: str
    precision: str
    source: str
    overlap_fraction: float = 0.5

    def __post_init__(self) -> None:
        if self.compute_base_s < 0 or self.compute_per_sample_s < 0:
            raise ValueError(f"{self.name}: compute times must be >= 0")
        if self.compute_base_s + self.compute_per_sample_s <= 0:
            raise ValueError(f"{self.name}: compute time must be positive")
        if self.grad_bytes <= 0:
            raise ValueError(f"{self.name}: grad_bytes must be > 0")
        if not 1 <= self.default_local_bsz <= self.max_local_bsz:
            raise ValueError(f"{self.name}: need 1 <= default_local_bsz <= max_local_bsz")
        if not 0.0 <= self.overlap_fraction <= 1.0:
            raise ValueError(f"{self.name}: overlap_fraction must lie in [0, 1]")

    def compute_time_s(self, local_bsz: float) -> float:
        """Single-worker seconds per iteration at per-worker batch ``local_bsz``."""
        return self.compute_base_s + self.compute_per_sample_s * local_bsz
