"""The throughput model of Pollux (OSDI'21), the reference we compare our model against.

    T = ((a_c + b_c * bsz)^g + (a_n + b_n * (replicas - 2))^g)^(1/g)     (replicas > 1)
    T = a_c + b_c * bsz                                                  (replicas = 1)

with one (a_n, b_n) pair for placements inside one node and another for placements that
span nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ringsched.perfmodel.params_io import DictParams

from ringsched.perfmodel.ring import smooth_max


@dataclass(frozen=True)
class PolluxParams(DictParams):
    alpha_c: float
    beta_c: float
    alpha_r: float
    beta_r: float
    alpha_n: float
    beta_n: float
    gamma: float


def pollux_step_time_s(p: PolluxParams, local_bsz, num_replicas, num_nodes):
    bsz = np.asarray(local_bsz, dtype=float)
    w = np.asarray(num_replicas, dtype=float)
    k = np.asarray(num_nodes, dtype=float)
    comp = p.alpha_c + p.beta_c * bsz
    net = np.where(k > 1, p.alpha_n + p.beta_n * (w - 2), p.alpha_r + p.beta_r * (w - 2))
    net = np.maximum(net, 0.0)
    return np.where(w > 1, smooth_max(comp, net, p.gamma), comp)
