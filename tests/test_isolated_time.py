"""The isolated time (``perfmodel/alone.py`` through ``simulator.metrics.isolated_run_s``): the
job's fastest run alone, checked against every placement by brute force on one-type,
two-type, PCIe-only and racked clusters, and rho >= 1 for a job run alone."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringsched.cluster import load_cluster
from ringsched.cluster.model import parse_spec
from ringsched.job import Job
from ringsched.perfmodel.efficiency import AdaptiveRun
from ringsched.perfmodel.speed import SpeedModel, consolidated_shape
from ringsched.perfmodel.alone import even_placement
from ringsched.policies import make_policy
from ringsched.policies.base import Policy
from ringsched.simulator import SimConfig, Simulator
from ringsched.simulator.metrics import isolated_run_s
from test_simulator import U


def yaml_cluster(tmp_path, text: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return load_cluster(str(path))


def fastest_s(job, cluster, speed, sizes) -> float:
    """The brute-force fastest run from the start over every per-server count of any size in
    ``sizes``; an adaptive-batch job's in every epoch at the fastest of them."""
    pls = [tuple(i for i, k in enumerate(counts) for _ in range(k))
           for counts in itertools.product(*(range(s.gpus + 1) for s in cluster.servers)) if sum(counts) in sizes]
    runs = [speed.adaptive_run(job, pl) for pl in pls]
    if runs[0] is None:
        return min(job.work_samples / speed.progress_sps(job, 0.0, pl) for pl in pls)
    best = np.max([r.epoch_sps for r in runs], axis=0)
    return AdaptiveRun(runs[0].ends, best, job.work_samples).time_to(0.0, job.work_samples)


@settings(max_examples=40, deadline=None)
@given(lo=st.integers(1, 16), extra=st.integers(0, 24), model=st.sampled_from(["resnet50", "vgg16", "bert", "ncf"]),
       spec=st.sampled_from(["1x4", "2x8", "4x8,nic_Gbps=10"]), bsz=st.sampled_from([16, 64]))
def test_isolated_time_is_the_fastest_run_alone_over_every_size(lo, extra, model, spec, bsz):
    c = parse_spec(spec)
    j = Job("j", 0.0, model, bsz, 1e6, lo, lo + extra, U)
    sp = SpeedModel(c)
    sizes = range(min(lo, c.total_gpus), min(lo + extra, c.total_gpus) + 1)
    each = [j.work_samples / sp.throughput_sps(model, bsz, consolidated_shape(w, int(c.gpus.max()))) for w in sizes]
    assert isolated_run_s(j, c, sp) == pytest.approx(min(each), rel=1e-12)
    r = Simulator([j], c, make_policy("optimus"), SimConfig()).run()
    assert (r.jobs.ftf_rho.dropna() >= 1.0 - 1e-9).all()  # (nan: min_workers > the cluster, rejected)


