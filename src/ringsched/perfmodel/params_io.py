"""Parameter dataclasses <-> plain dicts (the JSON of `ringsched model fit`), and that JSON read
strictly: no repeated keys, every parameter a finite number (NaN and Infinity refused by name)."""

from __future__ import annotations

import math
from dataclasses import asdict, fields
from pathlib import Path

from ringsched.errors import InputError


class DictParams:
    """Mixin for frozen parameter dataclasses: ``to_dict`` and a strict ``from_dict``."""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        if not isinstance(d, dict):
            raise ValueError(f"params must be a mapping, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        for k, v in d.items():
            if not _finite(v):
                raise ValueError(f"parameter {k} must be a finite number (or a list of them), got {v!r}")
        return cls(**d)


def _finite(v) -> bool:
    """A finite number, None (an absent optional term) or a list/tuple of finite numbers."""
    if v is None:
        return True
    if isinstance(v, (list, tuple)):
        return all(_finite(x) and x is not None for x in v)
    if isinstance(v, int) and not isinstance(v, bool):
        return abs(v) <= 2**63  # beyond, float(v) overflows
    return isinstance(v, float) and math.isfinite(v)


def non_finite(params: DictParams) -> list[str]:
    """Names of the parameters that are not finite (a diverged fit)."""
    return [k for k, v in params.to_dict().items() if not _finite(v)]


def read_params_json(path: Path) -> dict:
    """The document of a parameter file; InputError (naming the file) for anything not plain JSON."""
    from ringsched.validation.files import read_json

    return read_json(path)  # NaN/Infinity: refused by from_dict, naming the parameter
