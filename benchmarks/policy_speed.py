"""Simulation speed of every registered policy on a Philly-like synthetic workload.

10,000 jobs (by default) on a 64x8 cluster at about 0.7 offered load: exponential
inter-arrivals, GPU counts 1 (93%), 2, 4, 8, 16, durations lognormal with median 1,144 s
and p90 11,266 s (Philly-like), all "resnet50" at local batch 64, work = duration x
throughput at the requested size (consolidated). Jobs may shrink to one worker (min 1,
max = requested) so elastic policies have room; ``--rigid`` makes min = max.

Prints, per policy: wall seconds, CPU seconds (steadier than wall on a shared machine),
jobs/s, decisions, mean decision ms, and the ratio of its wall time to fifo's (the
reference, run first in the same process). ``--philly FILE`` runs the real Philly trace
(Pollux's philly.csv, elastic jobs as the lead's full run) instead of the synthetic one;
``--profile NAME`` prints a cProfile of one policy's run.

    python benchmarks/policy_speed.py [--jobs 10000] [--cluster 64x8] [--policies a,b]
    python benchmarks/policy_speed.py --philly ../shared/traces/philly-pollux/philly.csv --jobs 0
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.utility.functions import SigmoidUtility
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.policies import make_policy, policy_names
from ringsched.simulator import SimConfig, Simulator

GPUS = np.array([1, 2, 4, 8, 16])
GPU_P = np.array([0.93, 0.03, 0.02, 0.015, 0.005])
MEDIAN_S, P90_S = 1144.0, 11266.0


def philly_like(n: int, cluster, *, load: float = 0.7, seed: int = 0, rigid: bool = False) -> list[Job]:
    rng = np.random.default_rng(seed)
    mu = np.log(MEDIAN_S)
    sigma = np.log(P90_S / MEDIAN_S) / 1.2815515655446004  # z of the 90th percentile
    mean_gpu_s = float(GPUS @ GPU_P) * np.exp(mu + sigma**2 / 2)
    gap_s = mean_gpu_s / (load * cluster.total_gpus)
    arrivals = np.cumsum(rng.exponential(gap_s, n))
    gpus = rng.choice(GPUS, size=n, p=GPU_P)
    dur = rng.lognormal(mu, sigma, n)
    sp = SpeedModel(cluster)
    g = int(cluster.gpus.max())
    u = SigmoidUtility(1.0, 3600.0, 0.001)
    jobs = []
    for i in range(n):
        w = int(gpus[i])
        rate = sp.throughput_sps("resnet50", 64, consolidated_shape(w, g))
        jobs.append(Job(f"j{i}", float(arrivals[i]), "resnet50", 64, float(dur[i]) * rate,
                        w if rigid else 1, w, u, requested_gpus=w, tenant=f"t{i % 7}"))
    return jobs


def philly_trace(path: str, cluster, limit: int) -> list[Job]:
    from ringsched.traces import philly
    from ringsched.traces.convert import to_jobs

    df = philly.read(path)
    if limit:
        df = df.sort_values("arrival_s", kind="stable").head(limit).reset_index(drop=True)
    return to_jobs(df, cluster, elastic=True)


def run_one(name, jobs, cluster, cfg):
    w0, c0 = time.perf_counter(), time.process_time()
    r = Simulator(jobs, cluster, make_policy(name), cfg).run()
    return time.perf_counter() - w0, time.process_time() - c0, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--cluster", default="64x8")
    ap.add_argument("--load", type=float, default=0.7)
    ap.add_argument("--slot-s", type=float, default=300.0)
    ap.add_argument("--policies", default="", help="comma-separated (default: all registered)")
    ap.add_argument("--rigid", action="store_true", help="min_workers = requested")
    ap.add_argument("--philly", default="", help="run this Philly trace file instead (--jobs 0: all of it)")
    ap.add_argument("--profile", default="", help="cProfile this policy and print the top functions")
    a = ap.parse_args()
    cluster = parse_spec(a.cluster)
    jobs = (philly_trace(a.philly, cluster, a.jobs) if a.philly
            else philly_like(a.jobs, cluster, load=a.load, rigid=a.rigid))
    cfg = SimConfig(slot_s=a.slot_s)
    if a.profile:
        pr = cProfile.Profile()
        pr.enable()
        run_one(a.profile, jobs, cluster, cfg)
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
        return
    names = [p for p in a.policies.split(",") if p] or policy_names()
    names = ["fifo"] + [p for p in names if p != "fifo"]
    print(f"{len(jobs)} jobs on {cluster.describe()}, slot {a.slot_s:g} s")
    print(f"{'policy':<10} {'wall_s':>8} {'cpu_s':>8} {'jobs/s':>9} {'decisions':>9} {'ms/dec':>8} "
          f"{'x fifo':>7} {'done':>6} {'mean_jct_h':>10}")
    ref = None
    for name in names:
        wall, cpu, r = run_one(name, jobs, cluster, cfg)
        ref = ref or wall
        s = r.summary
        done = int((r.jobs.status == "completed").sum())
        print(f"{name:<10} {wall:8.2f} {cpu:8.2f} {len(jobs) / wall:9.0f} {s['decisions']:9d} "
              f"{s['mean_decision_ms']:8.3f} {wall / ref:7.2f} {done:6d} {r.jobs.jct_s.mean() / 3600:10.2f}",
              flush=True)


if __name__ == "__main__":
    main()