MIXED = """servers:
  - {count: 3, gpus: 4, gpu: t4}
  - {count: 1, gpus: 8, gpu: h200}
"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lo=st.integers(1, 20), extra=st.integers(0, 8), model=st.sampled_from(["resnet50", "vgg16", "bert", "ncf"]),
       policy=st.sampled_from(["optimus", "srtf", "gadget"]))
def test_isolated_time_on_several_gpu_types_is_the_fastest_run_and_rho_stays_above_1(tmp_path, lo, extra, model,
                                                                                     policy):
    """3 servers of 4 T4 and one of 8 H200. The isolated time is at most every one-type
    consolidated run and equals the fastest placement of any size it may take (every count
    per server, at the world's rate); a run of the job alone gives rho >= 1. Mutants
    caught: the default type only (the first server's, T4; rho 0.2-0.5 when the job runs on
    the H200 server), one-type rings only (a 9-GPU ring of 8 H200 and 1 T4 beats 9 T4 on 3
    servers), the fewest servers only (3+3+3 beats 8+1 for a 9-GPU resnet50 ring), every ring
    at the fastest type's speed (faster than any placement)."""
    c = yaml_cluster(tmp_path, MIXED)
    sp = SpeedModel(c)
    j = Job("j", 0.0, model, 64, 1e6, lo, lo + extra, U)
    iso = isolated_run_s(j, c, sp)
    typed = [j.work_samples / sp.throughput_sps(model, 64, consolidated_shape(w, g), gpu=t)
             for t, g, n in (("t4", 4, 12), ("h200", 8, 8)) for w in range(lo, min(lo + extra, n) + 1)]
    assert all(iso <= x * (1 + 1e-12) for x in typed)
    hi = min(lo + extra, c.total_gpus)
    sizes = range(min(lo, hi), hi + 1)
    assert iso == pytest.approx(fastest_s(j, c, sp, sizes), rel=1e-12)
    r = Simulator([j], c, make_policy(policy), SimConfig()).run()
    assert (r.jobs.ftf_rho.dropna() >= 1.0 - 1e-9).all()


@settings(max_examples=25, deadline=None)
@given(lo=st.integers(1, 16), extra=st.integers(0, 8),
       model=st.sampled_from(["resnet50", "bert_base", "ncf", "yolov3", "resnet18_cifar10"]),
       adaptive=st.booleans(), policy=st.sampled_from(["gadget", "pollux"]))
def test_isolated_time_on_one_pcie_gpu_type_may_spread_the_ring(lo, extra, model, adaptive, policy):
    """4 servers of 4 T4 (one type; workers on a server share its PCIe switch): the isolated
    time equals the fastest run from the start on any placement of any size the job may take
    (brute force over every count per server, at the world's rate: an adaptive-batch job in
    every epoch at the fastest of them) and rho >= 1 for a job run alone. Mutants caught: the fewest servers
    only on one type (the old rule; on T4 an even spread can be faster); an adaptive job's run
    at its own batch (pollux-w6-t4: rho 0.967 for cifar10 jobs)."""
    c = parse_spec("4x4,gpu=t4")
    sp = SpeedModel(c)
    j = Job("j", 0.0, model, 64, 1e6, lo, lo + extra, U, adaptive_batch=adaptive)
    hi = min(lo + extra, c.total_gpus)
    sizes = range(min(lo, hi), hi + 1)
    assert isolated_run_s(j, c, sp) == pytest.approx(fastest_s(j, c, sp, sizes), rel=1e-12)
    r = Simulator([j], c, make_policy(policy), SimConfig()).run()
    assert (r.jobs.ftf_rho.dropna() >= 1.0 - 1e-9).all()


RACKED = {"interleaved": """racks:
  - {name: r0, uplink_Bps: 1.0e9}
  - {name: r1, uplink_Bps: 1.0e9}
servers:
  - {gpus: 4, gpu: t4, rack: r0}
  - {gpus: 4, gpu: t4, rack: r1}
  - {gpus: 4, gpu: t4, rack: r0}
""", "larger elsewhere": """racks:
  - {name: r0, uplink_Bps: 1.0e9}
  - {name: r1, uplink_Bps: 1.0e9}
servers:
  - {count: 1, gpus: 6, gpu: t4, rack: r1}
  - {count: 3, gpus: 3, gpu: t4, rack: r0}
"""}


@pytest.mark.parametrize("layout,model,w,adaptive", [
    ("interleaved", "vgg16", 8, False), ("interleaved", "vgg16", 6, True), ("interleaved", "resnet50", 8, False),
    ("larger elsewhere", "vgg16", 9, False), ("larger elsewhere", "vgg16", 7, True),
    ("larger elsewhere", "bert_base", 5, False)])
def test_isolated_time_with_racks_keeps_the_ring_in_one_rack_when_that_is_faster(tmp_path, layout, model, w, adaptive):
    """Racks that interleave (servers 0 and 2 in one rack), or a larger server in another rack
    than the smaller ones: the isolated time equals the fastest run from the start on any
    placement (brute force). Mutant caught: servers taken largest first only (a vgg16 ring of
    8 on servers 0+1 across racks, rho 0.61; of 9 as 6+3 across racks instead of 3+3+3, 0.41)."""
    c = yaml_cluster(tmp_path, RACKED[layout])
    sp = SpeedModel(c)
    j = Job("j", 0.0, model, 8, 1e6, w, w, U, adaptive_batch=adaptive)
    assert isolated_run_s(j, c, sp) == pytest.approx(fastest_s(j, c, sp, (w,)), rel=1e-12)


class _Switch(Policy):
    """Runs the one job on one GPU until ``at_s``, then on every GPU of the cluster."""

    name = "switch-test"
    periodic = True
    rigid = False

    def __init__(self, at_s):
        self.at_s = at_s

    def optimize(self, jobs, nodes, previous_allocations):
        c = nodes.cluster
        every = tuple(s for s in range(c.num_servers) for _ in range(int(c.gpus[s])))
        return {js.job_id: (0,) if nodes.now_s < self.at_s else every for js in jobs}

    def wakeup_s(self, now_s, slot_s):
        return now_s + slot_s


def test_an_adaptive_job_moved_along_its_training_does_not_beat_its_time_alone():
    """yolov3 on 4x8 T4 gains most on one GPU early in its training and on all 32 later: a run
    that moves it once (a restart) beats every single placement by a quarter, so its time alone
    takes the fastest placement epoch by epoch. Mutant caught: the fastest single placement
    (rho 0.74 for this run)."""
    c = parse_spec("4x8,gpu=t4")
    sp = SpeedModel(c)
    j = Job("a", 0.0, "yolov3", 8, 3e7, 1, 32, U, requested_gpus=1, adaptive_batch=True)
    r = Simulator([j], c, _Switch(20_000.0), SimConfig(slot_s=60, restart_s=30)).run()
    finish = float(r.jobs.finish_s.iloc[0])
    single = min(j.work_samples / sp.progress_sps(j, 0.0, even_placement(w, list(range(k)), c))
                 for w in range(1, 33) for k in range(-(-w // 8), min(w, 4) + 1))
    assert finish < 0.8 * single
    assert float(r.jobs.ftf_rho.iloc[0]) >= 1.0 - 1e-9
