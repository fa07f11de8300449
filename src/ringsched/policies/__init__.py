"""Scheduling policies behind one interface (``base.Policy``), registered by name.

Importing this package registers every built-in policy; ``make_policy(name)`` builds one.
To add a policy: a new module with a ``@register`` class, imported below (docs/policies.md).
"""

from ringsched.policies import drf, fifo, fifo_strict, optimus, pollux, sia, sjf_bco, srtf, themis, tiresias  # noqa: F401  (registration side effect)
from ringsched.policies import gadget  # noqa: F401,E402  (gadget, oasis)
from ringsched.policies.base import Allocations, JobState, Nodes, Policy
from ringsched.policies.registry import make_policy, policy_class, policy_names, register

__all__ = ["Allocations", "JobState", "Nodes", "Policy", "make_policy", "policy_class", "policy_names", "register"]
