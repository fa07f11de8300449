"""Typed ``key=value`` options of the ``NAME[,key=value...]`` specs (objectives, policies)."""

from __future__ import annotations

import math

from ringsched.errors import InputError

_TYPES = {"float": float, "int": int, "bool": bool, "str": str}


def coerce(text: str, typ, *, key: str, owner: str, field: str):
    """``text`` as the dataclass field type ``typ`` (a type or its annotation string, ``X | None``
    allowed); anything else is an InputError naming ``owner`` and ``key``."""
    if isinstance(typ, type):
        t = typ
    else:
        t = _TYPES.get(str(typ).replace("| None", "").replace("Optional[", "").strip(" ]"), str)
    try:
        if t is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        v = t(text)
        if t is float and not math.isfinite(v):
            raise ValueError
        return v
    except ValueError:
        raise InputError(f"{owner}: {key}={text!r} is not a valid {t.__name__}", field=field) from None
