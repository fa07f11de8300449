"""Decision time of the pollux and sia policies with 100 active jobs on 64 GPUs.

    python benchmarks/pollux_sia_speed.py [--jobs 100] [--rounds 40] [--seed 0]

Targets (issue 18): pollux p99 < 1 s on 16x4 T4 (64 GPUs); sia p99 < 2 s on 64 GPUs of three
types (8 H200 servers of 4, 4 T4 servers of 4, and 4 servers of a synthetic third type
``t4half``: the T4 parameter files with compute time x 2, written to a temporary
``--gpu-profiles`` folder; a benchmark type, not a built-in one). Jobs: the six Pollux
applications' models in the workload-6 mix, adaptive batch, 1..64 GPUs, progress advanced
between rounds so goodput tables are recomputed as in a run. Each round is one decision
after the previous round's answer was applied (restarts counted). Prints p50 / p99 / max per
policy and the ratio to optimus' decision on the same states in the same process (optimus is
the reference: one greedy pass, no goodput search). Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
import tempfile
import time
from pathlib import Path

import numpy as np

MIX = [("resnet18_cifar10", 8, 256, 0.42), ("ncf", 1, 32768, 0.34), ("bert_base", 8, 48, 0.09),
       ("deepspeech2", 8, 40, 0.1), ("yolov3", 4, 16, 0.03), ("resnet50", 32, 200, 0.02)]


def third_type(root: Path) -> Path:
    src = Path(__file__).resolve().parents[1] / "src/ringsched/perfmodel/gpu_profiles/t4"
    (root / "t4half").mkdir(parents=True)
    for f in src.glob("*.json"):
        doc = json.loads(f.read_text())
        doc["params"]["compute_base_s"] *= 2
        doc["params"]["compute_per_sample_s"] *= 2
        (root / "t4half" / f.name).write_text(json.dumps(doc))
    return root


def make_states(n: int, seed: int):
    from ringsched.job import Job
    from ringsched.utility.defaults import jct_utility
    from ringsched.policies.base import JobState

    rng = np.random.default_rng(seed)
    weights = np.array([m[3] for m in MIX])
    states = []
    for i in range(n):
        model, gpus, local, _ = MIX[int(rng.choice(len(MIX), p=weights / weights.sum()))]
        job = Job(f"j{i}", float(i), model, local, float(rng.uniform(1e6, 5e7)), 1, 64,
                  jct_utility(3600.0, gpus), requested_gpus=gpus, adaptive_batch=model != "ncf")
        js = JobState(job, i, 1000.0)
        js.status = "active"
        states.append(js)
    return states


def rounds(policy, states, cluster, speed, n_rounds: int, rng, statuses: Counter) -> list[float]:
    """Decision times; ``statuses`` counts sia's solver outcomes (optimal or time limit)."""
    from ringsched.policies.base import Nodes

    prev: dict = {}
    now, out = 200.0, []
    for _ in range(n_rounds):
        nodes = Nodes(cluster, np.ones(cluster.num_servers, dtype=bool), now, 60.0, speed, 30.0)
        w0 = time.perf_counter()
        alloc = policy.optimize(states, nodes, prev)
        out.append(time.perf_counter() - w0)
        if getattr(policy, "last_status", None):
            statuses[policy.last_status] += 1
        for js in states:
            p = alloc.get(js.job_id, ())
            if p and p != js.placement and js.first_start_s is not None:
                js.restarts += 1
            if p and js.first_start_s is None:
                js.first_start_s = now
            js.placement = p
            js.done_samples = min(js.job.work_samples * 0.99,
                                  js.done_samples + js.job.work_samples * float(rng.uniform(0, 0.03)))
        prev = {k: v for k, v in alloc.items() if v}
        now += 60.0
    return out


def measure(name: str, spec: str, profiles_dir, n_jobs: int, n_rounds: int, seed: int) -> None:
    from ringsched.cluster import load_cluster
    from ringsched.perfmodel.gpus import GpuProfiles
    from ringsched.perfmodel.speed import SpeedModel
    from ringsched.policies import make_policy

    cluster = load_cluster(spec)
    speed = SpeedModel(cluster, GpuProfiles((profiles_dir,)) if profiles_dir else None)
    res, statuses = {}, Counter()
    for pol in (name, "optimus"):
        states = make_states(n_jobs, seed)
        t = rounds(make_policy(pol), states, cluster, speed, n_rounds, np.random.default_rng(seed), statuses)
        res[pol] = np.array(t)
    a, ref = res[name], res["optimus"]
    print(f"{name:7s} on {cluster.total_gpus} GPUs ({', '.join(cluster.gpu_types)}), {n_jobs} jobs, "
          f"{n_rounds} rounds: p50 {np.median(a) * 1e3:7.1f} ms  p99 {np.percentile(a, 99) * 1e3:7.1f} ms  "
          f"max {a.max() * 1e3:7.1f} ms | optimus p50 {np.median(ref) * 1e3:.2f} ms, "
          f"ratio p50 {np.median(a) / np.median(ref):.0f}x" + (f" | solver: {dict(statuses)}" if statuses else ""),
          flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    measure("pollux", "16x4,gpu=t4", None, args.jobs, args.rounds, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = third_type(Path(tmp) / "profiles")
        yaml = Path(tmp) / "three.yaml"
        yaml.write_text("servers:\n  - {count: 8, gpus: 4}\n  - {count: 4, gpus: 4, gpu: t4}\n"
                        "  - {count: 4, gpus: 4, gpu: t4half, intra_Bps: 2.73e9, nic_Bps: 0.83e9}\n")
        measure("sia", str(yaml), root, args.jobs, args.rounds, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
