"""The exact offline optimum of small discrete instances and the empirical check of GADGET's
competitive ratio (docs/theory.md): the production policy runs on the instances through
``adapter``."""

from ringsched.optimum.adapter import GadgetRun, run_production
from ringsched.optimum.instance import DiscreteJob, Instance, random_instance, small_demand_instance
from ringsched.optimum.milp import Optimum, brute_force, solve, verify
from ringsched.optimum.theorem import TheoremParams, theorem_parameters

__all__ = ["DiscreteJob", "GadgetRun", "Instance", "Optimum", "TheoremParams", "brute_force", "random_instance",
           "run_production", "small_demand_instance", "solve", "theorem_parameters", "verify"]
