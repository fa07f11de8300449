"""The built-in objectives: jct, deadline, energy, fairness, convergence (docs/objectives.md)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ringsched.experiment.objectives.curves import converge_epochs, extend, learning_curve, online_stop_epochs
from ringsched.utility.energy import J_PER_KWH, EnergyModel
from ringsched.experiment.objectives.registry import Objective, declares, register_objective
from ringsched.simulator.metrics import isolated_run_s
from ringsched.utility.defaults import slowdown_utility
from ringsched.utility.functions import DeadlineUtility


def _one_of(name: str, v: str, allowed: tuple[str, ...]) -> None:
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {v!r}")


def _pos(name: str, v: float, *, zero: bool = False) -> None:
    if not (math.isfinite(v) and (v >= 0 if zero else v > 0)):
        raise ValueError(f"{name} must be a {'non-negative' if zero else 'positive'} number, got {v}")


def revalue(result, utilities: dict) -> None:
    """Value a run's jobs with ``utilities`` (job id -> utility): completed jobs u_j(JCT_j),
    the others 0, as the simulator does; ``total_utility`` and ``max_utility`` follow."""
    jobs = result.jobs
    done = (jobs["status"] == "completed").to_numpy()
    jct = jobs["jct_s"].to_numpy(dtype=float)
    jobs["utility"] = [float(utilities[j](t)) if d else 0.0 for j, t, d in zip(jobs["job_id"], jct, done)]
    jobs["max_utility"] = [float(utilities[j].max_value) for j in jobs["job_id"]]
    result.summary["total_utility"] = float(jobs["utility"].sum())
    result.summary["max_utility"] = float(jobs["max_utility"].sum())


def judge_by_own(result, own: dict) -> None:
    """Keep the utility the policies decided with as ``decision_utility``, then value the run
    with the jobs' own utilities (``own``: job id -> utility)."""
    result.summary["decision_utility"] = float(result.jobs["utility"].sum())
    revalue(result, own)


def job_values(jobs) -> list[float]:
    """Each job's value: its utility's ``value`` (the sigmoid's scale), else its maximum."""
    return [float(getattr(j.utility, "value", j.utility.max_value)) for j in jobs]


def weighed(values: list[float], weigh: str) -> list[float]:
    """What each job is worth to the policies' decisions: its own value (``value``) or the
    workload's mean for every job (``count``: a metric that counts jobs)."""
    if weigh == "value" or not values:
        return values
    return [float(np.mean(values))] * len(values)


def shows_run_value(job, weigh: str) -> bool:
    """Whether the value ``weighed`` shows for ``job`` is its run's GPU-hours (its own value,
    derived from its run): an estimate then scales it with the run (``Utility.stretched``). A
    workload's mean (``count``) tells no job's run."""
    return weigh == "value" and bool(getattr(job.utility, "value_from_run", False))


def early_runs_lent(policy_cls) -> dict:
    """``commit_early_runs`` off, for a policy that declares it (GADGET, OASiS): a planned job
    running early on lent GPUs stays on lent GPUs, which a later arrival's plan can take back,
    instead of having its plan committed there. Committing protects the job already served at
    the expense of the arrivals, against fairness and deadlines (docs/objectives.md)."""
    return {"commit_early_runs": False} if declares(policy_cls, "commit_early_runs") else {}


# ------------------------------------------------------------------------------------- jct
WEIGHTS = ("count", "value")


@dataclass(frozen=True)
class JCTParams:
    # what a job is worth to the policies' decisions: "count" (every job the workload's mean
    # value, its utility's shape kept: mean JCT counts jobs) or "value" (its own); the run's
    # total utility is always judged with the jobs' own utilities
    weigh: str = "count"

    def __post_init__(self):
        _one_of("weigh", self.weigh, WEIGHTS)


@register_objective
class JCT(Objective):
    """The default: every job's utility of its JCT (utility/defaults.py), judged as it is. The
    policies decide with each job worth the same (``weigh``): the jobs' own values are their
    GPU-hours, which made a 1-GPU job of minutes worth a thousandth of a long 8-GPU job in every
    plan's payoff, while mean JCT counts both alike (docs/objectives.md)."""

    name = "jct"
    Params = JCTParams

    def prepare_jobs(self, jobs, cluster, speed):
        self.own = {j.job_id: j.utility for j in jobs}
        values = job_values(jobs)
        # (under ``count`` every job is scaled, by 1 where its value is the mean: the mean is no run's)
        return [dataclasses.replace(j, utility=j.utility.scaled(seen / value)) if 0 < value and self.p.weigh != "value"
                else j for j, value, seen in zip(jobs, values, weighed(values, self.p.weigh))]

    def report(self, result, config):
        judge_by_own(result, self.own)


