"""What moving a job onto lent GPUs gains: the one rule that top-ups (``lending.py``) and type
upgrades (``upgrade.py``) both apply before they lend."""

from __future__ import annotations


def ring_rate(speed, job, placement: tuple) -> float:
    """Samples per second of ``job``'s ring on ``placement`` (at that placement's GPU type)."""
    return len(placement) * job.local_bsz / speed.step_time_on(job.model, job.local_bsz, placement)


def lend_gain(r0: float, r1: float, remaining: float, restart_s: float, window_s: float) -> float:
    """The share of time a job gains by moving from rate ``r0`` to ``r1`` on lent GPUs: of its
    remaining time when it is done while lent, else of its progress over the lending window,
    less a restart to move and one to move back."""
    t_old = remaining / r0
    t_new = restart_s + remaining / r1
    if t_new <= window_s:  # done while lent
        return (t_old - t_new) / t_old
    return (r1 * (window_s - restart_s) - r0 * restart_s) / (r0 * window_s) - 1.0
