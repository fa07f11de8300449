"""The default utility a trace job gets: a sigmoid of its JCT (design brief, section 3).

A job is worth its GPU-hours of work at the requested size (bigger jobs matter more, and the
sum is comparable across traces), keeps almost all of it while its JCT stays within
``slack`` times its run time alone (``knee_run_s``: trace jobs pass their run at their size on
the cluster's fastest GPU type, ``traces/convert.py``), and loses it smoothly after. ``steepness`` is set so the
sigmoid falls from 98% to 2% of its value between JCT = 0 and 2 x target.
"""

from __future__ import annotations

import numpy as np

from ringsched.utility.functions import SigmoidUtility

DEFAULT_SLACK = 3.0
MIN_TARGET_S = 1800.0  # short jobs are not penalised for queueing below half an hour


def jct_utility(run_s: float, gpus: int, *, slack: float = DEFAULT_SLACK, knee_run_s: float | None = None) -> SigmoidUtility:
    """``run_s`` alone at ``gpus`` prices the value; ``knee_run_s`` (default ``run_s``), the
    job's run alone at its size on the cluster's fastest GPU type, places the knee: on a
    two-type cluster a knee at the slow type's time kept jobs at full value up to 60x past
    what they take on the fast one (convert.py)."""
    target = slack * (run_s if knee_run_s is None else knee_run_s)
    return knee_utility(gpus * run_s / 3600.0, target, MIN_TARGET_S, value_from_run=True)


def knee_utility(value: float, target_jct_s: float, floor_s: float = 0.0, *,
                 value_from_run: bool = False) -> SigmoidUtility:
    """``value`` kept until about max(``target_jct_s``, ``floor_s``), then lost: the sigmoid
    falls from 98% to 2% of it between JCT = 0 and twice that (every default utility's shape).
    ``target_jct_s`` is a multiple of the job's run alone (``from_run``: an estimate stretches
    it), and so is ``value`` where ``value_from_run`` says so."""
    knee = max(target_jct_s, floor_s)
    return SigmoidUtility(value=value, target_jct_s=target_jct_s, steepness_per_s=float(np.log(49.0)) / knee,
                          floor_s=floor_s, from_run=True, value_from_run=value_from_run)


def slowdown_utility(value: float, isolated_s: float, knee: float, *, value_from_run: bool = False) -> SigmoidUtility:
    """``value`` kept while the job's slowdown (JCT over its isolated time, Themis' rho) stays
    below about ``knee``: the fairness objective's decision utility (docs/objectives.md). No
    half-hour floor: a job's worth falls with its slowdown, however short the job."""
    return knee_utility(value, knee * isolated_s, value_from_run=value_from_run)
