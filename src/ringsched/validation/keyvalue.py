"""The ``HEAD[,key=value...]`` grammar of cluster, trace, policy and objective specs.

``key_values(items, known, what=, field=)`` turns the ``key=value`` items into a dict of
stripped strings, refusing an item without ``=``, an empty or unknown key and a key given
twice (no "last one wins"). Typing and bounds are the caller's (``bounds.LIMITS``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ringsched.errors import InputError


def key_values(items: Iterable[str], known: Iterable[str], *, what: str, field: str) -> dict[str, str]:
    known = list(known)
    out: dict[str, str] = {}
    for raw in items:
        item = raw.strip()
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise InputError(f"{what}: {item!r} is not key=value; keys: {', '.join(known) or 'none'}", field=field)
        if key not in known:
            raise InputError(f"{what}: unknown option {key!r}; known: {', '.join(known) or 'none'}", field=field)
        if key in out:
            raise InputError(f"{what}: option {key!r} given twice", field=field)
        out[key] = value.strip()
    return out
