"""Reproduce the Pollux artifact's published average JCTs on its workloads (docs/reproduction.md).

    python benchmarks/reproduction.py [--workload 6] [--policies tiresias,optimus,pollux]
                                      [--cluster 16x4,gpu=t4] [--slot-s 60] [--restart-s 30]

The Pollux artifact (petuum/adaptdl, branch osdi21-artifact, simulator/README.md) publishes,
for workload 6 on 16 nodes x 4 T4: pollux 2,446.1 s, optimus (Optimus+Oracle+TunedJobs)
5,301.9 s, tiresias (Tiresias+TunedJobs) 3,469.7 s. This script builds the workload's jobs
the way the artifact's simulator treats them (below), runs ringsched's policies of those names
on ``--cluster`` with the artifact's 60 s scheduling interval and 30 s restart delay, and
prints each average JCT beside the published one.

Jobs (from ``workload-N.csv``: name, time, application, num_replicas, batch_size):
* work: the application's Pollux work (``traces.pollux.WORK_SAMPLES``, samples at the
  initial batch M0) converted to samples at the job's own total batch with the measured
  statistical efficiency (``NoiseScale.samples_at``), since ringsched counts work at the job's
  batch;
* tiresias: rigid, num_replicas GPUs, per-GPU batch batch_size // num_replicas (TunedJobs);
* optimus (and gadget, for information): elastic on 1..num_replicas GPUs at that per-GPU
  batch (ringsched's convention);
* pollux, sia: adaptive batch, 1..min(64, largest measured batch // smallest measured per-GPU
  batch) GPUs, except ncf, which the artifact pins to batch 32,768 on one GPU.
Needs the workloads under ``<repo>/../shared/traces/philly-pollux/workloads`` (or
RINGSCHED_SHARED); prints ``skipped: ...`` without them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

# Average JCT (s) of the artifact's own runs: the mean of the per-job JCTs in
# simulator/results-jobload/<policy>-1.0/summary.json (petuum/adaptdl, osdi21-artifact,
# commit c793c70); workload 6's equal the README's figures.
PUBLISHED = {
    1: {"pollux": 2088.8, "optimus": 4087.1, "tiresias": 2473.7},
    2: {"pollux": 3322.9, "optimus": 6913.9, "tiresias": 5145.0},
    3: {"pollux": 2188.5, "optimus": 3944.0, "tiresias": 3876.3},
    4: {"pollux": 2721.0, "optimus": 5967.8, "tiresias": 3280.3},
    5: {"pollux": 2673.7, "optimus": 5656.2, "tiresias": 3501.0},
    6: {"pollux": 2446.13125, "optimus": 5301.875, "tiresias": 3469.69375},
    7: {"pollux": 3616.1, "optimus": 7290.9, "tiresias": 5479.9},
    8: {"pollux": 2951.9, "optimus": 6293.8, "tiresias": 5079.7},
}
# workload 6, mean JCT by application (s), same files
PUBLISHED_BY_APP = {
    "pollux": {"bert": 2890, "cifar10": 1270, "deepspeech2": 4857, "imagenet": 38836, "ncf": 110, "yolov3": 12552},
    "optimus": {"bert": 9375, "cifar10": 3376, "deepspeech2": 13262, "imagenet": 48641, "ncf": 106, "yolov3": 23534},
    "tiresias": {"bert": 3761, "cifar10": 2470, "deepspeech2": 5522, "imagenet": 49761, "ncf": 357, "yolov3": 15262},
}
SOURCE = "petuum/adaptdl@osdi21-artifact simulator/README.md and results-jobload/*-1.0/summary.json"


def shared_dir() -> Path:
    env = os.environ.get("RINGSCHED_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def build_jobs(path: Path, policy: str, cluster) -> list:
    """The workload's jobs as the artifact's simulator runs them under ``policy``."""
    from ringsched.job import Job
    from ringsched.utility.defaults import jct_utility
    from ringsched.perfmodel.efficiency import noise_scale
    from ringsched.traces import pollux as pt

    raw = pd.read_csv(path)
    t0 = float(raw["time"].min())
    jobs = []
    for r in raw.itertuples(index=False):
        app, model = r.application, pt.MODELS[r.application]
        ns = noise_scale(model)
        reps, batch = int(r.num_replicas), int(r.batch_size)
        local, lo, hi, adaptive = max(1, batch // reps), reps, reps, False
        if policy in ("optimus", "gadget"):
            lo = 1
        elif policy in ("pollux", "sia"):
            adaptive, lo, hi = True, 1, min(64, ns.max_batch // ns.min_local_bsz)
            if app == "ncf":
                reps, local, hi, adaptive = 1, 32768, 1, False
        hi = min(hi, cluster.total_gpus)
        work = pt.work_at_batch(app, reps * local)  # (the trace loader's conversion)
        jobs.append(Job(str(r.name), float(r.time) - t0, model, local, work, min(lo, hi), hi,
                        jct_utility(3600.0, reps), requested_gpus=min(reps, hi), adaptive_batch=adaptive))
    return jobs


def make(policy: str):
    """ringsched's policy of that name; ``tiresias-artifact`` is ringsched's Tiresias with the
    artifact's settings (two queues split at 16 GPU-hours, no promotion)."""
    from ringsched.policies import make_policy
    from ringsched.policies.tiresias import Tiresias

    if policy == "tiresias-artifact":
        return Tiresias(queue_thresholds_gpu_s=(16 * 3600.0,), promote_knob=None)
    return make_policy(policy)


