"""The decision loop shared by the simulator and real execution, and the World it drives."""

from ringsched.loop.decision import DecisionLoop, StopRule
from ringsched.loop.validate import PolicyError, validated_changes
from ringsched.loop.world import Change, Roster, World, isolated_run_s, waiting_reason

__all__ = ["Change", "DecisionLoop", "PolicyError", "Roster", "StopRule", "World", "isolated_run_s",
           "validated_changes", "waiting_reason"]