# -------------------------------------------------------------------------------- deadline
@dataclass(frozen=True)
class DeadlineParams:
    slack: float = 2.0  # deadline = slack x the job's isolated run time ...
    floor_s: float = 1800.0  # ... but never less than this
    decay_per_s: float = 0.0  # utility after the deadline: value x exp(-decay x lateness); 0 = none
    # what a met deadline is worth to the policies' decisions: "count" (every job the workload's
    # mean value: the metric counts deadlines met) or "value" (the job's JCT utility's value);
    # the run's total utility is always judged with the jobs' own values
    weigh: str = "count"

    def __post_init__(self):
        _pos("slack", self.slack)
        _pos("floor_s", self.floor_s, zero=True)
        _pos("decay_per_s", self.decay_per_s, zero=True)
        _one_of("weigh", self.weigh, WEIGHTS)


@register_objective
class Deadline(Objective):
    """Full value (the job's JCT utility's value) by its deadline, decaying (or nothing) after."""

    name = "deadline"
    Params = DeadlineParams
    metrics = (("deadline_met", "max"),)
    # (where a policy's deadlines come from: the jobs of several GPUs are where a ring's
    # placement acts, and a count objective weighs each of them like a 1-GPU job)
    details = ("deadline_met_multi_gpu",)

    @property
    def deadlines(self) -> dict[str, float]:
        """Each job's deadline in force (its judged utility's ``due_s``)."""
        return {jid: u.due_s for jid, u in self.judged.items()}

    def prepare_jobs(self, jobs, cluster, speed):
        self.judged: dict[str, DeadlineUtility] = {}
        values = job_values(jobs)
        out = []
        for j, value, seen in zip(jobs, values, weighed(values, self.p.weigh)):
            judged = DeadlineUtility(value, self.p.slack * isolated_run_s(j, cluster, speed), self.p.decay_per_s,
                                     self.p.floor_s, from_run=True)
            self.judged[j.job_id] = judged
            out.append(dataclasses.replace(j, utility=dataclasses.replace(
                judged, value=seen, value_from_run=shows_run_value(j, self.p.weigh))))
        return out

    def policy_options(self, policy_cls, cluster, config):
        return early_runs_lent(policy_cls)

    def report(self, result, config):
        jobs = result.jobs
        judge_by_own(result, self.judged)
        d = jobs["job_id"].map(self.deadlines).to_numpy(dtype=float)
        jobs["deadline_s"] = d
        done = (jobs["status"] == "completed").to_numpy()
        met = done & (jobs["jct_s"].to_numpy(dtype=float) <= d + DeadlineUtility.ON_TIME_S)
        jobs["deadline_met"] = met
        n = len(jobs)
        result.summary["deadline_met"] = int(met.sum())
        result.summary["deadline_met_share"] = float(met.sum() / n) if n else None
        result.summary["deadline_met_share_completed"] = float(met.sum() / done.sum()) if done.sum() else None
        result.summary["deadline_met_multi_gpu"] = int((met & (jobs["requested_gpus"].to_numpy() > 1)).sum())


# ---------------------------------------------------------------------------------- energy
ENERGY_PRICES = ("ratio", "usd")


@dataclass(frozen=True)
class EnergyParams:
    usd_per_kwh: float = 0.12  # electricity price
    utility_per_usd: float = 0.4  # 1 utility unit = 1 GPU-hour of work, worth about $2.50
    # what a joule costs in GADGET's prices: "ratio" (the workload's utility per joule, each job
    # run alone at its requested size: the exchange rate of the kWh-per-utility ratio, one
    # Dinkelbach step) or "usd" (usd_per_kwh x utility_per_usd: for net utility)
    price: str = "ratio"

    def __post_init__(self):
        _pos("usd_per_kwh", self.usd_per_kwh, zero=True)
        _pos("utility_per_usd", self.utility_per_usd, zero=True)
        _one_of("price", self.price, ENERGY_PRICES)


