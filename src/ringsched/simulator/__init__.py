"""Trace-driven, time-slotted cluster simulator (design brief, section 7)."""

from ringsched.simulator.engine import PolicyError, SimConfig, Simulator
from ringsched.simulator.result import SimResult

__all__ = ["PolicyError", "SimConfig", "SimResult", "Simulator"]
