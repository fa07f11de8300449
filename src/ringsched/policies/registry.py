"""Name -> policy class, filled by a decorator on each policy module (no if/elif on names)."""

from __future__ import annotations

from ringsched.errors import InputError

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
    """The class registered under ``name``; unknown names are an InputError listing the known ones."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise InputError(f"unknown policy {name!r}; known: {', '.join(policy_names())}", field="policy")
    return cls


def make_policy(name: str, **options):
    """A fresh policy instance by name."""
    return policy_class(name)(**options)
