"""Cluster specs (string and YAML), jobs and utilities: validation and defaults."""

import math

import numpy as np
import pytest

from ringsched.cluster import load_cluster, parse_spec
from ringsched.cluster.model import DEFAULT_INTRA_BPS, DEFAULT_NIC_BPS
from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.utility.functions import DeadlineUtility, LinearUtility, SigmoidUtility


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
    ("4x8,racks=1.5", "whole number"), ("4x8,nic_Gbps=1e308", "8e+06] Gb/s"), ("4x8,nic_Gbps=inf", "Gb/s"),
    ("4x8,racks=2,racks=4", "given twice"), ("4x8,nic_Gbps=100,nic_Gbps=200", "given twice"),
    ("200000x8", "1..100,000"), ("100000x1024", "1,048,576"), ("4x8,racks", "not key=value"),
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


@pytest.mark.parametrize("text,row,field,words", [
    ("servers:\n  - count: 2\n    gpus: 4\n    gpus: 8\n", 4, "servers[0].gpus", "duplicate key"),
    ("servers:\n  - {gpus: 4}\nservers:\n  - {gpus: 8}\n", 3, "servers", "duplicate key"),
    ("servers:\n  - {count: 2, gpus: 4, nic_Bps: .inf}\n", 2, "servers[0].nic_Bps", "got inf"),
    ("reduction_Bps: 0\nservers:\n  - {gpus: 4}\n", 1, "reduction_Bps", "got 0"),
    ("servers:\n  - {gpus: true}\n", 2, "servers[0].gpus", "valid integer"),
    ("servers:\n  - {gpus: 4.5}\n", 2, "servers[0].gpus", "valid integer"),
    ("servers:\n  - {count: 1000000000, gpus: 8}\n", 2, "servers[0].count", "100,000"),
    ("latency_inter_s: 1e300\nservers:\n  - {gpus: 4}\n", 1, "latency_inter_s", "[0, 1] s"),
    ("servers:\n  - {gpus: 4}\n---\nservers: []\n", 3, None, "invalid YAML"),
    ("servers: !!python/object/apply:os.system ['true']\n", 1, "servers", "unsupported YAML tag"),
    ("racks:\n  - {name: r, uplink_Bps: 1e9}\n  - {name: r, uplink_Bps: 1e9}\nservers:\n  - {gpus: 1}\n", 3,
     "racks[1].name", "duplicate rack"),
])
def test_bad_yaml_names_line_and_field(tmp_path, text, row, field, words):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_cluster(str(f))
    assert (e.value.file, e.value.row) == (str(f), row) and words in e.value.message
    assert e.value.field == field


def test_yaml_alias_bomb_is_refused_fast_in_bounded_memory(tmp_path):
    import tracemalloc

    f = tmp_path / "c.yaml"
    f.write_text("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")))
    assert f.stat().st_size < 1000  # 9^9 = 387 million values once expanded
    tracemalloc.start()
    with pytest.raises(InputError, match="expands to more than"):
        load_cluster(str(f))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 << 20


def test_yaml_numbers_are_yaml_1_2(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("servers:\n  - {gpus: 8, nic_Bps: 25e9}\n")
    assert load_cluster(str(f)).servers[0].nic_Bps == 25e9


def test_yaml_plain_numbers_are_only_yaml_1_2s_and_dumps_read_back(tmp_path):
    """No hex, octal, base-60 or underscored integers (YAML 1.1's): the text as typed; and what
    dump_yaml writes reads back unchanged here and in YAML 1.1 readers. Mutants caught: PyYAML's
    YAML 1.1 int resolver (0x8 -> 8, 10:5 -> 605, 010 -> 8), and yaml.safe_dump for dump_yaml
    ('09' written bare, read back as 9)."""
    import yaml

    from ringsched.validation.yaml_doc import dump_yaml, read_yaml

    f = tmp_path / "n.yaml"
    f.write_text("a: 0x8\nb: 10:5\nc: 1_000\nd: 010\ne: 1e9\nf: -.inf\ng: 0o7\nh: +5\ni: 1.5\n")
    assert read_yaml(f).value == {"a": "0x8", "b": "10:5", "c": "1_000", "d": 10, "e": 1e9, "f": -math.inf,
                                  "g": "0o7", "h": 5, "i": 1.5}
    value = {"s": ["09", "1e9", "0x8", "10:5", "1_0", "+5", ".5", "yes"], "n": [9, 1e9, -0.5, math.inf, 10**20]}
    f.write_text(dump_yaml(value))
    assert read_yaml(f).value == value == yaml.safe_load(f.read_text())


JOB = "jobs:\n  - name: j1\n    entry: trainmod:main\n    batch: 32\n    work: {samples: 1000}\n"


@pytest.mark.parametrize("text,row,field,words", [
    (JOB.replace("{samples: 1000}", "{epochs: .inf, epoch_samples: 10}"), 5, "jobs[0].work.epochs", "got inf"),
    (JOB.replace("batch: 32", "batch: true"), 4, "jobs[0].batch", "valid integer"),
    (JOB + "    batch: 64\n", 6, "jobs[0].batch", "duplicate key"),
    (JOB + "    arrival_s: 1e300\n", 6, "jobs[0].arrival_s", "1e+09"),
    (JOB.replace("{samples: 1000}", "{epochs: 1000000, epoch_samples: 1000000000000}"), 5, "jobs[0].work",
     "epochs x epoch_samples"),
    (JOB + "    tenant: [a]\n", 6, "jobs[0].tenant", "valid string"),
    ("- name: j1\n  entry: trainmod:main\n  batch: 0\n  work: {samples: 5}\n", 3, "jobs[0].batch", "got 0"),
])
def test_bad_jobs_file_names_line_and_field(tmp_path, text, row, field, words):
    from ringsched.backends.jobs_file import load_jobs_file

    (tmp_path / "trainmod.py").write_text("def main(ctx):\n    pass\n")
    f = tmp_path / "jobs.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_jobs_file(f)
    assert (e.value.file, e.value.row, e.value.field) == (str(f), row, field)
    assert words in e.value.message


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
