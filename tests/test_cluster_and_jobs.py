"""Cluster specs (string and YAML), jobs and utilities: validation and defaults."""

import numpy as np
import pytest

from ringsched.cluster import load_cluster, parse_spec
from ringsched.cluster.model import DEFAULT_INTRA_BPS, DEFAULT_NIC_BPS
from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.objectives.utility import DeadlineUtility, LinearUtility, SigmoidUtility


def test_spec_defaults():
    c = parse_spec("16x8")
    assert c.num_servers == 16 and c.total_gpus == 128
    assert c.servers[0].intra_Bps == DEFAULT_INTRA_BPS and c.servers[0].nic_Bps == DEFAULT_NIC_BPS
    assert c.racks == () and (c.rack_index == -1).all()


def test_spec_options_and_racks():
    c = parse_spec("8x4,nic_Gbps=200,intra_GBps=50,racks=2,oversub=4")
    assert c.servers[0].nic_Bps == pytest.approx(25e9)
    assert c.servers[0].intra_Bps == pytest.approx(50e9)
    assert len(c.racks) == 2 and c.racks[0].uplink_Bps == pytest.approx(4 * 25e9 / 4)
    assert list(c.rack_index) == [0, 0, 0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("spec,msg", [
    ("0x8", "1..100,000"), ("4x0", "1..1,024"), ("banana", "bad cluster spec"),
    ("4x8,foo=1", "unknown option 'foo'"), ("4x8,nic_Gbps=-1", "Gb/s"),
    ("4x8,nic_Gbps=abc", "number"), ("2x8,racks=3", "more racks"), ("4x8,oversub=2", "needs racks"),
])
def test_bad_specs(spec, msg):
    with pytest.raises(InputError) as e:
        parse_spec(spec)
    assert msg in e.value.line() and "cluster" in e.value.line()


def test_yaml_cluster(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("""
latency_inter_s: 1.0e-5
racks:
  - {name: r0, uplink_Bps: 5.0e10}
servers:
  - {count: 3, gpus: 8, nic_Bps: 2.5e10, rack: r0}
  - {name: big, gpus: 16}
""")
    c = load_cluster(str(f))
    assert c.total_gpus == 40 and c.num_servers == 4
    assert c.servers[-1].name == "big" and c.latency_inter_s == 1e-5
    assert list(c.rack_index) == [0, 0, 0, -1]


@pytest.mark.parametrize("text,field", [
    ("servers: []", "servers"),
    ("servers:\n  - {gpus: -2}", "servers[0].gpus"),
    ("servers:\n  - {gpus: 8, nic_Bps: .nan}", "servers[0].nic_Bps"),
    ("servers:\n  - {gpus: 8, colour: red}", "servers[0].colour"),
    ("servers:\n  - {gpus: 8, rack: nowhere}", "servers[0].rack"),
    ("[1, 2", None),
])
def test_bad_yaml(tmp_path, text, field):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_cluster(str(f))
    assert str(f) in e.value.line()
    if field:
        assert f"field '{field}'" in e.value.line()


def test_missing_yaml_file():
    with pytest.raises(InputError, match="no such file"):
        load_cluster("/nonexistent/cluster.yaml")


def test_utilities_are_non_increasing_and_bounded():
    jct = np.linspace(0, 1e5, 200)
    for u in (SigmoidUtility(10, 3600, 1e-3), LinearUtility(5, 1e-4), DeadlineUtility(3, 5e4, 1e-4),
              DeadlineUtility(3, 5e4)):
        v = u(jct)
        assert (np.diff(v) <= 1e-12).all()
        assert (v >= 0).all() and v.max() <= u.max_value + 1e-12
    assert DeadlineUtility(3, 10)(11) == 0.0


def test_job_validation_and_rigidity():
    u = LinearUtility(1, 0)
    j = Job("a", 0.0, "resnet50", 32, 1e6, 4, 4, u)
    assert j.rigid and j.requested_gpus == 4
    assert j.iterations() == pytest.approx(1e6 / 128)
    assert not Job("b", 1.0, "resnet50", 32, 1e6, 1, 8, u, requested_gpus=4).rigid
    for bad in (dict(arrival_s=-1.0), dict(work_samples=float("nan")), dict(min_workers=3, max_workers=2),
                dict(local_bsz=0)):
        kw = dict(job_id="x", arrival_s=0.0, model="m", local_bsz=8, work_samples=10.0, min_workers=1,
                  max_workers=1, utility=u)
        kw.update(bad)
        with pytest.raises(ValueError):
            Job(**kw)