@register_objective
class Energy(Objective):
    """JCT utility; energy (busy GPUs, powered servers) priced into GADGET's plan costs."""

    name = "energy"
    Params = EnergyParams
    metrics = (("kwh_per_utility", "min"),)

    def prepare_jobs(self, jobs, cluster, speed):
        """Remembers each job's (maximum utility, requested GPUs, time alone at that size)."""
        from ringsched.perfmodel.speed import consolidated_shape

        g = int(cluster.gpus.max())
        self.alone = []
        for j in jobs:
            w = min(j.requested_gpus, j.max_workers, cluster.total_gpus)
            t = j.work_samples / speed.throughput_sps(j.model, j.local_bsz, consolidated_shape(w, g))
            self.alone.append((float(j.utility.max_value), w, t))
        return list(jobs)

    def utility_per_joule(self, energy=None, gpus_per_server: int = 8) -> float:
        """``usd``: the price; ``ratio``: the workload's utility per joule of its jobs, each run
        alone at its requested size on busy GPUs with their share of a full server's base power:
        the ratio a run that keeps every utility on a fully used cluster achieves."""
        if self.p.price == "usd":
            return self.p.usd_per_kwh * self.p.utility_per_usd / J_PER_KWH
        em, g = energy or EnergyModel(), gpus_per_server
        joules = sum(t * w * (em.gpu_busy_W + em.server_base_W / g) for _, w, t in self.alone)
        return sum(u for u, _, _ in self.alone) / joules if joules > 0 else 0.0

    def policy_options(self, policy_cls, cluster, config):
        """Energy prices for a policy that declares them (``energy_cost_per_gpu_s`` and
        ``server_cost_per_s`` in its ``Params``: GADGET, OASiS); nothing for the others."""
        if not declares(policy_cls, "energy_cost_per_gpu_s", "server_cost_per_s"):
            return {}
        em, g = config.energy, int(cluster.gpus.max())
        k = self.utility_per_joule(em, g)
        # a busy GPU adds (busy - idle) W; powering a server adds its base and its idle GPUs
        return {"energy_cost_per_gpu_s": (em.gpu_busy_W - em.gpu_idle_W) * k,
                "server_cost_per_s": (em.server_base_W + g * em.gpu_idle_W) * k}

    def report(self, result, config):
        s = result.summary
        s["energy_cost_usd"] = s["energy_kwh"] * self.p.usd_per_kwh
        s["net_utility"] = s["total_utility"] - s["energy_cost_usd"] * self.p.utility_per_usd
        s["kwh_per_utility"] = s["energy_kwh"] / s["total_utility"] if s["total_utility"] > 0 else math.inf


# -------------------------------------------------------------------------------- fairness
def alpha_fair(x, alpha: float):
    """w_alpha(x) = log x (alpha = 1) or x^(1 - alpha) / (1 - alpha)."""
    x = np.asarray(x, dtype=float)
    return np.log(x) if alpha == 1 else np.power(x, 1.0 - alpha) / (1.0 - alpha)


def alpha_fair_welfare(utility, max_utility, alpha: float, eps: float) -> float:
    """sum_j w_alpha(max(u_j / umax_j, eps)) (unfinished jobs: u = 0 -> eps)."""
    u, m = np.asarray(utility, dtype=float), np.asarray(max_utility, dtype=float)
    x = np.maximum(np.divide(u, m, out=np.zeros_like(u), where=m > 0), eps)
    return float(alpha_fair(x, alpha).sum())


MAX_LOG_TERM = 680.0  # ln of the largest welfare term: e^680 x a billion jobs stays under 1.8e308


@dataclass(frozen=True)
class FairnessParams:
    alpha: float = 1.0  # 0 = utilitarian (normalised), 1 = proportional, large -> max-min
    eps: float = 1e-3  # floor of a job's normalised utility (an unfinished job counts as eps)
    # a job without a plan whose finish-time fairness (rho) would pass this is planned whatever
    # its payoff (a policy that declares rho_guard: GADGET; 0: off)
    rho_guard: float = 10.0
    # what a job is worth to the policies' decisions: "count" (every job the workload's mean
    # value: Jain's index and rho count jobs, not GPU-hours) or "value" (its JCT utility's own);
    # the run's total utility is always judged with the jobs' own utilities
    weigh: str = "count"
    # the decision utility keeps its value until JCT = knee x the job's isolated time (rho =
    # knee) and falls after, as the JCT utility's sigmoid does (utility/defaults.py); at the
    # guard's rho, a job keeps most of its worth until the guard would plan it anyway
    knee: float = 10.0

    def __post_init__(self):
        _pos("alpha", self.alpha, zero=True)
        _one_of("weigh", self.weigh, WEIGHTS)
        if not (math.isfinite(self.knee) and self.knee >= 1):
            raise ValueError(f"knee must be at least 1, got {self.knee}")
        if not 0 < self.eps < 1:
            raise ValueError(f"eps must lie in (0, 1), got {self.eps}")
        if self.alpha > 1 and (self.alpha - 1) * math.log(1 / self.eps) > MAX_LOG_TERM:
            raise ValueError(f"alpha {self.alpha} with eps {self.eps}: eps^(1 - alpha) passes the float range "
                             f"(keep (alpha - 1) x ln(1 / eps) <= {MAX_LOG_TERM:g})")
        if not (self.rho_guard == 0 or (math.isfinite(self.rho_guard) and self.rho_guard >= 1)):
            raise ValueError(f"rho_guard must be 0 (off) or at least 1, got {self.rho_guard}")


