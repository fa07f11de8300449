"""Old path of ``ringsched.utility.energy`` (see the package docstring)."""

from ringsched.utility.energy import J_PER_KWH, EnergyModel

__all__ = ["J_PER_KWH", "EnergyModel"]
