"""GPU slots and device choice (no GPU needed: the device count is an input)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringsched.backends import gpu_slots, worker
from ringsched.backends.gpu_slots import CPU, MACHINE, NODE, assign_slots, choose_device


def test_slots_are_disjoint_per_server_and_lowest_first():
    gpus = (2, 3)
    a = assign_slots((0, 1, 1), [], gpus)
    assert a == (0, 0, 1)
    b = assign_slots((1, 0), [((0, 1, 1), a)], gpus)
    assert b == (2, 1)
    with pytest.raises(ValueError, match="server 0 has no free GPU slot"):
        assign_slots((0,), [((0, 1, 1), a), ((1, 0), b)], gpus)


def test_an_ended_attempts_slots_are_free_again():
    gpus = (2,)
    first = assign_slots((0,), [], gpus)
    second = assign_slots((0,), [((0,), first)], gpus)
    assert (first, second) == ((0,), (1,))
    assert assign_slots((0,), [((0,), second)], gpus) == (0,)  # the first attempt ended


@st.composite
def _runs(draw):
    gpus = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    ops = draw(st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, len(gpus) - 1), min_size=1, max_size=4),
                                  st.integers(0, 10)), max_size=30))
    return gpus, ops


@settings(max_examples=200, deadline=None)
@given(_runs())
def test_concurrent_attempts_never_share_a_slot(run):
    gpus, ops = run
    live: dict[int, tuple] = {}
    for n, (launch, placement, victim) in enumerate(ops):
        if not launch and live:
            live.pop(sorted(live)[victim % len(live)])
            continue
        p = tuple(placement)
        used = [0] * len(gpus)
        for q, _ in live.values():
            for s in q:
                used[s] += 1
        fits = all(used[s] + p.count(s) <= gpus[s] for s in set(p))
        if not fits:
            with pytest.raises(ValueError):
                assign_slots(p, live.values(), gpus)
            continue
        live[n] = (p, assign_slots(p, live.values(), gpus))
        held = [(s, slot) for q, slots in live.values() for s, slot in zip(q, slots)]
        assert len(held) == len(set(held))
        assert all(0 <= slot < gpus[s] for s, slot in held)


def test_device_index_numbers_the_emulated_servers_gpus_in_order():
    assert [gpu_slots.device_index(s, k, (2, 3), MACHINE) for s, k in ((0, 0), (0, 1), (1, 0), (1, 2))] == [0, 1, 2, 4]
    assert gpu_slots.device_index(1, 2, (2, 3), NODE) == 2
    with pytest.raises(ValueError):
        gpu_slots.device_index(0, 2, (2, 3), MACHINE)


def test_nccl_only_on_a_gpu_the_machine_has():
    gpus, p, slots = (2, 2), (0, 1, 1), (0, 0, 1)  # ranks on devices 0, 2, 3 of an emulated 2x2
    assert choose_device(2, p, slots, gpus, MACHINE, device_count=4) == gpu_slots.DeviceChoice("nccl", "3")
    assert choose_device(1, p, slots, gpus, MACHINE, device_count=4).visible_devices == "2"
    assert choose_device(0, p, slots, gpus, MACHINE, device_count=4).device == "cuda:0"
    assert choose_device(0, p, slots, gpus, MACHINE, device_count=0) == CPU
    assert choose_device(0, p, (), gpus, MACHINE, device_count=4) == CPU
    assert CPU.device == "cpu" and CPU.backend == "gloo"


def test_fewer_gpus_than_the_spec_puts_the_whole_attempt_on_the_cpu():
    gpus, p, slots = (2, 2), (0, 1, 1), (0, 0, 1)
    # device 3 is missing: rank 0 (device 0 exists) must not pick NCCL while its peers use gloo
    assert [choose_device(r, p, slots, gpus, MACHINE, device_count=3) for r in range(3)] == [CPU] * 3
    assert choose_device(0, (0, 0), (0, 1), gpus, MACHINE, device_count=3).backend == "nccl"


def test_on_a_node_of_its_own_the_slot_is_the_device():
    gpus, p, slots = (2, 2), (0, 1), (1, 1)
    assert choose_device(1, p, slots, gpus, NODE, device_count=2) == gpu_slots.DeviceChoice("nccl", "1")
    assert choose_device(1, p, slots, gpus, NODE, device_count=1) == CPU


def test_an_inherited_allotment_is_respected():
    gpus, p, slots = (2, 2), (0, 1), (0, 0)
    assert choose_device(1, p, slots, gpus, MACHINE, 4, inherited_visible="4,5,6,7").visible_devices == "6"
    assert choose_device(1, p, slots, gpus, MACHINE, 4, inherited_visible="4,5") == CPU
    assert choose_device(0, p, slots, gpus, MACHINE, 0, inherited_visible="") == CPU


def test_bind_device_sets_cuda_visible_devices_only_for_nccl(monkeypatch):
    import torch

    cfg = {"rank": 1, "placement": [0, 1], "slots": [0, 1], "gpus_per_server": [2, 2], "gpu_numbering": MACHINE}
    env: dict = {}
    # NVML counts what the variable shows, without initialising CUDA
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(env["CUDA_VISIBLE_DEVICES"].split(","))
                        if "CUDA_VISIBLE_DEVICES" in env else 4)
    assert worker.bind_device(cfg, env) == gpu_slots.DeviceChoice("nccl", "3") and env == {"CUDA_VISIBLE_DEVICES": "3"}
    env = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}  # an allotment of all four: the same choice, narrowed
    assert worker.bind_device(cfg, env).visible_devices == "3" and env == {"CUDA_VISIBLE_DEVICES": "3"}
    env = {}
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)  # CUDA already read the variable
    assert worker.bind_device(cfg, env) == CPU and env == {}
    env = {}
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert worker.bind_device(cfg, env) == CPU and env == {}
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert worker.bind_device({"rank": 0, "placement": [0]}, {}) == CPU  # a config without slots


def test_the_zygotes_warm_up_leaves_cuda_uninitialised():
    import subprocess
    import sys

    code = ("import torch; from ringsched.backends.worker import warm_up; warm_up(); "
            "torch.cuda.device_count(); print(torch.cuda.is_initialized())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


SINGLE_JOBS = "jobs:\n" + "".join(
    f'  - {{name: {n}, entry: "ringsched.backends.demo_jobs:synth_mlp", batch: 16, work: {{samples: {w}}}, '
    f"max_workers: 1, model: ncf, arrival_s: {a}}}\n" for n, w, a in (("a", 4000, 0), ("b", 3000, 0), ("c", 2000, 0),
                                                                       ("d", 1000, 0), ("e", 2000, 6)))


def test_the_controller_gives_live_ranks_distinct_slots(tmp_path):
    """Five one-worker jobs on a 2x2 cluster: the servers are shared, the slots never."""
    from step_launcher import StepLauncher

    from ringsched.backends.controller import Controller, RunConfig
    from ringsched.backends.jobs_file import load_jobs
    from ringsched.backends.journal import Journal
    from ringsched.backends.online_model import OnlineModel
    from ringsched.cluster.model import load_cluster
    from ringsched.policies import make_policy

    (tmp_path / "jobs.yaml").write_text(SINGLE_JOBS)
    cluster = load_cluster("2x2")
    launcher = StepLauncher(cluster, OnlineModel(cluster, 5.0).speed)
    ctl = Controller(load_jobs(str(tmp_path / "jobs.yaml")), cluster, "2x2", make_policy("fifo"), launcher,
                     Journal(tmp_path / "s"), RunConfig(slot_s=2.0, ckpt_every_s=10.0), clock=launcher.clock)
    summary = ctl.run()
    assert [j["status"] for j in summary["jobs"]] == ["completed"] * 5
    assert launcher.violations == []
    assert launcher.max_shared_server >= 2  # two live ranks on one server did happen


def test_prepare_moves_the_model_before_restoring_it(tmp_path):
    """The optimizer's restored state must follow its parameters onto the rank's device."""
    import threading

    import torch
    import torch.distributed as dist
    from torch import nn

    from ringsched.backends import ckpt_store

    class Recording(nn.Linear):
        calls: list = []

        def to(self, *a, **k):
            self.calls.append(("to", a))
            return super().to(*a, **k)

        def load_state_dict(self, *a, **k):
            self.calls.append(("load", ()))
            return super().load_state_dict(*a, **k)

    net = Recording(3, 2)
    info = ckpt_store.save(tmp_path, 0, {"format": ckpt_store.CKPT_FORMAT, "job": "j", "step": 4, "samples": 64,
                                         "done": False, "world": 1, "model": net.state_dict(), "optim": None,
                                         "state": {}})
    cfg = {"job": "j", "rank": 0, "world": 1, "local_bsz": 4, "work_samples": 100, "resume": {
        "path": info["path"], "sha256": info["sha256"], "step": 4, "samples": 64}}
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        ctx = worker.TrainContext(cfg, lambda ev: None, threading.Event(), device="cpu")
        ctx.prepare(net, torch.optim.SGD(net.parameters(), lr=0.1))
    finally:
        dist.destroy_process_group()
    assert [c[0] for c in Recording.calls][:2] == ["to", "load"] and Recording.calls[0][1] == ("cpu",)
    x, y = torch.zeros(2), torch.ones(2)
    assert ctx.to_device(x) is x and ctx.to_device(x, y) == (x, y)  # the CPU path moves nothing
