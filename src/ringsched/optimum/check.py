"""The empirical check of GADGET's competitive ratio (docs/theory.md, "The empirical check").

For instance i of seed S (drawn from the seed sequence [S, i]) in a regime (``default``: the
generator ``random_instance``; ``small-demand``: ``small_demand_instance``, where the theorem's
bound is informative): the exact offline optimum (HiGHS), the production ``gadget`` policy in
its theorem configuration (``adapter.run_production``) under the textbook and quantised price
rules and its trace-mode search (``subroutine=contiguous``, same prices, no guarantee), and
the control algorithms (``controls``), each held to the instance's bound. ``summarize`` makes
the one JSON object of ``ringsched optimum-check``.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable

import numpy as np

from ringsched.optimum.adapter import run_production
from ringsched.optimum.controls import CONTROLS, run_control
from ringsched.optimum.instance import random_instance, small_demand_instance
from ringsched.optimum.milp import solve
from ringsched.optimum.theorem import theorem_parameters

REL = 1e-9  # relative tolerance of the comparisons
RULES = ("textbook", "quantised")  # the rules with a guarantee (docs/theory.md, sections 5 and 6)


def _r(x, nd: int = 6):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return round(float(x), nd)


def make_instance(index: int, seed: int, regime: str, max_jobs: int = 8, max_slots: int = 16):
    rng = np.random.default_rng([seed, index])
    if regime == "small-demand":
        return small_demand_instance(rng)
    return random_instance(rng, max_jobs=max_jobs, max_slots=max_slots)


def check_instance(index: int, seed: int, *, regime: str = "default", rule: str = "quantised",
                   time_limit_s: float = 60.0, max_jobs: int = 8, max_slots: int = 16) -> dict:
    """Everything the check measures on one instance: a flat record."""
    t0 = time.perf_counter()
    inst = make_instance(index, seed, regime, max_jobs, max_slots)
    opt = solve(inst, time_limit_s=time_limit_s)
    ref = opt.utility if opt.optimal else opt.bound  # conservative when not proven optimal

    def ratio(u: float) -> float:
        if u > opt.bound * (1 + REL) + 1e-12:
            raise RuntimeError(f"instance {index}: a schedule worth {u} exceeds the optimum {opt.bound}")
        return u / ref if ref > 0 else 1.0

    rec = {"index": index, "servers": inst.num_servers, "slots": inst.slots, "jobs": len(inst.jobs),
           "opt": opt.utility, "opt_bound": opt.bound, "opt_status": opt.status, "gap": opt.gap,
           "milp_wall_s": opt.wall_s, "opt_completed": len(opt.completion)}
    for r in RULES:
        params = theorem_parameters(inst, r)
        g = run_production(inst, params)
        x = ratio(g.utility)
        rec[r] = {"utility": g.utility, "ratio": x, "bound": params.bound, "theta": params.theta, "U": params.U,
                  "L": params.L, "admitted": len(g.admitted), "dual": g.dual,
                  "violation": bool(x < params.bound * (1 - REL)),
                  "dual_violation": bool(g.dual < opt.utility * (1 - REL) - 1e-12), "wall_s": g.wall_s}
    params = theorem_parameters(inst, rule)
    rec["contiguous"] = {"ratio": ratio(run_production(inst, params, "contiguous").utility)}
    rec["controls"] = {}
    for name in CONTROLS:
        x = ratio(run_control(inst, name, seed=index))
        rec["controls"][name] = {"ratio": x, "violation": bool(x < params.bound * (1 - REL))}
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def summarize(records: list[dict], rule: str = "quantised") -> dict:
    """The one JSON object of ``optimum-check`` (docs/theory.md lists the fields)."""
    def agg(r: str) -> dict:
        ratios = np.array([x[r]["ratio"] for x in records])
        bounds = np.array([x[r]["bound"] for x in records])
        return {"mean_ratio": _r(ratios.mean()), "p10_ratio": _r(np.percentile(ratios, 10)),
                "min_ratio": _r(ratios.min()), "median_ratio": _r(np.median(ratios)),
                "share_within_0_9": _r(float((ratios >= 0.9).mean()), 4), "min_bound": float(f"{bounds.min():.6g}"),
                "violations": int(sum(x[r]["violation"] for x in records)),
                "dual_violations": int(sum(x[r]["dual_violation"] for x in records)),
                "mean_admitted": _r(float(np.mean([x[r]["admitted"] for x in records])), 4)}

    contig = np.array([x["contiguous"]["ratio"] for x in records])
    return {
        "instances": len(records), "seed": None, "regime": None, "zeta_rule": rule, **agg(rule),
        "controls": {c: {"violations": int(sum(x["controls"][c]["violation"] for x in records)),
                         "mean_ratio": _r(np.mean([x["controls"][c]["ratio"] for x in records]))}
                     for c in CONTROLS},
        "contiguous_mean_ratio": _r(contig.mean()), "contiguous_min_ratio": _r(contig.min()),
        "mean_jobs": _r(float(np.mean([x["jobs"] for x in records])), 3),
        "mean_opt_completed_share": _r(float(np.mean([x["opt_completed"] / x["jobs"] for x in records])), 4),
        "not_optimal": int(sum(x["opt_status"] != "optimal" for x in records)),
        "max_gap": _r(max(x["gap"] for x in records)),
        "mean_wall_s": _r(float(np.mean([x["wall_s"] for x in records])), 4),
        "mean_milp_wall_s": _r(float(np.mean([x["milp_wall_s"] for x in records])), 4),
        "max_milp_wall_s": _r(float(np.max([x["milp_wall_s"] for x in records])), 4),
        "by_rule": {r: agg(r) for r in RULES},
    }


def run_check(n: int, seed: int, *, regime: str = "default", rule: str = "quantised", time_limit_s: float = 60.0,
              workers: int = 1, max_jobs: int = 8, max_slots: int = 16,
              progress: Callable[[int, dict], None] | None = None) -> tuple[dict, list[dict]]:
    """Check ``n`` instances; ``progress(done, record)`` after each. Returns (summary, records)."""
    kw = dict(regime=regime, rule=rule, time_limit_s=time_limit_s, max_jobs=max_jobs, max_slots=max_slots)
    records: list[dict | None] = [None] * n
    if workers <= 1:
        for i in range(n):
            records[i] = check_instance(i, seed, **kw)
            if progress:
                progress(i + 1, records[i])
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            futs = {ex.submit(check_instance, i, seed, **kw): i for i in range(n)}
            for done, fut in enumerate(as_completed(futs), 1):
                records[futs[fut]] = fut.result()
                if progress:
                    progress(done, records[futs[fut]])
    summary = summarize(records, rule)
    summary["seed"], summary["regime"] = seed, regime
    return summary, records
