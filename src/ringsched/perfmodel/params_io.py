"""Parameter dataclasses <-> plain dicts (the JSON of `ringsched model fit`), and that JSON read
strictly: no repeated keys, every parameter a finite number (NaN and Infinity refused by name)."""

from __future__ import annotations

import json
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
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def non_finite(params: DictParams) -> list[str]:
    """Names of the parameters that are not finite (a diverged fit)."""
    return [k for k, v in params.to_dict().items() if not _finite(v)]


def _no_repeats(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {k!r} appears twice")
        out[k] = v
    return out


def read_params_json(path: Path) -> dict:
    """The document of a parameter file; InputError (naming the file) for anything not plain JSON."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read file ({getattr(e, 'strerror', None) or e})", file=str(path)) from None
    try:
        return json.loads(text, object_pairs_hook=_no_repeats)  # NaN/Infinity: refused by from_dict
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON ({e.msg})", file=str(path), row=e.lineno) from None
    except ValueError as e:
        raise InputError(f"not valid JSON ({e})", file=str(path)) from None
