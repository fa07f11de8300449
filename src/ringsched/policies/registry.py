"""Name -> policy class, filled by a decorator on each policy module (no if/elif on names).

A policy is named by a spec ``NAME[:key=value[,key=value...]]``: the options are fields of the
class's ``Params`` dataclass (GADGET's ``GadgetParams``, OASiS' ``OasisParams``), e.g.
``gadget:admission=strict`` or ``gadget:pack_slack=0,retry_backoff=5``.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys

from ringsched.errors import InputError
from ringsched.specs import coerce

_REGISTRY: dict[str, type] = {}


def register(cls):
    """Class decorator: make the policy available under ``cls.name``."""
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"policy name {cls.name!r} missing or taken")
    _REGISTRY[cls.name] = cls
    return cls


def policy_names() -> list[str]:
    return sorted(_REGISTRY)


def policy_class(name: str) -> type:
    """The class registered under ``name`` (a spec's options are ignored); unknown names are an
    InputError listing the known ones."""
    name = name.partition(":")[0].strip()
    cls = _REGISTRY.get(name)
    if cls is None:
        raise InputError(f"unknown policy {name!r}; known: {', '.join(policy_names())}", field="policy")
    return cls


def policy_summary(name: str) -> str:
    """What ``ringsched policies`` says of a policy: the first paragraph of its class's docstring
    (or its module's), joined into one line."""
    cls = policy_class(name)
    doc = cls.__dict__.get("__doc__") or sys.modules[cls.__module__].__doc__ or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def parse_policy(spec: str) -> tuple[str, dict]:
    """``NAME[:key=value,...]`` -> (name, options), checked against the class's ``Params``."""
    name, _, rest = spec.strip().partition(":")
    cls = policy_class(name)
    opts: dict = {}
    items = [x.strip() for x in rest.split(",") if x.strip()]
    if items:
        params = getattr(cls, "Params", None)
        if params is None:
            raise InputError(f"policy {name} takes no options, got {rest!r}", field="policy")
        fields = {f.name: f for f in dataclasses.fields(params)}
        for item in items:
            key, eq, val = item.partition("=")
            key = key.strip()
            if not eq:
                raise InputError(f"policy {spec}: {item!r} is not key=value", field="policy")
            if key not in fields:
                close = difflib.get_close_matches(key, fields, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise InputError(f"policy {spec}: unknown option {key!r}{hint}; options: {', '.join(fields)}",
                                 field="policy")
            if key in opts:
                raise InputError(f"policy {spec}: option {key!r} given twice", field="policy")
            opts[key] = coerce(val.strip(), fields[key].type, key=key, owner=f"policy {spec}", field="policy")
        try:
            params(**opts)
        except (ValueError, TypeError) as e:
            raise InputError(f"policy {spec}: {e}", field="policy") from None
    return name.strip(), opts


def make_policy(spec: str, **options):
    """A fresh policy instance from a spec; ``options`` override the spec's."""
    name, opts = parse_policy(spec)
    return policy_class(name)(**{**opts, **options})
