"""Fingerprints of GADGET's and OASiS' decisions: a SHA-256 of every job's result row.

A refactoring that must not change decisions prints the same lines before and after. The
cases cover the reference workloads of ``gadget_reference.py`` (kept short with ``--limit``),
strict admission, server failures and the energy terms of the prices.

    python benchmarks/gadget_fingerprint.py [--limit 600] [--cases synthetic,strict,...]
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

SHARED = Path("/work/shared/traces")
PHILLY = f"philly:{SHARED / 'philly-pollux' / 'philly.csv'}"
ITP = f"itp:{SHARED / 'microsoft-itp-elasticflow' / 'raw-traces'}"
# name -> (trace, cluster, vc, policy spec, SimConfig options)
CASES = {
    "synthetic": ("synthetic:2000", "16x8", None, "gadget", {}),
    "synthetic-oasis": ("synthetic:2000", "16x8", None, "oasis", {}),
    "philly": (PHILLY, "16x8", "ee9e8c", "gadget", {}),
    "philly-oasis": (PHILLY, "16x8", "ee9e8c", "oasis", {}),
    "strict": ("synthetic:2000,load=3", "16x8", None, "gadget:admission=strict", {}),
    "failures": ("synthetic:2000", "16x8", None, "gadget", {"mtbf_h": 50.0}),
    "energy": ("synthetic:2000", "16x8", None, "gadget:energy_cost_per_gpu_s=1e-6,server_cost_per_s=1e-5", {}),
    "loaded": ("synthetic:1500,load=3", "16x8", None, "gadget", {}),
    "small": ("synthetic:300,load=2", "2x8", None, "gadget", {"restart_s": 0.0}),
    "plain": ("synthetic:1500,load=2", "16x8", None, "gadget:late_share=0,pack_slack=0,top_up=false,near_payoff=0.01", {}),
    "no-lending": ("synthetic:1500,load=2", "16x8", None, "gadget:work_conserving=false,bounds=theory", {}),
    "cluster04": (ITP, "80x8", "cluster04", "gadget", {}),
}


def fingerprint(case: str, limit: int | None) -> tuple[str, dict, float]:
    from ringsched.cli.workload import load_workload
    from ringsched.policies import make_policy
    from ringsched.simulator import SimConfig, Simulator

    trace, cluster, vc, spec, cfg = CASES[case]
    wl = load_workload(trace, cluster, vc=vc, window=None, limit=limit, seed=0, rigid=False)
    t0 = time.perf_counter()
    r = Simulator(wl.jobs, wl.cluster, make_policy(spec), SimConfig(seed=0, **cfg)).run()
    digest = hashlib.sha256(r.jobs.to_csv(index=False).encode()).hexdigest()[:16]
    return digest, r.summary, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--limit", type=int, default=600, help="first N jobs of each trace (0: all)")
    a = ap.parse_args()
    for case in [c for c in a.cases.split(",") if c]:
        if not CASES[case][0].startswith("synthetic") and not SHARED.exists():
            print(f"{case:16s} skipped ({SHARED} not found)", flush=True)
            continue
        digest, s, wall = fingerprint(case, a.limit or None)
        print(f"{case:16s} {digest}  utility {s['total_utility']:.1f}  mean JCT {s['mean_jct_s'] / 3600:.3f} h  "
              f"({wall:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
