"""The range of every number a user gives, in one table (``LIMITS``), and the checks.

A ``Bound`` is an interval, open or closed at its low end, optionally of whole numbers. The
limits are wide enough for every real trace and cluster (docs/traces.md, docs/cluster.md give
the reasons) and tight enough that no accepted value overflows int64, makes a time or a rate
lose its precision, or sends the simulator into billions of events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import AfterValidator, Strict

from ringsched.errors import InputError


@dataclass(frozen=True)
class Bound:
    """``lo <= v <= hi`` (``lo < v`` when ``lo_open``), finite, whole when ``integer``."""

    lo: float
    hi: float
    integer: bool = False
    lo_open: bool = False
    unit: str = ""

    def describe(self) -> str:
        u = f" {self.unit}" if self.unit else ""
        if self.integer:
            return f"a whole number in {_num(self.lo)}..{_num(self.hi)}{u}"
        left = "(" if self.lo_open else "["
        return f"a finite number in {left}{_num(self.lo)}, {_num(self.hi)}]{u}"

    def bad(self, values) -> np.ndarray:
        """True where a value is out of bounds (NaN and infinities included)."""
        v = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore"):
            low = v <= self.lo if self.lo_open else v < self.lo
            out = ~np.isfinite(v) | low | (v > self.hi)
            if self.integer:
                out |= np.isfinite(v) & (v != np.round(v))
        return out

    def problem(self, value) -> str | None:
        """Why ``value`` is refused, or None."""
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            return f"must be {self.describe()}, got {value!r}"
        if isinstance(value, int) and abs(value) > 2**63:  # beyond float's exact range: refuse as is
            return f"must be {self.describe()}, got {value}"
        if bool(self.bad([float(value)])[0]):
            return f"must be {self.describe()}, got {_shown(value)}"
        return None

    def check(self, value, *, field: str, file: str | None = None, row: int | None = None, what: str = ""):
        """``value`` (int for whole bounds) or InputError naming file, row and field; ``what``
        starts the message (``"synthetic option load"``)."""
        why = self.problem(value)
        if why:
            raise InputError(f"{what} {why}" if what else why, file=file, row=row, field=field)
        return int(value) if self.integer else float(value)

    def parse(self, text: str, *, field: str, file: str | None = None, row: int | None = None, what: str = ""):
        """A number written as text (``"1e3"``, ``" 8 "``), checked."""
        try:
            v = float(str(text).strip())
        except ValueError:
            why = f"must be {self.describe()}, got {str(text).strip()!r}"
            raise InputError(f"{what} {why}" if what else why, file=file, row=row, field=field) from None
        if self.integer and math.isfinite(v) and v == round(v) and abs(v) < 2**53:
            v = int(v)
        return self.check(v, field=field, file=file, row=row, what=what)

    def scaled(self, factor: float, unit: str) -> "Bound":
        """The same bound in another unit (``factor`` = new units per old unit)."""
        return Bound(self.lo * factor, self.hi * factor, self.integer, self.lo_open, unit)

    def pydantic(self, kind: type):
        """A pydantic field type: strict ``kind`` (no bool, no text), then this bound."""
        def after(v):
            why = self.problem(v)
            if why:
                raise ValueError(why)
            return v
        return Annotated[kind, Strict(), AfterValidator(after)]


def _num(v: float) -> str:
    if v == int(v) and (abs(v) < 1e7 or (abs(v) < 1e16 and v != 10 ** round(math.log10(abs(v))))):
        return f"{int(v):,}"
    return f"{v:g}"


def _shown(v) -> str:
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


# The limits. Times are seconds; a real trace spans months (Philly 9.4e6 s, Alibaba 1.3e7 s).
YEAR_S = 365.25 * 86_400
LIMITS: dict[str, Bound] = {
    # traces and jobs
    "time_s": Bound(0, 1e9, unit="s"),                     # submissions: ~31 years from the first
    "duration_s": Bound(0, 1e9, unit="s"),                 # 0 = dropped by the loaders
    "work_samples": Bound(0, 1e15, lo_open=True),
    "job_gpus": Bound(1, 65_536, integer=True),
    "pod_gpus": Bound(0, 65_536, integer=True),            # Alibaba: 0 = a CPU-only pod
    "gpu_milli": Bound(0, 1000),                           # thousandths of one GPU
    "local_bsz": Bound(1, 1_000_000, integer=True),
    "global_bsz": Bound(1, 1_000_000_000, integer=True),
    "steps": Bound(1, 1e15, integer=True),
    "jobs": Bound(1, 5_000_000, integer=True),
    # the synthetic generator
    "load": Bound(1e-3, 1e3),
    "rate_per_h": Bound(1e-3, 1e7),
    "diurnal": Bound(0, 0.999),
    "tenants": Bound(1, 100, integer=True),
    "zipf": Bound(0, 100),
    "max_duration_s": Bound(1, 1e9, unit="s"),
    "time_scale": Bound(1e-3, 1e4),                        # a generated shape's durations divided by it
    # clusters
    "servers": Bound(1, 100_000, integer=True),
    "server_gpus": Bound(1, 1024, integer=True),
    "total_gpus": Bound(1, 1_048_576, integer=True),
    "racks": Bound(1, 100_000, integer=True),
    "bandwidth_Bps": Bound(1e3, 1e15, unit="bytes/s"),
    "latency_s": Bound(0, 1.0, unit="s"),
    "reduction_Bps": Bound(1e6, 1e15, unit="bytes/s"),
    "oversub": Bound(0.01, 1000),
    # jobs files
    "epochs": Bound(0, 1e6, lo_open=True),
    "job_samples": Bound(1, 1e15, integer=True),
    "job_workers": Bound(1, 4096, integer=True),
    "job_seed": Bound(0, 2**31 - 1, integer=True),
    "utility": Bound(0, 1e12),
    "utility_rate": Bound(0, 1e12),
    # measured step times
    "nodes": Bound(1, 100_000, integer=True),
    "replicas": Bound(1, 1_048_576, integer=True),
    "step_time_s": Bound(1e-9, 1e6, unit="s"),
    "sync_time_s": Bound(0, 1e6, unit="s"),
    # command-line options
    "seed": Bound(0, 2**32 - 1, integer=True),
    "slot_s": Bound(0.1, 1e6, unit="s"),
    "restart_s": Bound(0, 1e6, unit="s"),
    "checkpoint_s": Bound(1, 1e7, unit="s"),
    "mtbf_h": Bound(0.01, 1e7, unit="h"),
    "mttr_h": Bound(1e-3, 1e5, unit="h"),
    "horizon_s": Bound(0, 1e10, lo_open=True, unit="s"),
    "load_factor": Bound(1e-3, 1e3),
    "instances": Bound(1, 1_000_000, integer=True),
    "instance_jobs": Bound(2, 12, integer=True),            # optimum-check: most jobs of an instance (the MILP's size)
    "instance_slots": Bound(6, 24, integer=True),           # ... and most slots
    "time_limit_s": Bound(0.01, 1e5, lo_open=False, unit="s"),
    "seeds_count": Bound(1, 10_000, integer=True),
    "confidence": Bound(0.5, 0.999),
    "workers": Bound(1, 1024, integer=True),                # worker processes
    "train_frac": Bound(0.01, 0.99),
    "priority": Bound(-1000, 1000, integer=True),          # a submission's Slurm-style priority
}

# Bounds of file sizes and structure.
MAX_YAML_BYTES = 1 << 20          # a cluster or jobs file: 1 MiB
MAX_YAML_NODES = 200_000          # values after alias expansion
MAX_YAML_DEPTH = 64               # nested mappings and lists (PyYAML's composer recurses per level)
MAX_TABLE_BYTES = 4 << 30         # a trace or step-time CSV: 4 GiB
