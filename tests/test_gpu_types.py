"""GPU types: cluster specs, per-type parameters, the one-type rule (perfmodel/gpus.py)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd

import pytest

from conftest import POLLUX, REPO, needs_shared
from ringsched.cluster import load_cluster, parse_spec
from ringsched.cluster.model import DEFAULT_INTRA_BPS, DEFAULT_NIC_BPS
from ringsched.errors import InputError
from ringsched.perfmodel.catalogue import get_profile
from ringsched.perfmodel.gpus import GPU_TYPES, GpuProfiles
from ringsched.perfmodel.ring import compute_time_s
from ringsched.perfmodel.speed import SpeedModel

T4_DIR = REPO / "src/ringsched/perfmodel/gpu_profiles/t4"


def test_spec_gives_every_server_the_type_and_its_default_links():
    c = parse_spec("16x4,gpu=t4")
    assert c.gpu_types == ("t4",) and c.total_gpus == 64
    assert c.servers[0].intra_Bps == GPU_TYPES["t4"].intra_Bps and c.servers[0].nic_Bps == GPU_TYPES["t4"].nic_Bps
    assert parse_spec("16x4,gpu=t4,nic_Gbps=50").servers[3].nic_Bps == 50e9 / 8
    h = parse_spec("16x8")  # unchanged without the option
    assert h.gpu_types == ("h200",) and (h.servers[0].intra_Bps, h.servers[0].nic_Bps) == (DEFAULT_INTRA_BPS, DEFAULT_NIC_BPS)


def test_yaml_mixes_server_groups_of_several_types(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("servers:\n  - {count: 2, gpus: 8}\n  - {count: 3, gpus: 4, gpu: t4}\n")
    c = load_cluster(str(f))
    assert [s.gpu for s in c.servers] == ["h200"] * 2 + ["t4"] * 3
    assert c.servers[2].nic_Bps == GPU_TYPES["t4"].nic_Bps and c.servers[0].nic_Bps == DEFAULT_NIC_BPS


def test_an_unknown_type_is_an_input_error_naming_the_field():
    with pytest.raises(InputError) as e:
        SpeedModel(parse_spec("2x4,gpu=v100"))
    assert e.value.field == "gpu"
    with pytest.raises(InputError):
        parse_spec("2x4,gpu=T 4")


@needs_shared(POLLUX)
@pytest.mark.parametrize("app,model", [("yolov3", "yolov3"), ("cifar10", "resnet18_cifar10")])
def test_shipped_t4_parameters_are_the_fit_of_the_measurements(app, model):
    spec = importlib.util.spec_from_file_location("derive_gpu_types", REPO / "scripts" / "derive_gpu_types.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fresh = json.loads(json.dumps(mod.derive(POLLUX / app, app, "shared/profiles/pollux-measured")))
    shipped = json.loads((T4_DIR / f"{model}.json").read_text())
    # the fit's parameters to 0.1%: another CPU's floating point moves the optimiser's result
    # (inter_transfer_s 0.055154761 shipped, 0.055155945 on another machine); the rest exactly
    assert fresh.keys() == shipped.keys() and fresh["params"].keys() == shipped["params"].keys()
    for k, v in shipped["params"].items():
        assert fresh["params"][k] == (v if v is None else pytest.approx(v, rel=1e-3, abs=1e-9)), k
    assert {k: v for k, v in fresh.items() if k != "params"} == {k: v for k, v in shipped.items() if k != "params"}


@needs_shared(POLLUX)
def test_t4_predicts_the_measured_single_gpu_step_of_resnet50():
    import csv

    with (POLLUX / "imagenet" / "placements.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["placement"] == "1"]
    sp = SpeedModel(parse_spec("16x4,gpu=t4"))
    for r in rows:
        pred = sp.step_time_s("resnet50", int(r["local_bsz"]), (1, 1, 1, 1))
        assert pred == pytest.approx(float(r["step_time"]), rel=0.1)


def test_an_unmeasured_model_on_t4_computes_the_factor_times_slower():
    sp = SpeedModel(parse_spec("2x4,gpu=t4"))
    p = get_profile("vgg16")
    assert compute_time_s(sp.params("vgg16"), 64) == pytest.approx(GPU_TYPES["t4"].compute_factor * p.compute_time_s(64))
    assert sp.params("vgg16").intra_transfer_s == pytest.approx(p.grad_bytes / GPU_TYPES["t4"].intra_Bps)


def test_a_ring_spanning_types_runs_at_its_slowest_type(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("servers:\n  - {count: 1, gpus: 4}\n  - {count: 1, gpus: 4, gpu: t4}\n")
    sp = SpeedModel(load_cluster(str(f)))
    shape = (2, 2, 1, 1)
    h, t = (sp.step_time_s("resnet50", 64, shape, gpu=g) for g in ("h200", "t4"))
    assert t > h
    assert sp.step_time_on("resnet50", 64, (0, 1)) == t
    assert sp.step_time_on("resnet50", 64, (0, 0)) == sp.step_time_s("resnet50", 64, (2, 1, 2, 1), gpu="h200")


def test_profiles_dir_registers_a_new_type_from_a_fit_file(tmp_path):
    doc = json.loads((T4_DIR / "resnet50.json").read_text())
    doc["params"]["compute_base_s"] = 0.001
    (tmp_path / "a100").mkdir()
    (tmp_path / "a100" / "ResNet-50.json").write_text(json.dumps(doc))
    profiles = GpuProfiles((tmp_path,))
    assert "a100" in profiles.types
    sp = SpeedModel(parse_spec("2x4,gpu=a100"), profiles)
    assert sp.params("resnet50").compute_base_s == 0.001
    with pytest.raises(InputError):  # no file and no conversion for another model on it
        sp.params("vgg16")
    bad = tmp_path / "bad"
    (bad / "t4").mkdir(parents=True)
    (bad / "t4" / "resnet50.json").write_text("{}")
    with pytest.raises(InputError) as e:
        SpeedModel(parse_spec("1x4,gpu=t4"), GpuProfiles((bad,))).params("resnet50")
    assert "resnet50.json" in str(e.value.file)


def _a100_profiles(folder, slowdown: float = 1.0) -> None:
    """A --gpu-profiles folder with a type `a100`: H200's parameters, compute ``slowdown`` x slower."""
    import dataclasses

    from ringsched.perfmodel.catalogue import profile_names

    h200 = SpeedModel(parse_spec("1x4"))
    (folder / "a100").mkdir()
    for m in profile_names():
        p = h200.params(m)
        p = dataclasses.replace(p, compute_base_s=p.compute_base_s * slowdown,
                                compute_per_sample_s=p.compute_per_sample_s * slowdown)
        doc = {"format": "ringsched-step-model/1", "model": "ring", "params": p.to_dict()}
        (folder / "a100" / f"{m}.json").write_text(json.dumps(doc))