@register_objective
class Fairness(Objective):
    """Judged by Jain's index and the worst finish-time fairness (rho), with the alpha-fair
    welfare of the jobs' normalised JCT utilities reported. The policies decide with a utility
    of each job's slowdown, every job worth the same (``weigh``, ``knee``), and GADGET plans a
    job about to pass ``rho_guard`` whatever its payoff (docs/objectives.md)."""

    name = "fairness"
    Params = FairnessParams
    metrics = (("jain_index", "max"), ("worst_ftf_rho", "min"))

    def policy_options(self, policy_cls, cluster, config):
        """For a policy that declares them: the rho guard; early runs left lent
        (``early_runs_lent``); no triage in lending (``lend_triage_share`` 0: a job given up for
        those still on time is the worst rho); swaps for plans that start later
        (``displace_late``: a wait of a slot costs a short job much of its slowdown and a long
        victim little of its own); no packing (``pack_slack`` 0: servers kept whole serve the
        few wide rings, where every job counts the same). docs/objectives.md."""
        wanted = {"rho_guard": self.p.rho_guard, "lend_triage_share": 0.0, "displace_late": True, "pack_slack": 0.0}
        return {k: v for k, v in wanted.items() if declares(policy_cls, k)} | early_runs_lent(policy_cls)

    def prepare_jobs(self, jobs, cluster, speed):
        """The decision utilities (``weigh``, ``knee``); the jobs' own are kept for the judging."""
        self.own = {j.job_id: j.utility for j in jobs}
        return [dataclasses.replace(j, utility=slowdown_utility(seen, isolated_run_s(j, cluster, speed), self.p.knee,
                                                                value_from_run=shows_run_value(j, self.p.weigh)))
                for j, seen in zip(jobs, weighed(job_values(jobs), self.p.weigh))]

    def report(self, result, config):
        jobs = result.jobs
        judge_by_own(result, self.own)
        result.summary["alpha_fair_welfare"] = alpha_fair_welfare(jobs["utility"], jobs["max_utility"], self.p.alpha,
                                                                  self.p.eps)


# ----------------------------------------------------------------------------- convergence
STOPS = ("policy", "world")


@dataclass(frozen=True)
class ConvergenceParams:
    min_delta: float = 0.002  # an epoch "improves" when the running best rises by >= this x its gain so far
    patience: int = 5  # stop after this many epochs in a row without improvement
    min_epochs: int = 10  # never stop before this many epochs
    # who stops a job where its curve flattens: "policy" (a scheduler that takes the stop:
    # one whose options include stop_converged, set here; design brief section 3) or "world"
    # (every policy's jobs, whatever the scheduler)
    stop: str = "policy"

    def __post_init__(self):
        _pos("min_delta", self.min_delta, zero=True)
        if self.patience < 1 or self.min_epochs < 1:
            raise ValueError("patience and min_epochs must be >= 1")
        _one_of("stop", self.stop, STOPS)


