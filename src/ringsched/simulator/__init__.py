"""Trace-driven, time-slotted cluster simulator (design brief, section 7)."""

from ringsched.loop import PolicyError
from ringsched.simulator.engine import SimConfig, Simulator
from ringsched.simulator.result import SimResult

__all__ = ["PolicyError", "SimConfig", "SimResult", "Simulator"]
