"""The evaluation suite's workloads (docs/suite.md): every trace family of the shared traces,
offered loads from about 0.5 to 3, clusters from 2x8 to 80x8 and of two GPU types (T4 and
H200 server groups, ``clusters/*.yaml``), rigid and elastic jobs, adaptive-batch jobs, mixes of
many short jobs and of few large ones.

Each workload is a trace spec, a cluster and the filters that slice it small enough for the
whole suite to run on a 2-core machine in under 45 minutes (``limit``). Each is run with two
seeds: the seed drives the synthetic generator and the model mapping where the trace leaves
models open, and from seed 1 on every arrival is also perturbed (``perturb_arrivals``), so
traces that fix their models still get two different arrival sequences.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ringsched.job import Job


def shared_traces() -> Path:
    """The shared traces folder: $RINGSCHED_SHARED/traces (as the tests), else the first
    ``shared/traces`` beside the repository or a folder above it (a worktree sits deeper)."""
    env = os.environ.get("RINGSCHED_SHARED")
    if env:
        return Path(env) / "traces"
    repo = Path(__file__).resolve().parents[3]
    for up in repo.parents:
        if (up / "shared" / "traces").is_dir():
            return up / "shared" / "traces"
    return repo.parent / "shared" / "traces"


@dataclass(frozen=True)
class SuiteWorkload:
    name: str
    family: str  # trace family (philly, itp, gavel, elasticflow, alibaba, pollux, synthetic)
    trace: str  # spec with {shared} standing for the shared traces folder
    cluster: str
    mix: str  # what the workload stresses, in words
    vc: str | None = None
    limit: int | None = None
    window: str | None = None
    rigid: bool = False
    adaptive_batch: bool = False  # jobs of a model with a measured noise scale adapt their batch (docs/model.md)

    def needs(self) -> Path | None:
        """The shared file this workload reads (None: built in)."""
        if "{shared}" not in self.trace:
            return None
        return Path(self.trace.partition(":")[2].format(shared=shared_traces()))

    def spec(self) -> str:
        return self.trace.format(shared=shared_traces())

    def cluster_spec(self) -> str:
        """The cluster as ``load_cluster`` takes it: a spec string, or the path of one of the
        suite's YAML files (``{clusters}/NAME.yaml``)."""
        return self.cluster.format(clusters=CLUSTERS)

    def describe(self) -> str:
        parts = [self.spec().replace(str(shared_traces()), "shared"), f"cluster {self.cluster.replace('{clusters}/', '')}"]
        parts += [f"vc {self.vc}"] if self.vc else []
        parts += [f"window {self.window}"] if self.window else []
        parts += [f"limit {self.limit}"] if self.limit else []
        parts.append("rigid" if self.rigid else "elastic")
        parts += ["adaptive batch"] if self.adaptive_batch else []
        return ", ".join(parts)

    def adapt(self, jobs: list[Job]) -> list[Job]:
        """The jobs as this workload runs them: with ``adaptive_batch``, every job whose model has
        a measured noise scale adapts its batch (the world credits its goodput, for every policy)."""
        if not self.adaptive_batch:
            return list(jobs)
        from ringsched.perfmodel.efficiency import noise_scale

        return [dataclasses.replace(j, adaptive_batch=True) if noise_scale(j.model) else j for j in jobs]


CLUSTERS = Path(__file__).with_name("clusters")  # the suite's YAML clusters (package data)


