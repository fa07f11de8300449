"""GADGET against every baseline on the reference workloads of issue 4 (JCT objective).

Workloads (``--workloads``, comma-separated names):
* ``synthetic``: ``synthetic:2000`` on 16x8 (built in);
* ``ee9e8c``: Philly VC ee9e8c (1,511 jobs) on 16x8 (needs ../shared);
* ``cluster04``: Microsoft ITP cluster04 (15,802 jobs) on 80x8 (needs ../shared).

For each, every policy runs in its own worker process (``--workers``); prints the table of
total utility, mean / p99 JCT and wall time, and the ratios GADGET / best baseline for total
utility (target > 1) and mean JCT (target <= 1). The best baseline is the best of fifo, srtf,
drf, tiresias, optimus, themis, sjf-bco and oasis on that column. A run over ``--timeout``
seconds is stopped and reported. ``--limit N`` keeps each trace's first N jobs (quick looks).
Also printed: an upper bound on any policy's total utility in this simulator, every job alone
from the first slot boundary after its arrival at its fastest worker count (consolidated),
with no restart; on a lightly loaded workload the baselines can reach it, and then no policy
can beat them by more than the gap.

    python benchmarks/gadget_reference.py [--workloads synthetic,ee9e8c,cluster04] [--timeout 3600]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
WORKLOADS = {
    "synthetic": ("synthetic:2000", "16x8", None),
    "ee9e8c": (f"philly:{SHARED / 'philly-pollux' / 'philly.csv'}", "16x8", "ee9e8c"),
    "cluster04": (f"itp:{SHARED / 'microsoft-itp-elasticflow' / 'raw-traces'}", "80x8", "cluster04"),
}
BASELINES = ("fifo", "srtf", "drf", "tiresias", "optimus", "themis", "sjf-bco", "oasis")


def run(trace: str, cluster: str, vc: str | None, limit: int | None, policy: str) -> dict:
    from ringsched.cli.workload import load_workload
    from ringsched.experiment.run import run_one as run_with_objective
    from ringsched.simulator import SimConfig

    wl = load_workload(trace, cluster, vc=vc, window=None, limit=limit, seed=0, rigid=False)
    t0 = time.perf_counter()
    s = run_with_objective("jct", wl.jobs, wl.cluster, policy, SimConfig()).summary
    return {"policy": policy, "jobs": s["jobs"], "completed": s["completed"], "utility": s["total_utility"],
            "mean_jct_h": s["mean_jct_s"] / 3600, "p99_jct_h": s["p99_jct_s"] / 3600, "wall_s": time.perf_counter() - t0}


def upper_bound(trace: str, cluster: str, vc: str | None, limit: int | None, slot_s: float = 300.0) -> float:
    import math

    from ringsched.cli.workload import load_workload
    from ringsched.perfmodel.speed import SpeedModel, consolidated_shape

    wl = load_workload(trace, cluster, vc=vc, window=None, limit=limit, seed=0, rigid=False)
    sp, gps = SpeedModel(wl.cluster), int(wl.cluster.gpus.max())
    total = 0.0
    for j in wl.jobs:
        rate = max(sp.throughput_sps(j.model, j.local_bsz, consolidated_shape(w, gps))
                   for w in range(j.min_workers, min(j.max_workers, wl.cluster.total_gpus) + 1))
        start = math.ceil(j.arrival_s / slot_s - 1e-9) * slot_s
        total += float(j.utility(start + j.work_samples / rate - j.arrival_s))
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="synthetic,ee9e8c,cluster04")
    ap.add_argument("--policies", default=",".join(("gadget",) + BASELINES))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per workload before the rest is dropped")
    ap.add_argument("--limit", type=int, default=None)
    a = ap.parse_args()
    pols = [p for p in a.policies.split(",") if p]
    for name in [w for w in a.workloads.split(",") if w]:
        trace, cluster, vc = WORKLOADS[name]
        if not trace.startswith("synthetic") and not SHARED.exists():
            print(f"== {name}: skipped ({SHARED} not found)")
            continue
        print(f"== {name}: {trace}{' --vc ' + vc if vc else ''} on {cluster}", flush=True)
        print(f"  upper bound on total utility (every job alone from its first slot): "
              f"{upper_bound(trace, cluster, vc, a.limit):.1f}", flush=True)
        rows = {}
        with cf.ProcessPoolExecutor(a.workers, mp_context=mp.get_context("spawn")) as ex:
            futs = {ex.submit(run, trace, cluster, vc, a.limit, p): p for p in pols}
            try:
                for f in cf.as_completed(futs, timeout=a.timeout):
                    r = rows[futs[f]] = f.result()
                    print(f"  {r['policy']:9s} utility {r['utility']:12.1f}  mean JCT {r['mean_jct_h']:8.2f} h  "
                          f"p99 {r['p99_jct_h']:8.1f} h  done {r['completed']}/{r['jobs']}  wall {r['wall_s']:7.1f} s",
                          flush=True)
            except cf.TimeoutError:
                missing = sorted(set(pols) - set(rows))
                print(f"  stopped after {a.timeout:g} s: {', '.join(missing)} unfinished", flush=True)
                for p in ex._processes.values():  # noqa: SLF001 - stop the runs still going
                    p.kill()
        base = [rows[p] for p in BASELINES if p in rows]
        if "gadget" in rows and base:
            g = rows["gadget"]
            bu = max(base, key=lambda r: r["utility"])
            bj = min(base, key=lambda r: r["mean_jct_h"])
            print(f"  GADGET / best baseline: utility {g['utility'] / bu['utility']:.4f} (best {bu['policy']}), "
                  f"mean JCT {g['mean_jct_h'] / bj['mean_jct_h']:.4f} (best {bj['policy']})", flush=True)


if __name__ == "__main__":
    main()
