"""The empirical check of GADGET's competitive ratio (``ringsched optimum-check``).

For each of N random instances (``random_instance`` with the seed sequence [seed, i]):

1. the exact offline optimum OPT (``milp.solve``, verified independently);
2. GADGET with the exact subroutine and strict admission under each price rule
   ("textbook": zeta = 1 - delta_max, the theorem as stated; "quantised": the refinement of
   docs/theory.md for integral GPU counts and equal NIC shares; "one": zeta = 1, the trace-mode
   default, no guarantee); ratio = GADGET's utility / OPT (1 when OPT = 0); the bound of an
   instance is its guaranteed ratio 1 / max(2 theta, 1 + theta) (beta = 1); a violation is an
   instance whose ratio is below its own bound; a dual violation is an instance whose final dual
   objective is below OPT (weak duality broken: a bug in the proof or the code);
3. two approximate subroutines under the chosen rule: "fast" (per slot, the greedy embedding
   of each worker count of the trace-mode menu) and "contiguous" (the current trace-mode search:
   gap-free plans of one worker count, ``plan.best_contiguous``): their ratios, and at every
   arrival the beta the proof needs for them against the exact subroutine at the same prices
   (docs/theory.md, section 8);
4. "packed": the exact subroutine under the chosen rule with the trace-mode packing of
   one-server rings (``pack_slack``, default ``PACK_SLACK``): its ratio, its own bound
   1 / max((2 + eps) theta, 1 + (1 + eps) theta), violations and dual violations.

When the MILP stops at its time limit the ratio uses its upper bound (a conservative ratio) and
the instance counts in ``not_optimal``.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable

import numpy as np

from ringsched.optimum.discrete_gadget import ZETA_RULES, guaranteed_ratio, run_gadget, theorem_parameters
from ringsched.optimum.instance import random_instance
from ringsched.optimum.milp import solve

REL = 1e-9  # relative tolerance of the comparisons
PACK_SLACK = 100.0  # the packing slack checked (the trace policy's default too; docs/theory.md section 9)


def _r(x: float, nd: int = 9):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return round(float(x), nd)


def check_instance(index: int, seed: int, *, rule: str = "quantised", time_limit_s: float = 60.0,
                   max_jobs: int = 8, max_slots: int = 16, pack_slack: float | None = None) -> dict:
    """Everything the check measures on instance ``index`` of ``seed``: one flat record."""
    t0 = time.perf_counter()
    inst = random_instance(np.random.default_rng([seed, index]), max_jobs=max_jobs, max_slots=max_slots)
    opt = solve(inst, time_limit_s=time_limit_s)
    ref = opt.utility if opt.optimal else opt.bound  # conservative when not proven optimal
    rec = {"index": index, "servers": inst.num_servers, "slots": inst.slots, "jobs": len(inst.jobs),
           "opt": opt.utility, "opt_bound": opt.bound, "opt_status": opt.status, "gap": opt.gap,
           "milp_wall_s": opt.wall_s, "opt_completed": len(opt.completion)}
    for r in ZETA_RULES:
        params = theorem_parameters(inst, r)
        g = run_gadget(inst, "exact", params)
        if g.utility > opt.bound * (1 + REL) + 1e-12:
            raise RuntimeError(f"instance {index}: GADGET ({r}) {g.utility} exceeds the optimum {opt.bound}")
        ratio = g.utility / ref if ref > 0 else 1.0
        rec[r] = {"utility": g.utility, "ratio": ratio, "bound": params.bound, "theta": params.theta,
                  "U": params.U, "L": params.L, "zeta_gpu": params.zeta_gpu, "zeta_nic": params.zeta_nic,
                  "admitted": len(g.admitted), "dual": g.dual,
                  "violation": bool(ratio < params.bound * (1 - REL)),
                  "dual_violation": bool(params.bound > 0 and g.dual < opt.utility * (1 - REL) - 1e-12),
                  "wall_s": g.wall_s}
    params = theorem_parameters(inst, rule)
    for variant in ("fast", "contiguous"):
        f = run_gadget(inst, variant, params)
        if f.utility > opt.bound * (1 + REL) + 1e-12:
            raise RuntimeError(f"instance {index}: GADGET ({variant}) {f.utility} exceeds the optimum {opt.bound}")
        fr = f.utility / ref if ref > 0 else 1.0
        betas = [o.beta_eff for o in f.outcomes if o.beta_eff is not None]
        pay = [o.payoff / o.payoff_exact for o in f.outcomes
               if o.payoff_exact is not None and o.payoff_exact > 0 and np.isfinite(o.payoff)]
        beta = max(betas) if betas else 1.0
        fb = guaranteed_ratio(params.theta, beta) if params.bound > 0 else 0.0
        rec[variant] = {"utility": f.utility, "ratio": fr, "beta": beta, "bound": fb,
                        "beta_unbounded": sum(1 for b in betas if not math.isfinite(b)),
                        "payoff_ratios": [max(0.0, p) for p in pay], "violation": bool(fr < fb * (1 - REL)),
                        "wall_s": f.wall_s}
    eps = PACK_SLACK if pack_slack is None else pack_slack
    pk = run_gadget(inst, "exact", params, pack_slack=eps)
    if pk.utility > opt.bound * (1 + REL) + 1e-12:
        raise RuntimeError(f"instance {index}: GADGET (packed) {pk.utility} exceeds the optimum {opt.bound}")
    pr = pk.utility / ref if ref > 0 else 1.0
    pb = guaranteed_ratio(params.theta, 1.0, eps) if params.bound > 0 else 0.0
    rec["packed"] = {"utility": pk.utility, "ratio": pr, "bound": pb, "pack_slack": eps,
                     "violation": bool(pr < pb * (1 - REL)),
                     "dual_violation": bool(params.bound > 0 and pk.dual < opt.utility * (1 - REL) - 1e-12),
                     "wall_s": pk.wall_s}
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def summarize(records: list[dict], rule: str = "quantised") -> dict:
    """The one JSON object of ``optimum-check`` (see the CLI's help for the fields)."""
    n = len(records)

    def agg(r: str) -> dict:
        ratios = np.array([x[r]["ratio"] for x in records])
        bounds = np.array([x[r]["bound"] for x in records])
        return {"mean_ratio": _r(ratios.mean()), "min_ratio": _r(ratios.min()),
                "median_ratio": _r(float(np.median(ratios))),
                "share_below_0_9": _r(float((ratios < 0.9).mean()), 4),
                "bound": float(f"{bounds.min():.6g}"),
                "violations": int(sum(x[r]["violation"] for x in records)),
                "dual_violations": int(sum(x[r]["dual_violation"] for x in records)),
                "mean_admitted": _r(float(np.mean([x[r]["admitted"] for x in records])), 4)}

    main = agg(rule)

    def approx(v: str, prefix: str) -> dict:
        ratios = np.array([x[v]["ratio"] for x in records])
        betas = [x[v]["beta"] for x in records]
        finite = [b for b in betas if math.isfinite(b)]
        pay = [p for x in records for p in x[v]["payoff_ratios"]]
        return {f"{prefix}_mean_ratio": _r(ratios.mean()), f"{prefix}_min_ratio": _r(ratios.min()),
                f"{prefix}_violations": int(sum(x[v]["violation"] for x in records)),
                f"{prefix}_beta_observed_max": _r(max(finite)) if finite else None,
                f"{prefix}_beta_observed_mean": _r(float(np.mean(finite))) if finite else None,
                f"{prefix}_beta_unbounded_instances": int(sum(not math.isfinite(b) for b in betas)),
                f"{prefix}_beta_gt1_instances": int(sum(b > 1 + 1e-9 for b in betas)),
                f"{prefix}_payoff_ratio_mean": _r(float(np.mean(pay))) if pay else None,
                f"{prefix}_payoff_ratio_min": _r(float(np.min(pay))) if pay else None}

    fast = approx("fast", "fast")
    out = {
        "instances": n,
        "seed": None,
        "zeta_rule": rule,
        "mean_ratio": main["mean_ratio"],
        "min_ratio": main["min_ratio"],
        "bound": main["bound"],
        "violations": main["violations"],
        "dual_violations": main["dual_violations"],
        "median_ratio": main["median_ratio"],
        "share_below_0_9": main["share_below_0_9"],
        "not_optimal": int(sum(x["opt_status"] != "optimal" for x in records)),
        "max_gap": _r(max(x["gap"] for x in records)),
        "mean_wall_s": _r(float(np.mean([x["wall_s"] for x in records])), 4),
        "mean_milp_wall_s": _r(float(np.mean([x["milp_wall_s"] for x in records])), 4),
        "max_milp_wall_s": _r(float(np.max([x["milp_wall_s"] for x in records])), 4),
        "mean_opt_completed_share": _r(float(np.mean([x["opt_completed"] / x["jobs"] for x in records])), 4),
        "fast_mean_ratio": fast["fast_mean_ratio"],
        "fast_min_ratio": fast["fast_min_ratio"],
        "fast_violations": fast["fast_violations"],
        "beta_observed_max": fast["fast_beta_observed_max"],
        "beta_observed_mean": fast["fast_beta_observed_mean"],
        "beta_unbounded_instances": fast["fast_beta_unbounded_instances"],
        "beta_gt1_instances": fast["fast_beta_gt1_instances"],
        "fast_payoff_ratio_mean": fast["fast_payoff_ratio_mean"],
        "fast_payoff_ratio_min": fast["fast_payoff_ratio_min"],
        **approx("contiguous", "contig"),
        "pack_slack": records[0]["packed"]["pack_slack"] if records else None,
        "packed_mean_ratio": _r(float(np.mean([x["packed"]["ratio"] for x in records]))),
        "packed_min_ratio": _r(float(np.min([x["packed"]["ratio"] for x in records]))),
        "packed_bound": float(f"{min(x['packed']['bound'] for x in records):.6g}"),
        "packed_violations": int(sum(x["packed"]["violation"] for x in records)),
        "packed_dual_violations": int(sum(x["packed"]["dual_violation"] for x in records)),
        "by_rule": {r: agg(r) for r in ZETA_RULES},
    }
    return out


def run_check(n: int, seed: int, *, rule: str = "quantised", time_limit_s: float = 60.0, workers: int = 1,
              max_jobs: int = 8, max_slots: int = 16,
              progress: Callable[[int, dict], None] | None = None) -> tuple[dict, list[dict]]:
    """Check ``n`` instances; ``progress(done, record)`` after each. Returns (summary, records)."""
    kw = dict(rule=rule, time_limit_s=time_limit_s, max_jobs=max_jobs, max_slots=max_slots)
    records: list[dict | None] = [None] * n
    if workers <= 1:
        for i in range(n):
            records[i] = check_instance(i, seed, **kw)
            if progress:
                progress(i + 1, records[i])
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            futs = {ex.submit(check_instance, i, seed, **kw): i for i in range(n)}
            done = 0
            for fut in as_completed(futs):
                i = futs[fut]
                records[i] = fut.result()
                done += 1
                if progress:
                    progress(done, records[i])
    summary = summarize(records, rule)
    summary["seed"] = seed
    return summary, records
