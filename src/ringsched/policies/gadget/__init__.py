"""GADGET and its ring-blind sibling OASiS (primal-dual online scheduling)."""

from ringsched.policies.gadget.policy import Gadget, GadgetParams, Oasis

__all__ = ["Gadget", "GadgetParams", "Oasis"]