def run(path: Path, policy: str, spec: str, slot_s: float, restart_s: float) -> dict:
    from ringsched.cluster import load_cluster
    from ringsched.simulator.engine import SimConfig, Simulator

    cluster = load_cluster(spec)
    jobs = build_jobs(path, policy.removesuffix("-artifact"), cluster)
    w0 = time.perf_counter()
    # the artifact decides every 60 s only: the slotted world (ringsched's default also decides at events)
    sim = Simulator(jobs, cluster, make(policy), SimConfig(slot_s=slot_s, restart_s=restart_s, decide_at_events=False))
    res = sim.run()
    js = res.jobs
    done = js[js.status == "completed"]
    return {"policy": policy, "mean_jct_s": float((done.finish_s - done.arrival_s).mean()),
            "completed": len(done), "jobs": len(js), "makespan_s": float(done.finish_s.max()),
            "gpu_util": float(res.summary.get("gpu_utilization", float("nan"))),
            "decision_ms": 1e3 * sim.decision_wall_s / max(1, sim.decisions),
            "wall_s": time.perf_counter() - w0,
            "by_app": (done.finish_s - done.arrival_s).groupby(done.job_id.str.rsplit("-", n=1).str[0]).mean().round(0).to_dict()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="6", help="1..8, comma-separated, or 'all'")
    ap.add_argument("--policies", default="tiresias,tiresias-artifact,optimus,pollux,sia")
    ap.add_argument("--cluster", default="16x4,gpu=t4")
    ap.add_argument("--slot-s", type=float, default=60.0)
    ap.add_argument("--restart-s", type=float, default=30.0)
    args = ap.parse_args(argv)
    folder = shared_dir() / "traces" / "philly-pollux" / "workloads"
    if not folder.is_dir():
        print(f"skipped: no Pollux workloads under {folder} (set RINGSCHED_SHARED)")
        return 0
    numbers = range(1, 9) if args.workload == "all" else [int(x) for x in args.workload.split(",")]
    print(f"{args.cluster}, slot {args.slot_s:g} s, restart {args.restart_s:g} s; published: {SOURCE}")
    print(f"{'workload':8s} {'policy':17s} {'mean JCT s':>10s} {'published':>9s} {'ratio':>5s} {'done':>7s} "
          f"{'util':>4s} {'ms/dec':>6s} {'wall s':>6s}  mean JCT by application (s)")
    for n in numbers:
        for pol in args.policies.split(","):
            r = run(folder / f"workload-{n}.csv", pol.strip(), args.cluster, args.slot_s, args.restart_s)
            pub = PUBLISHED.get(n, {}).get(r["policy"].removesuffix("-artifact"))
            ratio = f"{r['mean_jct_s'] / pub:5.2f}" if pub else "    -"
            print(f"{n:<8d} {r['policy']:17s} {r['mean_jct_s']:10.1f} {pub or float('nan'):9.1f} {ratio} "
                  f"{r['completed']:>3d}/{r['jobs']:<3d} {r['gpu_util']:4.2f} {r['decision_ms']:6.2f} "
                  f"{r['wall_s']:6.1f}  {r['by_app']}", flush=True)
    if 6 in numbers:
        print("published, workload 6, by application:", PUBLISHED_BY_APP)
    return 0


if __name__ == "__main__":
    sys.exit(main())
