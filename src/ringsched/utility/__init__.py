"""Leaf package: a job's utility as a function of its completion time, the default trace
utility, and energy accounting. Imports nothing of ringsched, so every layer may use it."""

from ringsched.utility.defaults import DEFAULT_SLACK, MIN_TARGET_S, jct_utility
from ringsched.utility.energy import J_PER_KWH, EnergyModel
from ringsched.utility.functions import DeadlineUtility, LinearUtility, SigmoidUtility, Utility

__all__ = ["DEFAULT_SLACK", "MIN_TARGET_S", "jct_utility", "J_PER_KWH", "EnergyModel", "DeadlineUtility",
           "LinearUtility", "SigmoidUtility", "Utility"]
