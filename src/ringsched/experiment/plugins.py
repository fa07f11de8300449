"""Policies from other installed packages: each entry point of the ``ringsched.policies`` group
names a Policy class (``NAME = "package.module:Class"``); loading it registers the class under
its ``name``, so it appears in ``ringsched policies`` and every ``--policies``."""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

from ringsched.errors import InputError

GROUP = "ringsched.policies"


@functools.cache
def load_policy_plugins() -> tuple[str, ...]:
    """Register every installed entry-point policy once per process; their names."""
    from ringsched.policies.registry import policy_names, register

    names = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            cls = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin is named, not a traceback
            raise InputError(f"cannot load policy entry point {ep.name} = {ep.value}: {type(e).__name__}: {e}",
                             field=GROUP) from None
        if getattr(cls, "name", None) not in policy_names():
            register(cls)
        names.append(cls.name)
    return tuple(names)
