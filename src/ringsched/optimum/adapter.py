"""The production ``gadget`` policy on a discrete instance (docs/theory.md, "The empirical check").

There is one GADGET: the check builds, from the instance, the cluster (server s with O_s GPUs),
one ``Job`` per discrete job (work V_j samples, its worker bounds, its utility per completion
slot as a function of the JCT) and a speed model that gives every configuration its progress
g_j(c) per slot (``DiscreteSpeed``: progress depends on the ring's shape (w, k, d) only, as the
generator's performance model does), and offers each job at its arrival slot to
``Gadget.admit`` in its theorem configuration (``theorem_params``): strict admission, the
exact subroutine with one slot per step, no lending, late starts, packing, lane or moves of
a reservation to where a job runs (``stay_put``), the instance's per-server worker cap, NIC
share and the theorem's L, U and zeta. The committed plans are read back from the policy's
commitment book as schedules of the instance. The same policy run in the simulated world on
the same jobs makes the same decisions (tests/test_optimum.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ringsched.job import Job
from ringsched.optimum.instance import DiscreteJob, Instance, cluster_of
from ringsched.optimum.theorem import TheoremParams
from ringsched.perfmodel.speed import shape_of
from ringsched.policies.base import Nodes
from ringsched.policies.gadget import Gadget, GadgetParams


class StepUtility:
    """u_j of the instance as a function of the JCT in seconds: completion in slot
    a_j + ceil(jct / slot_s) - 1 (the end of that slot counts), 0 after the last slot."""

    def __init__(self, u: np.ndarray, arrival: int, slot_s: float):
        self.u, self.arrival, self.slot_s = np.asarray(u, dtype=float), arrival, slot_s
        self.max_value = float(self.u[arrival:].max()) if self.u.size > arrival else 0.0

    def __call__(self, jct_s):
        jct = np.asarray(jct_s, dtype=float)
        T = self.arrival + np.ceil(jct / self.slot_s - 1e-9).astype(np.int64) - 1
        inside = (T >= self.arrival) & (T < self.u.size)
        return np.where(inside, self.u[np.clip(T, 0, self.u.size - 1)], 0.0)


class DiscreteSpeed:
    """Samples per second of every job's configurations: g_j(c) / slot_s, by the ring's shape
    (``model`` names the job). One sample is one progress unit."""

    version = 0

    def __init__(self, inst: Instance):
        self.slot_s = inst.slot_s
        self.table: dict[str, dict[tuple, int]] = {}
        for j in inst.jobs:
            rates: dict[tuple, int] = {}
            for y, g in zip(j.configs, j.progress):
                sh = shape_of(tuple(s for s, v in enumerate(y) for _ in range(v)))[:3]
                if rates.setdefault(sh, g) != g:
                    raise ValueError(f"job {j.id}: progress must depend on the ring's shape only")
            self.table[model_of(j)] = rates

    def throughput_sps(self, model: str, local_bsz: int, shape, inter_Bps=None) -> float:
        return self.table[model].get(tuple(shape[:3]), 0) / self.slot_s

    def shape(self, placement):
        return shape_of(placement)


def model_of(j: DiscreteJob) -> str:
    return f"discrete-{j.id}"


def job_of(inst: Instance, j: DiscreteJob) -> Job:
    """The production ``Job`` of a discrete job. Its id is zero-padded so that the order of ids
    is the instance's (a world admits the jobs of one slot by id: "j10" must not come before "j9")."""
    width = len(str(max(x.id for x in inst.jobs)))
    return Job(f"j{j.id:0{width}d}", j.arrival * inst.slot_s, model_of(j), 1, float(j.work), j.wmin, j.wmax,
               StepUtility(j.u, j.arrival, inst.slot_s))


def theorem_params(inst: Instance, params: TheoremParams, subroutine: str = "exact") -> GadgetParams:
    """The production policy's options that make it the theorem's algorithm on ``inst``."""
    return GadgetParams(admission="strict", subroutine=subroutine, L=params.L, U=params.U, zeta=params.zeta_gpu,
                        zeta_nic=params.zeta_nic, nic_share=inst.nic_share, max_per_server=inst.max_per_server,
                        max_steps=inst.slots + 1, tail_utility=1e-12, restart_s=0.0, work_conserving=False,
                        late_share=0.0, pack_slack=0.0, bound_first=False, stay_put=False, displace=0,
                        lane_gpus=0)


@dataclass
class JobOutcome:
    id: int
    admitted: bool
    payoff: float  # the payoff of its plan at arrival (-inf when no plan fits)
    completion: int | None = None  # completion slot
    utility: float = 0.0
    cost: float = 0.0
    schedule: list[tuple[int, int]] = field(default_factory=list)  # (slot, configuration index)


@dataclass
class GadgetRun:
    utility: float
    dual: float  # final dual objective sum_j mu_j + sum_r p_r (>= OPT with the exact subroutine)
    params: TheoremParams
    outcomes: list[JobOutcome]
    used_gpu: np.ndarray
    used_nic: np.ndarray
    wall_s: float = 0.0

    @property
    def admitted(self) -> list[int]:
        return [o.id for o in self.outcomes if o.admitted]


def run_production(inst: Instance, params: TheoremParams, subroutine: str = "exact") -> GadgetRun:
    """Offer every job, in arrival order (ties by id), to the production policy; read its plans."""
    t0 = time.perf_counter()
    cluster = cluster_of(inst.gpus)
    speed = DiscreteSpeed(inst)
    pol = Gadget(theorem_params(inst, params, subroutine))
    up = np.ones(inst.num_servers, dtype=bool)
    outcomes, total, mu = [], 0.0, 0.0
    for j in sorted(inst.jobs, key=lambda j: (j.arrival, j.id)):
        if not j.configs:
            outcomes.append(JobOutcome(j.id, False, -np.inf))
            continue
        job = job_of(inst, j)
        nodes = Nodes(cluster, up, j.arrival * inst.slot_s, inst.slot_s, speed, 0.0)
        if pol.admit(job, nodes) is not None:
            outcomes.append(JobOutcome(j.id, False, -np.inf))
            continue
        out = outcome(inst, j, pol.plans[job.job_id])
        total += out.utility
        mu += out.payoff
        outcomes.append(out)
    used_g, used_b = (np.array(x, dtype=float) for x in pol.ledger.window(0, inst.slots)) if pol.ledger is not None \
        else (np.zeros((inst.num_servers, inst.slots)),) * 2
    pg, pn = params.prices()
    dual = mu + float(pg(used_g / inst.O[:, None]).sum() + pn(used_b).sum())
    return GadgetRun(total, dual, params, outcomes, used_g.astype(np.int64), used_b, time.perf_counter() - t0)


def outcome(inst: Instance, j: DiscreteJob, plan) -> JobOutcome:
    """A committed plan as a schedule of the instance: (slot, configuration index) per slot."""
    index = {tuple(y): c for c, y in enumerate(j.configs)}
    sched = []
    for a, z, pl in plan.segments:
        y = tuple(int(v) for v in np.bincount(np.asarray(pl), minlength=inst.num_servers))
        sched += [(t, index[y]) for t in range(a, z)]
    T = sched[-1][0]
    return JobOutcome(j.id, True, float(plan.payoff), T, float(j.u[T]), float(plan.cost), sched)
