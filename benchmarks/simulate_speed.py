"""Simulator speed and memory per policy (issue 3 targets).

    python benchmarks/simulate_speed.py [--policies fifo,srtf,...] [--quick]

Runs, each in a fresh process (so peak memory is per run):
* the 160-job Pollux workload-1 on 16x4 (Pollux's testbed size), every policy;
* the full Philly trace (82,247 jobs) on 64x8, every policy: wall s (trace load included),
  peak RSS, jobs/s; a run over ``--timeout`` seconds is stopped and reported as such;
* how wall time grows with trace size: Philly's first 1k and 10k jobs and all 82k, per policy.
Needs ../shared (skips with a message otherwise). Ratios are against the first policy in the
same run (fifo by default).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces"
PHILLY = SHARED / "philly-pollux" / "philly.csv"
POLLUX = SHARED / "philly-pollux" / "workloads" / "workload-1.csv"

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from ringsched.cli.workload import load_workload
from ringsched.policies import make_policy
from ringsched.simulator import SimConfig, Simulator
trace, cluster, policy, limit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
wl = load_workload(trace, cluster, vc=None, window=None, limit=int(limit) if limit != "0" else None, seed=0, rigid=False)
t1 = time.perf_counter()
r = Simulator(wl.jobs, wl.cluster, make_policy(policy), SimConfig()).run()
t2 = time.perf_counter()
s = r.summary
print(json.dumps({"jobs": s["jobs"], "completed": s["completed"], "load_s": t1 - t0, "sim_s": t2 - t1,
                  "wall_s": t2 - t0, "decisions": s["decisions"], "mean_decision_ms": s["mean_decision_ms"],
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "mean_jct_s": s["mean_jct_s"], "total_utility": s["total_utility"]}))
"""


def run(trace: str, cluster: str, policy: str, limit: int = 0, timeout_s: float | None = None) -> dict:
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, trace, cluster, policy, str(limit)],
                             capture_output=True, text=True, cwd=ROOT, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout_s:g} s"}
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"rc {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policies", default=None)
    ap.add_argument("--quick", action="store_true", help="skip the full-trace runs")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run before it is stopped")
    args = ap.parse_args()
    if not PHILLY.exists():
        print(f"skipped: {PHILLY} not found (needs ../shared)")
        return
    from ringsched.policies import policy_names
    pols = args.policies.split(",") if args.policies else ["fifo"] + [p for p in policy_names() if p != "fifo"]
    print("== Pollux workload-1 (160 jobs) on 16x4")
    base = None
    for p in pols:
        r = run(f"pollux:{POLLUX}", "16x4", p)
        base = base or r.get("sim_s")
        print(f"  {p:9s} " + (r["error"] if "error" in r else
              f"sim {r['sim_s']:6.3f} s  total {r['wall_s']:5.2f} s  ratio-to-{pols[0]} {r['sim_s'] / base:5.2f}"))
    full = {}
    if not args.quick:
        print("== Full Philly (82,247 jobs) on 64x8, every policy")
        base = None
        for p in pols:
            r = full[p] = run(f"philly:{PHILLY}", "64x8", p, timeout_s=args.timeout)
            if "error" in r:
                print(f"  {p:9s} {r['error']}")
                continue
            base = base or r["wall_s"]
            print(f"  {p:9s} wall {r['wall_s']:6.1f} s (load {r['load_s']:.1f})  {r['jobs'] / r['sim_s']:7.0f} jobs/s  "
                  f"peak {r['peak_mib']:6.0f} MiB  decisions {r['decisions']:6d}  {r['mean_decision_ms']:.2f} ms each  "
                  f"ratio {r['wall_s'] / base:4.2f}  completed {r['completed']}", flush=True)
    print("== Philly scaling on 64x8: simulation seconds (jobs/s) by trace size")
    sizes = (1000, 10000) + (() if args.quick else (0,))
    print("  " + f"{'policy':9s}" + "".join(f"{n or 82247:>22,d}" for n in sizes))
    for p in pols:
        cells = []
        for n in sizes:
            r = full[p] if n == 0 else run(f"philly:{PHILLY}", "64x8", p, n, timeout_s=args.timeout)
            cells.append(f"{r['error'][:21]:>22}" if "error" in r else
                         f"{r['sim_s']:9.2f} s ({r['jobs'] / r['sim_s']:7.0f})")
        print(f"  {p:9s}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
