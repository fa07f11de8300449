"""What moving a job onto lent GPUs gains: the one rule that top-ups (``lending.py``) and type
upgrades (``upgrade.py``) both apply before they lend."""

from __future__ import annotations

import math


def ring_rate(speed, js, placement: tuple, now_s: float) -> float:
    """Samples per second the world credits the job of ``js`` on ``placement`` at ``now_s`` (at
    that placement's GPU type): an adaptive-batch job's goodput at the batches it picks there,
    which a wide ring's large total batch lowers. Lent at the throughput of its own batch
    instead, an 8-GPU BERT job on Pollux's T4 testbed was topped up from one server (51.6
    samples/s) onto two (39.8)."""
    return speed.progress_sps(js.job, js.done_at(now_s), placement)


def slots_to_end(js, pl: tuple, work: float, nodes, slot: int, restart_s: float, none: int) -> int:
    """The slots from ``slot`` that a ring of ``js`` on ``pl`` runs into doing ``work`` after a
    restart (``none`` when it cannot run there): how long a backfilled ring needs its GPUs."""
    rate = ring_rate(nodes.speed, js, pl, nodes.now_s)
    if rate <= 0:
        return none
    return math.floor((nodes.now_s + restart_s + work / rate) / nodes.slot_s + 1e-9) - slot + 1


def lend_gain(r0: float, r1: float, remaining: float, restart_s: float, window_s: float) -> float:
    """The share of time a job gains by moving from rate ``r0`` to ``r1`` on lent GPUs: of its
    remaining time when it is done while lent, else of its progress over the lending window,
    less a restart to move and one to move back."""
    t_old = remaining / r0
    t_new = restart_s + remaining / r1
    if t_new <= window_s:  # done while lent
        return (t_old - t_new) / t_old
    return (r1 * (window_s - restart_s) - r0 * restart_s) / (r0 * window_s) - 1.0


def start_gain(r0: float, r1: float, remaining: float, restart_s: float, window_s: float) -> float:
    """``lend_gain`` for a job that starts now: it pays a restart on either ring, so moving costs
    none, and only moving back (when it is not done while lent) costs one. A job of seconds on
    H200 planned onto a T4 for minutes never started on an idle H200: to ``lend_gain`` it was
    nearly done."""
    t_old = restart_s + remaining / r0
    t_new = restart_s + remaining / r1
    if t_new <= window_s:  # done while lent
        return (t_old - t_new) / t_old
    run = window_s - restart_s
    if run <= 0:
        return -1.0  # a window no longer than a restart: nothing to gain
    return (r1 * run - r0 * restart_s) / (r0 * run) - 1.0
