"""Decision time of the pollux and sia policies with 100 active jobs on 64 GPUs.

    python benchmarks/pollux_sia_speed.py [--jobs 100] [--rounds 40] [--seed 0] [--cell-workload philly-0e4a51-small] [--cell-jobs 120]

Targets (issue 18): pollux p99 < 1 s on 16x4 T4 (64 GPUs); sia p99 < 2 s on 64 GPUs of three
types (8 H200 servers of 4, 4 T4 servers of 4, and 4 servers of a synthetic third type
``t4half``: the T4 parameter files with compute time x 2, written to a temporary
``--gpu-profiles`` folder; a benchmark type, not a built-in one). Jobs: the six Pollux
applications' models in the workload-6 mix, adaptive batch, 1..64 GPUs, progress advanced
between rounds so goodput tables are recomputed as in a run. Each round is one decision
after the previous round's answer was applied (restarts counted). Prints p50 / p99 / max per
policy and the ratio to optimus' decision on the same states in the same process (optimus is
the reference: one greedy pass, no goodput search). Timings on a shared machine are noisy.

Two more lines (docs/suite-history.md, the suite's runtime): the count knapsack compiled
(``knapsack.solve``) against the numpy program it replaced (``knapsack.solve_numpy``, the
reference) on the knapsacks of pollux's 16x4 rounds, checking they pick the same counts; and
whole suite cells of an overloaded workload (``--cell-workload``, its first ``--cell-jobs``
jobs, seed 0, exact estimates; skipped without the shared traces) with pollux and sia, as
ratios of wall time to fifo's cell in the same process.
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


def knapsack_ratio(n_jobs: int, n_rounds: int, seed: int) -> None:
    """Compiled DP against the numpy reference on the knapsacks of pollux's rounds."""
    from ringsched.cluster import load_cluster
    from ringsched.perfmodel.speed import SpeedModel
    from ringsched.policies import knapsack
    from ringsched.policies.base import Nodes
    from ringsched.policies.pollux import Pollux, counts_of

    cluster = load_cluster("16x4,gpu=t4")
    speed, pol = SpeedModel(cluster), Pollux()
    states, rng = make_states(n_jobs, seed), np.random.default_rng(seed)
    problems = []
    for r in range(n_rounds):
        nodes = Nodes(cluster, np.ones(cluster.num_servers, dtype=bool), 200.0 + 60 * r, 60.0, speed, 30.0)
        counts = [counts_of(js.job.min_workers, js.job.max_workers, 4, cluster.total_gpus) for js in states]
        vals, cnts, starts = pol._values(states, counts, nodes)
        problems.append(([vals[a:b] for a, b in zip(starts, starts[1:])], counts, (vals, cnts, starts)))
        for js in states:
            js.done_samples = min(js.job.work_samples * 0.99,
                                  js.done_samples + js.job.work_samples * float(rng.uniform(0, 0.03)))
    knapsack.solve(*problems[0][2], cluster.total_gpus)  # compile (or load numba's cache) first
    wall = {}
    for name, run in (("numpy", lambda v, c, a: knapsack.solve_numpy(v, c, cluster.total_gpus)),
                      ("compiled", lambda v, c, a: knapsack.solve(*a, cluster.total_gpus))):
        w0 = time.perf_counter()
        wall[name] = [run(*pr) for pr in problems], time.perf_counter() - w0
    same = wall["numpy"][0] == wall["compiled"][0]
    print(f"knapsack of {n_jobs} jobs on {cluster.total_gpus} GPUs, {n_rounds} rounds: compiled "
          f"{wall['compiled'][1] / n_rounds * 1e3:.3f} ms, numpy reference {wall['numpy'][1] / n_rounds * 1e3:.3f} ms, "
          f"ratio {wall['numpy'][1] / wall['compiled'][1]:.0f}x faster, same counts: {same}", flush=True)


def cell_ratios(name: str, cell_jobs: int) -> None:
    """Suite cells (workload ``name``, its first ``cell_jobs`` jobs): wall time per policy over fifo's."""
    import dataclasses

    from ringsched.experiment.suite import Cell, run_cell
    from ringsched.experiment.workloads import WORKLOADS

    w = dataclasses.replace(next(x for x in WORKLOADS if x.name == name), limit=cell_jobs)
    if w.needs() is not None and not w.needs().exists():
        print(f"suite cell {name}: skipped ({w.needs()} not found; set RINGSCHED_SHARED)", flush=True)
        return
    walls = {p: run_cell(Cell(w, 0, "exact", p))["wall_s"] for p in ("fifo", "pollux", "sia")}
    print(f"suite cell {name} (first {cell_jobs} jobs, seed 0, exact): " + ", ".join(
        f"{p} {walls[p]:.1f} s ({walls[p] / walls['fifo']:.1f}x fifo)" for p in ("pollux", "sia"))
        + f", fifo {walls['fifo']:.2f} s", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cell-workload", default="philly-0e4a51-small")
    ap.add_argument("--cell-jobs", type=int, default=120)
    args = ap.parse_args(argv)
    knapsack_ratio(args.jobs, args.rounds, args.seed)
    cell_ratios(args.cell_workload, args.cell_jobs)
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
