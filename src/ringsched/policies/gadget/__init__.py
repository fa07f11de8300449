"""GADGET and its ring-blind sibling OASiS (primal-dual online scheduling)."""

from ringsched.policies.gadget.params import GadgetParams
from ringsched.policies.gadget.policy import Gadget, Oasis

__all__ = ["Gadget", "GadgetParams", "Oasis"]
