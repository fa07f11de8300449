"""The order of one decision's offers (``offers.offer_key``): priority, then the remaining
time alone, shortest first. Plans are committed in that order, so the first offer gets the
earliest slots."""

from __future__ import annotations

import dataclasses

import pytest

from ringsched.cluster.model import parse_spec
from ringsched.policies import JobState
from ringsched.policies.gadget.policy import Gadget
from test_gadget import nodes
from test_gadget_on_time import rigid, sigmoid


@pytest.mark.parametrize("long_priority, first", [(0, "short"), (1, "long")])
def test_a_shorter_job_offered_in_the_same_decision_is_planned_first_within_its_priority(long_priority, first):
    """1x8, two 8-GPU jobs arrive together, the 20,000-s one listed first: the 2,000-s one gets
    the server now and the long one the slots after it, unless the long one is of a higher
    priority (a strict class). Mutants caught: offers by arrival (``queue_key``); the time
    alone ahead of the priority."""
    c = parse_spec("1x8")
    long = dataclasses.replace(rigid("long", 0, 8, 20_000.0, c, sigmoid(10.0, 500_000.0)), priority=long_priority)
    short = rigid("short", 0, 8, 2_000.0, c, sigmoid(10.0, 500_000.0))
    g = Gadget(late_share=0.0, displace=0)
    out = g.optimize([JobState(long, 0, 20_000.0), JobState(short, 1, 2_000.0)], nodes(c), {})
    later = "long" if first == "short" else "short"
    assert g.plans[first].first_slot == 0 and first in out
    assert g.plans[later].first_slot > 0 and later not in out