def test_simulate_takes_profiles_for_a_new_type(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("RINGSCHED_PROFILES", raising=False)
    _a100_profiles(tmp_path)
    code, out, err = cli("simulate", "--trace", "synthetic:20", "--cluster", "2x4,gpu=a100",
                         "--gpu-profiles", str(tmp_path), "--json")
    assert code == 0, err
    assert json.loads(out)["jobs"] == 20
    monkeypatch.delenv("RINGSCHED_PROFILES")  # the option sets it for this process and its workers
    code, out, err = cli("simulate", "--trace", "synthetic:20", "--cluster", "2x4,gpu=a100")
    assert code == 2 and "a100" in err and "Traceback" not in err
    code, out, err = cli("simulate", "--trace", "synthetic:5", "--gpu-profiles", str(tmp_path / "absent"))
    assert code == 2 and "absent" in err and "Traceback" not in err


def test_compare_config_carries_the_gpu_profiles(cli, tmp_path, monkeypatch):
    """`compare --gpu-profiles DIR` writes the folder into experiment.yaml, and `compare --config`
    of it, in a process that was never given the option, reproduces summary.csv byte for byte.
    Mutant caught: the option applied by the command but not recorded in the config."""
    import yaml

    monkeypatch.delenv("RINGSCHED_PROFILES", raising=False)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    _a100_profiles(profiles, slowdown=3.0)
    first, again = tmp_path / "first", tmp_path / "again"
    code, _, err = cli("compare", "--trace", "synthetic:30", "--cluster", "2x4,gpu=a100", "--policies", "srtf",
                       "--workers", "1", "--gpu-profiles", profiles, "--out", first)
    assert code == 0, err
    assert yaml.safe_load((first / "experiment.yaml").read_text())["gpu_profiles"] == [str(profiles)]
    monkeypatch.delenv("RINGSCHED_PROFILES")
    code, _, err = cli("compare", "--config", first / "experiment.yaml", "--out", again)
    assert code == 0, err
    assert (again / "summary.csv").read_bytes() == (first / "summary.csv").read_bytes()


def test_a_trace_jobs_utility_knee_is_its_run_on_the_fastest_type_that_hosts_it(tmp_path):
    """``traces.convert.to_jobs`` on T4 servers listed first and one 8-GPU H200 server: the
    value stays the work's GPU-hours on the first type (the trace's duration there), the knee
    moves to three times the run on H200; a 16-GPU job no H200 set can host keeps the T4 knee;
    a one-type cluster is unchanged. Mutants caught: the knee from the first type (as before),
    a type too small for the size allowed (the 16-GPU knee at H200's rate), the value priced
    from the knee's run."""
    from ringsched.traces.convert import to_jobs
    from ringsched.utility.defaults import MIN_TARGET_S

    f = tmp_path / "c.yaml"
    f.write_text("servers:\n  - {count: 4, gpus: 4, gpu: t4}\n  - {count: 1, gpus: 8}\n")
    c = load_cluster(str(f))
    frame = pd.DataFrame({"job_id": ["a", "b"], "arrival_s": [0.0, 0.0], "model": ["resnet50"] * 2,
                          "local_bsz": [64, 64], "num_gpus": [8, 16], "duration_s": [36_000.0] * 2,
                          "work_samples": [np.nan] * 2, "tenant": ["", ""]})
    a, b = to_jobs(frame, c)
    sp = SpeedModel(c)
    fast = a.work_samples / sp.throughput_sps("resnet50", 64, (8, 1, 8, 1), gpu="h200")
    assert a.utility.value == pytest.approx(8 * 36_000.0 / 3600.0)  # GPU-hours at the trace's duration
    assert a.utility.knee_s == pytest.approx(max(3.0 * fast, MIN_TARGET_S)) and fast < 36_000.0 / 3
    # 16 GPUs: only the T4 servers hold it, packed four to a server as they are
    t4 = b.work_samples / sp.throughput_sps("resnet50", 64, (16, 4, 4, 1), gpu="t4")
    assert b.utility.knee_s == pytest.approx(3.0 * t4)
    (h,) = to_jobs(frame.iloc[:1], parse_spec("2x8"))
    assert h.utility.knee_s == pytest.approx(3.0 * 36_000.0)
