"""The exact offline optimum of small discrete instances and the empirical check of GADGET's
competitive ratio (docs/theory.md)."""

from ringsched.optimum.discrete_gadget import GadgetRun, TheoremParams, run_gadget, theorem_parameters
from ringsched.optimum.instance import DiscreteJob, Instance, random_instance
from ringsched.optimum.milp import Optimum, brute_force, solve, verify

__all__ = ["DiscreteJob", "GadgetRun", "Instance", "Optimum", "TheoremParams", "brute_force", "random_instance",
           "run_gadget", "solve", "theorem_parameters", "verify"]