@register_objective
class Convergence(Objective):
    """Excessive-training avoidance: stop a job where its learning curve flattens (online).

    Every policy sees each job's estimated convergence point (``Job.converge_samples``, from
    its model's curve alone); a scheduler that takes the stop (``stop_converged`` among its
    options: GADGET plans each job's work up to that point) has its jobs stopped there."""

    name = "convergence"
    Params = ConvergenceParams
    metrics = (("gpu_hours_per_target", "min"),)

    def _rule(self) -> dict:
        return {"min_delta": self.p.min_delta, "patience": self.p.patience, "min_epochs": self.p.min_epochs}

    def prepare_jobs(self, jobs, cluster, speed):
        self.info: dict[str, tuple] = {}
        out = []
        for j in jobs:
            c = learning_curve(j.model)
            est = converge_epochs(c, **self._rule())
            typed = j.work_samples / c.epoch_samples
            c = extend(c, max(int(math.ceil(typed)), 1))
            stop = online_stop_epochs(c.best, **self._rule())
            self.info[j.job_id] = (c, stop, typed, est)
            out.append(dataclasses.replace(j, converge_samples=None if est is None else est * c.epoch_samples))
        return out

    def policy_options(self, policy_cls, cluster, config):
        """The stop for a policy that declares ``stop_converged`` (GADGET)."""
        return {"stop_converged": True} if declares(policy_cls, "stop_converged") else {}

    def stop_rule(self, policy_options):
        if self.p.stop == "policy" and not policy_options.get("stop_converged"):
            return None
        info = self.info

        def rule(js, now_s: float) -> bool:
            c, stop, typed, _ = info[js.job_id]
            done = js.done_at(now_s)
            if done >= js.job.work_samples:
                return False  # finishing anyway
            n = int(math.floor(done / c.epoch_samples + 1e-9))  # whole epochs seen so far
            return 1 <= n <= stop.size and bool(stop[n - 1])

        return rule

    def _targets(self, jobs):
        """Per job: the target quality (the running best at its estimated convergence point, or
        at its typed epochs when that comes first) and whether the run reached it."""
        reached = []
        for jid, done, status in zip(jobs["job_id"], jobs["done_samples"], jobs["status"]):
            c, _, typed, est = self.info[jid]
            target = c.best_at(min(typed, est) if est is not None else typed)
            reached.append(status == "completed" and c.best_at(done / c.epoch_samples) >= target - 1e-12)
        return np.asarray(reached, dtype=bool)

    def report(self, result, config):
        jobs = result.jobs
        s = result.summary
        q, qfull, share = [], [], []
        for jid, done, started, early in zip(jobs["job_id"], jobs["done_samples"], jobs["first_start_s"],
                                             jobs["stopped_early"]):
            c, _, typed, _ = self.info[jid]
            full = c.best_at(typed)
            qfull.append(c.metric_of(full))
            if np.isnan(started):
                q.append(np.nan)
                continue
            at = c.best_at(done / c.epoch_samples)
            q.append(c.metric_of(at))
            if early:
                share.append((full - at) / max(full - float(c.best[0]), 1e-12))
        jobs["quality"] = np.asarray(q, dtype=float)
        jobs["quality_full"] = np.asarray(qfull, dtype=float)
        early = jobs["stopped_early"].to_numpy(dtype=bool)
        done = jobs["done_samples"].to_numpy(dtype=float)
        work = jobs["work_samples"].to_numpy(dtype=float)
        if early.any():  # a stopped job's isolated time is that of the work it did (Themis' rho, Jain)
            from ringsched.simulator.metrics import jain_index

            iso = jobs["isolated_s"].to_numpy(dtype=float).copy()
            iso[early] *= done[early] / work[early]
            jobs["isolated_s"] = iso
            jobs["ftf_rho"] = jobs["jct_s"].to_numpy(dtype=float) / iso
            rho = jobs.loc[jobs["status"] == "completed", "ftf_rho"].to_numpy(dtype=float)
            if rho.size:
                s["worst_ftf_rho"] = float(rho.max())
                s["share_ftf_rho_above_1"] = float((rho > 1.0 + 1e-9).mean())
                s["jain_index"] = jain_index(1.0 / rho)
        gpu_s = jobs["gpu_s"].to_numpy(dtype=float)
        per_sample = np.divide(gpu_s, done, out=np.zeros_like(gpu_s), where=done > 0)
        saved_h = float(((work - done) * per_sample)[early].sum()) / 3600.0
        abs_lost = np.abs(jobs["quality_full"].to_numpy(dtype=float) - jobs["quality"].to_numpy(dtype=float))
        by_model = {}
        for m in sorted(set(jobs["model"][early])):
            sel = early & (jobs["model"] == m).to_numpy()
            by_model[str(m)] = float(abs_lost[sel].mean())
        reached = self._targets(jobs)
        s.update({
            "target_reached": int(reached.sum()),
            # the run's GPU-hours per job brought to its target quality (inf: none was)
            "gpu_hours_per_target": s["gpu_hours"] / reached.sum() if reached.any() else math.inf,
            "jobs_stopped_early": int(early.sum()),
            "gpu_hours_saved": saved_h,
            "gpu_hours_saved_share": saved_h / (s["gpu_hours"] + saved_h) if s["gpu_hours"] + saved_h > 0 else 0.0,
            "quality_given_up_mean": float(np.mean(share)) if share else 0.0,
            "quality_given_up_max": float(np.max(share)) if share else 0.0,
            "quality_given_up_by_model": by_model,
        })