S = "{shared}"
PH = f"philly:{S}/philly-pollux/philly.csv"
ITP = f"itp:{S}/microsoft-itp-elasticflow/raw-traces"
WORKLOADS: tuple[SuiteWorkload, ...] = (
    # synthetic load is relative to 128 GPUs (docs/traces.md): load=L on G GPUs offers L x 128 / G
    SuiteWorkload("syn-0.5", "synthetic", "synthetic:300,load=0.125", "4x8", "synthetic, light load"),
    SuiteWorkload("syn-1.1", "synthetic", "synthetic:300,load=0.275", "4x8", "synthetic, loaded"),
    SuiteWorkload("syn-2.1-rigid", "synthetic", "synthetic:300,load=0.31", "2x8", "synthetic, overloaded, rigid",
                  rigid=True),
    SuiteWorkload("syn-3", "synthetic", "synthetic:300,load=0.45", "2x8", "synthetic, heavily overloaded"),
    SuiteWorkload("philly-ee9e8c", "philly", PH, "16x8", "Philly VC, many 1-GPU jobs", vc="ee9e8c", limit=600),
    SuiteWorkload("philly-0e4a51-small", "philly", PH, "2x8", "Philly VC overloaded on a small cluster",
                  vc="0e4a51", limit=300),
    SuiteWorkload("philly-7f04ca-rigid", "philly", PH, "16x8", "Philly VC, rigid", vc="7f04ca", limit=500, rigid=True),
    SuiteWorkload("philly-103959", "philly", PH, "2x8", "Philly VC, mostly 1-GPU jobs", vc="103959", limit=400),
    SuiteWorkload("itp-cluster04", "itp", ITP, "80x8", "ITP cluster, many short jobs", vc="cluster04", limit=1500),
    SuiteWorkload("itp-cluster02", "itp", ITP, "10x8", "ITP cluster, some 64-GPU jobs", vc="cluster02", limit=800),
    SuiteWorkload("gavel-ee9e8c", "gavel", f"gavel:{S}/gavel-philly/seed=0/ee9e8c.trace", "4x8", "Gavel trace", limit=500),
    SuiteWorkload("gavel-6214e9", "gavel", f"gavel:{S}/gavel-philly/seed=0/6214e9.trace", "4x8", "Gavel trace", limit=300),
    SuiteWorkload("elasticflow-103959", "elasticflow", f"elasticflow:{S}/elasticflow-philly/philly_103959.csv", "2x8",
                  "ElasticFlow Philly VC", limit=400),
    SuiteWorkload("alibaba", "alibaba", f"alibaba:{S}/alibaba-gpu-v2023/openb_pod_list_default.csv", "2x8",
                  "Alibaba GPU pods, many small jobs", limit=1200),
    SuiteWorkload("pollux-w2-small", "pollux", f"pollux:{S}/philly-pollux/workloads/workload-2.csv", "2x8",
                  "Pollux workload on a small cluster, elastic", limit=160),
    SuiteWorkload("pollux-w5", "pollux", f"pollux:{S}/philly-pollux/workloads/workload-5.csv", "2x8", "Pollux workload, few large elastic jobs",
                  limit=160),
    SuiteWorkload("many-short", "synthetic", "synthetic:800,load=0.3,max_duration_s=3600", "4x8",
                  "many short jobs (at most 1 h alone)"),
    # two GPU types: durations are converted at the first group's type (T4), so the H200 servers
    # run the same jobs several times faster; a type-aware policy should put the work there
    SuiteWorkload("mixed-syn", "synthetic", "synthetic:300,load=0.6", "{clusters}/t4x8-h200x2.yaml",
                  "two GPU types (8x4 T4 + 2x8 H200), synthetic, loaded"),
    SuiteWorkload("mixed-philly-ee9e8c", "philly", PH, "{clusters}/t4x16-h200x4.yaml",
                  "two GPU types (16x4 T4 + 4x8 H200), Philly VC", vc="ee9e8c", limit=400),
    SuiteWorkload("pollux-w6-t4", "pollux", f"pollux:{S}/philly-pollux/workloads/workload-6.csv", "16x4,gpu=t4",
                  "Pollux's workload 6 on its testbed (16x4 T4), adaptive batch", limit=160, adaptive_batch=True),
)


def workload_names() -> list[str]:
    return [w.name for w in WORKLOADS]


def perturb_arrivals(jobs: list[Job], seed: int) -> list[Job]:
    """Seed 0: the trace's arrivals. Seed s >= 1: each arrival moved by a uniform draw in
    +-half the mean gap between arrivals (kept >= 0), so the order of near arrivals changes."""
    if seed == 0 or len(jobs) < 2:
        return list(jobs)
    t = np.array([j.arrival_s for j in jobs])
    gap = (t.max() - t.min()) / (len(jobs) - 1)
    shift = np.random.default_rng([int(seed), 0xA771]).uniform(-0.5, 0.5, len(jobs)) * gap
    return [dataclasses.replace(j, arrival_s=float(max(0.0, a + d))) for j, a, d in zip(jobs, t, shift)]


def offered_load(jobs: list[Job], cluster, speed) -> float:
    """GPU-time the jobs ask for, each at its requested size alone, over the GPU-time the
    cluster offers during the arrival window: sum(requested x time alone at that size) /
    (cluster GPUs x (last arrival - first arrival))."""
    from ringsched.perfmodel.speed import consolidated_shape

    gps = int(cluster.gpus.max())
    demand = 0.0
    for j in jobs:
        w = min(j.requested_gpus, cluster.total_gpus)
        demand += w * j.work_samples / speed.throughput_sps(j.model, j.local_bsz, consolidated_shape(w, gps))
    t = [j.arrival_s for j in jobs]
    span = max(t) - min(t)
    return demand / (cluster.total_gpus * span) if span > 0 else float("inf")
