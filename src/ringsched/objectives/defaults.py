"""Old path of ``ringsched.utility.defaults`` (see the package docstring)."""

from ringsched.utility.defaults import DEFAULT_SLACK, MIN_TARGET_S, jct_utility

__all__ = ["DEFAULT_SLACK", "MIN_TARGET_S", "jct_utility"]
