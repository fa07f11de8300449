"""Parameter dataclasses <-> plain dicts (the JSON of `ringsched model fit`)."""

from __future__ import annotations

from dataclasses import asdict, fields


class DictParams:
    """Mixin for frozen parameter dataclasses: ``to_dict`` and a strict ``from_dict``."""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        return cls(**d)
