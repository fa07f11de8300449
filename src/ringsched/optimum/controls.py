"""Control algorithms of the empirical check: online rules that are NOT competitive, run on the
same instances and held to the same bound as GADGET (docs/theory.md, "The empirical check").
If none of them ever fell below the bound, the instances would be too easy to show anything.

Each takes the jobs in arrival order (ties by id) and, when it admits a job, commits the plan
that completes it earliest among those that fit what is left (most utility; ties: the
lightest configuration first), at no price:

* ``one-job``: admits the first job that has a fitting plan, then nothing;
* ``random``: admits each job with a fitting plan with probability 1/2 (seeded per instance);
* ``first-come``: admits every job that has a fitting plan, whatever it takes.
"""

from __future__ import annotations

import numpy as np

from ringsched.optimum.instance import DiscreteJob, Instance
from ringsched.policies.gadget.plan import best_plan

CONTROLS = ("one-job", "random", "first-come")
NIC_TOL = 1e-9


def fitting_costs(inst: Instance, job: DiscreteJob, used_gpu: np.ndarray, used_nic: np.ndarray) -> np.ndarray:
    """(steps, configs) 0 where a configuration fits in a slot from the job's arrival on, inf elsewhere."""
    a = job.arrival
    occ = (job.Y > 0) & job.multi[:, None]
    fit = np.all(job.Y[:, :, None] <= (inst.O[:, None] - used_gpu[:, a:])[None], axis=1)
    nic_ok = used_nic[:, a:] + inst.nic_share <= 1.0 + NIC_TOL
    fit &= np.all(~occ[:, :, None] | nic_ok[None], axis=1)
    return np.where(fit, 0.0, np.inf).T


def step_utility(u: np.ndarray, arrival: int, n: int):
    """best_plan's utility with steps of length 1 from 0: time in (i, i + 1] completes in slot
    arrival + i."""
    def f(t):
        idx = np.clip(np.ceil(np.asarray(t, dtype=float) - 1e-9).astype(np.int64) - 1, 0, n - 1)
        return u[arrival + idx]
    return f


def earliest_plan(inst: Instance, job: DiscreteJob, used_gpu, used_nic) -> tuple[int, list] | None:
    """(completion slot, [(slot, configuration)]) of the most valuable fitting plan at no price."""
    a, n = job.arrival, inst.slots - job.arrival
    cost = fitting_costs(inst, job, used_gpu, used_nic)
    units = np.broadcast_to(job.g, cost.shape)
    ch = best_plan(cost, units, units.astype(float), job.work, np.arange(n, dtype=float), 1.0,
                   step_utility(job.u, a, n), 0.0)
    if ch is None or ch.payoff <= 0:
        return None
    return a + ch.step, [(a + i, o) for i, o in enumerate(ch.options) if o >= 0]


def run_control(inst: Instance, name: str, seed: int = 0) -> float:
    """Total utility of control ``name`` on ``inst``."""
    if name not in CONTROLS:
        raise ValueError(f"control must be one of {CONTROLS}, got {name!r}")
    rng = np.random.default_rng(seed)
    used_gpu = np.zeros((inst.num_servers, inst.slots), dtype=np.int64)
    used_nic = np.zeros((inst.num_servers, inst.slots))
    total = 0.0
    for j in sorted(inst.jobs, key=lambda j: (j.arrival, j.id)):
        if not j.configs:
            continue
        found = earliest_plan(inst, j, used_gpu, used_nic)
        if found is None or (name == "random" and rng.random() >= 0.5):
            continue
        T, sched = found
        for t, c in sched:
            used_gpu[:, t] += j.Y[c]
            if j.multi[c]:
                used_nic[j.Y[c] > 0, t] += inst.nic_share
        total += float(j.u[T])
        if name == "one-job":
            break
    return total
