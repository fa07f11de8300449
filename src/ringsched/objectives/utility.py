"""Old path of ``ringsched.utility.functions`` (see the package docstring)."""

from ringsched.utility.functions import DeadlineUtility, LinearUtility, SigmoidUtility, Utility

__all__ = ["DeadlineUtility", "LinearUtility", "SigmoidUtility", "Utility"]
