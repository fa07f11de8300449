"""The bad-input corpus: small valid files of every format, each broken one way.

``bad_inputs.cases()`` returns ``Case`` objects (these file formats, and the command line's own
in ``commands``); ``Case.write(folder)`` writes its files and gives the
argv to run. Each case says what its one error line must name: the file, the row (1-based,
as in the file) and the field. ``scripts/bad_input_corpus.py`` runs them through the CLI;
``tests/test_bad_input_corpus.py`` runs a sample (marked slow).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path

TABLE = ["model", "table", "--model", "resnet50"]  # the cheapest command that reads a cluster
SENTINEL = "--state"  # run: a state path that is a file, so an accepted jobs file stops here
# A folder nobody may write in: permission bits do not stop root, /proc does.
UNWRITABLE = "/proc/ringsched-unwritable" if os.geteuid() == 0 else "{d}/ro"

# format -> (spec prefix, file name, header or None, rows as lists of cells, separator)
TABLES: dict[str, tuple[str, str, list[str] | None, list[list[str]], str]] = {
    "philly": ("philly", "philly.csv", ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"],
               [["2017-10-03 10:00:00", "3600", "1", "3600", "vc1"],
                ["2017-10-03 10:05:00", "120", "2", "240", "vc2"],
                ["2017-10-03 10:09:00", "600", "4", "2400", "vc1"]], ","),
    "pollux": ("pollux", "workload-1.csv", ["name", "time", "application", "num_replicas", "batch_size"],
               [["cifar10-0", "0", "cifar10", "1", "128"], ["bert-1", "60", "bert", "2", "24"],
                ["ncf-2", "90", "ncf", "1", "256"]], ","),
    "itp": ("itp", "cluster04.csv", ["job_id", "submission_time", "duration", "num_gpu"],
            [["a1", "5810", "2884", "16"], ["a2", "6000", "700", "1"], ["a3", "7000", "900", "2"]], ","),
    "itp_ef": ("itp", "cluster05.csv", ["job_id", "submission_time", "num_iteration", "model_name", "deadline",
                                        "batch_size", "num_gpu", "duration"],
               [["b1", "10", "100", "inception3", "500", "64", "4", "288"],
                ["b2", "20", "100", "resnet50", "500", "128", "2", "300"],
                ["b3", "30", "100", "vgg16", "500", "256", "1", "400"]], ","),
    "elasticflow": ("elasticflow", "philly_1.csv", ["job_id", "submit_time", "real_iteration", "model_name", "ddl",
                                                  "batch_size", "num_gpu", "real_duration", "duration",
                                                  "iteration"],
                    [["0", "0", "12", "vgg16", "77", "256", "1", "976", "976", "12"],
                     ["1", "50", "12", "bert", "77", "32", "2", "500", "500", "12"],
                     ["2", "90", "12", "gpt2", "77", "64", "4", "300", "300", "12"]], ","),
    "gavel": ("gavel", "ee9e8c.trace", None,
              [["ResNet-50 (batch size 64)", "python main.py", "--num_steps", "1", "1000", "0", "1"],
               ["CycleGAN", "python cg.py", "--n", "0", "500", "30", "2"],
               ["LM (batch size 20)", "python lm.py", "--steps", "1", "800", "45", "4"]], "\t"),
    "alibaba": ("alibaba", "openb_pod_list_x.csv",
                ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                 "creation_time", "deletion_time", "scheduled_time"],
                [["p0", "12000", "16384", "1", "1000", "", "LS", "Running", "0", "1000", "10"],
                 ["p1", "6000", "12288", "1", "460", "", "LS", "Running", "50", "900", "60"],
                 ["p2", "6000", "12288", "2", "1000", "", "LS", "Running", "80", "1900", "90"]], ","),
}

# format -> column -> values that must be refused in that column
_TIME = ["", "abc", "nan", "inf", "-1", "1e300", "1e308", "-inf", "0x10"]
_COUNT = ["", "x", "0", "-2", "1.5", "1e300", "99999999999999999999", "inf", "nan", "true"]
_DUR = ["", "abc", "-5", "1e308", "inf", "nan", "1e300"]
BAD_CELLS: dict[str, dict[str, list[str]]] = {
    "philly": {"timestamp": ["", "yesterday", "2017-13-40 10:00:00", "9999"],
               "duration": _DUR, "num_gpus": _COUNT},
    "pollux": {"name": [""], "time": _TIME, "application": ["", "quake"],
               "num_replicas": _COUNT, "batch_size": _COUNT + ["9223372036854775808", "1e19"]},
    "itp": {"job_id": [""], "submission_time": _TIME, "duration": _DUR, "num_gpu": _COUNT},
    "itp_ef": {"model_name": ["", "alexnet"], "batch_size": ["0", "1.5", "1e30", "x"], "num_gpu": ["0", "1e9", "2.5"],
               "duration": ["-1", "1e308"]},
    "elasticflow": {"submit_time": ["-3", "1e300", "x"], "batch_size": ["0", "1e30", "3.5"],
                    "num_gpu": ["0", "7.5", "1e12"], "duration": ["-1", "inf", "1e308"], "model_name": ["lenet"]},
    "gavel": {"job_type": ["Quake (batch size 3)", "ResNet-50 (batch size 0)",
                           "ResNet-50 (batch size 99999999999999999999)"],
              "total_steps": ["0", "1.5", "x", "1e300", "99999999999999999999"],
              "arrival_time": ["-1", "1e300", "inf"], "scale_factor": ["0", "2.5", "1e9"]},
    "alibaba": {"name": [""], "num_gpu": ["-1", "1.5", "x", "1e9"], "gpu_milli": ["-1", "5000", "x", "inf"],
                "creation_time": ["-1", "1e300", "x", ""], "scheduled_time": ["-1", "x", "1e300"],
                "deletion_time": ["x", "1e300", "inf", "-1"]},
}
# (format, column) -> the field the error may name instead (the file's header column read)
_ROW_OF = {"gavel": 0}  # gavel has no header: data row i is file row i + 1


@dataclass
class Case:
    name: str
    argv: list[str]                    # after "ringsched"; "{d}" is the case folder
    files: dict[str, str | bytes] = _field(default_factory=dict)
    file: str | None = None            # the file the line must name ("{d}/..." allowed)
    row: int | None = None             # the row it must name
    field: str | None = None           # the field it must name
    env: dict[str, str] = _field(default_factory=dict)
    mode: dict[str, int] = _field(default_factory=dict)   # file or folder -> chmod mode
    usage: bool = False                # the case is a usage error (an unknown option, a missing argument)
    links: dict[str, str] = _field(default_factory=dict)  # symlink -> its target (relative)
    fifos: tuple[str, ...] = ()        # named pipes to make

    def write(self, folder: Path) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True)
        for rel, content in self.files.items():
            p = folder / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
        for rel, target in self.links.items():
            (folder / rel).symlink_to(target)
        for rel in self.fifos:
            os.mkfifo(folder / rel)
        for rel, m in self.mode.items():
            p = folder / rel
            p.mkdir(exist_ok=True) if not p.exists() else None
            p.chmod(m)
        return [a.replace("{d}", str(folder)) for a in self.argv]

    def expected_file(self, folder: Path) -> str | None:
        return None if self.file is None else self.file.replace("{d}", str(folder))


def _table_text(header, rows, sep) -> str:
    lines = ([sep.join(header)] if header else []) + [sep.join(r) for r in rows]
    return "\n".join(lines) + "\n"


def _trace_case(name: str, fmt: str, text: str | bytes, *, row=None, field=None, file_name=None,
                cmd: str = "simulate") -> Case:
    prefix, fname, *_ = TABLES[fmt]
    fname = file_name or fname
    argv = [cmd, "--trace", f"{prefix}:{{d}}/{fname}", "--cluster", "2x4", "--policy", "fifo"]
    if cmd in ("compare", "sweep"):
        argv = [cmd, "--trace", f"{prefix}:{{d}}/{fname}", "--cluster", "2x4", "--policies", "fifo",
                "--out", "{d}/out", "--seeds", "0"] if cmd == "sweep" else \
               [cmd, "--trace", f"{prefix}:{{d}}/{fname}", "--cluster", "2x4", "--policies", "fifo", "--out", "{d}/out"]
    return Case(name, argv, {fname: text}, file=f"{{d}}/{fname}", row=row, field=field)


def trace_cases() -> list[Case]:
    out: list[Case] = []
    cmds = ("simulate", "compare", "sweep")
    k = 0
    for fmt, (prefix, fname, header, rows, sep) in TABLES.items():
        cols = header or ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
                          "arrival_time", "scale_factor"]
        first_data_row = 1 if header is None else 2
        for col, values in BAD_CELLS[fmt].items():
            j = cols.index(col)
            for v in values:
                r = k % len(rows)
                bad = [list(x) for x in rows]
                bad[r][j] = v
                cmd = cmds[k % 3] if k % 7 == 0 else "simulate"
                k += 1
                if header is None and v == "":
                    continue
                out.append(_trace_case(f"{fmt}-{col}={v!r}@{r}", fmt, _table_text(header, bad, sep),
                                       row=first_data_row + r, field=col, cmd=cmd))
        # structure: a repeated column, a missing column, a long line, empty, binary, header only
        if header is not None:
            dup = header + [header[1]]
            out.append(_trace_case(f"{fmt}-dup-column", fmt,
                                   _table_text(dup, [r + [r[1]] for r in rows], sep), row=1, field=header[1]))
            req = list(BAD_CELLS[fmt])[-1]  # a column the loader needs, whatever the file's form
            miss = [c for c in header if c != req]
            out.append(_trace_case(f"{fmt}-missing-column", fmt,
                                   _table_text(miss, [[c for c, h in zip(r, header) if h != req] for r in rows], sep),
                                   row=1, field=req))
            long = [list(x) for x in rows]
            long[1] = long[1] + ["extra"]
            out.append(_trace_case(f"{fmt}-long-line", fmt, _table_text(header, long, sep), row=3))
            out.append(_trace_case(f"{fmt}-header-only", fmt, _table_text(header, [], sep)))
            dup_id = [list(x) for x in rows]
            if fmt not in ("philly",):
                dup_id[2][0] = dup_id[0][0]
                out.append(_trace_case(f"{fmt}-dup-id", fmt, _table_text(header, dup_id, sep), row=first_data_row + 2,
                                       field=header[0]))
        else:
            short = [list(x) for x in rows]
            short[1] = short[1][:5]
            out.append(_trace_case(f"{fmt}-short-line", fmt, _table_text(None, short, sep), row=2))
        # blank lines before a bad row: the error still names the row as the file shows it
        col0 = list(BAD_CELLS[fmt])[-1]
        blank = [list(x) for x in rows]
        blank[2][cols.index(col0)] = BAD_CELLS[fmt][col0][-1] or "x"
        lines = ([sep.join(header)] if header else []) + [sep.join(x) for x in blank]
        lines.insert(len(lines) - 1, "")
        lines.insert(1, "")
        out.append(_trace_case(f"{fmt}-blank-lines", fmt, "\n".join(lines) + "\n",
                               row=first_data_row + 4, field=col0))
        out.append(_trace_case(f"{fmt}-empty", fmt, ""))
        out.append(_trace_case(f"{fmt}-binary", fmt, b"\xff\xfe\x00\x81garbage\x00\n\x9c"))
        out.append(Case(f"{fmt}-missing-file", ["simulate", "--trace", f"{prefix}:{{d}}/nope.csv"],
                        file="{d}/nope.csv"))
    return out


def spec_cases() -> list[Case]:
    """Trace specs, filters and cluster specs on the command line."""
    t = ["--cluster", "1x2", "--policy", "fifo"]
    bad_traces = {
        "nosuch:x": "trace", "philly:": "trace", "synthetic:abc": "trace", "synthetic:0": "trace",
        "synthetic:-3": "trace", "synthetic:10,load=1e-300": "trace", "synthetic:10,load=0": "trace",
        "synthetic:10,load=nan": "trace", "synthetic:10,load=inf": "trace", "synthetic:10,rate_per_h=1e-300": "trace",
        "synthetic:10,rate_per_h=1e300": "trace", "synthetic:10,load=2,load=3": "trace",
        "synthetic:10,tenants=1.5": "trace", "synthetic:10,tenants=0": "trace", "synthetic:10,diurnal=1": "trace",
        "synthetic:10,zipf=-1": "trace", "synthetic:10,max_duration_s=1e308": "trace",
        "synthetic:10,max_duration_s=0.5": "trace", "synthetic:10,bogus=1": "trace", "synthetic:10,load": "trace",
        "synthetic:99999999999": "trace", "synthetic:10,load=1,rate_per_h=3": "trace",
        "synthetic:1e3": "trace", "synthetic:10,,": "trace", "synthetic:10,load=0.5,zipf=1e308": "trace",
    }
    out = [Case(f"trace-spec {s}", ["simulate", "--trace", s, *t], field=f) for s, f in bad_traces.items()]
    bad_windows = ["5:1", "abc", "0:1e400", "1:2:3", "-1:5", "0:0", "nan:5", "0:inf"]
    out += [Case(f"window {w}", ["simulate", "--trace", "synthetic:5", "--window", w, *t], field="window")
            for w in bad_windows]
    out.append(Case("vc unknown", ["simulate", "--trace", "synthetic:5", "--vc", "nope", *t], field="vc"))
    for lim in ("0", "-3", "abc", "1.5"):
        out.append(Case(f"limit {lim}", ["simulate", "--trace", "synthetic:5", "--limit", lim, *t], field="limit"))
    bad_clusters = ["", "x", "0x8", "4x0", "4x8,racks=1.5", "4x8,nic_Gbps=1e308", "4x8,nic_Gbps=0",
                    "4x8,nic_Gbps=inf", "4x8,nic_Gbps=nan", "4x8,racks=8", "4x8,oversub=2", "4x8,racks=2,racks=4",
                    "4x8,nic_Gbps=100,nic_Gbps=200", "4x8,bogus=1", "4x8,racks", "4x8,intra_GBps=1e-300",
                    "4x8,latency_inter_us=1e308", "4x8,latency_intra_us=-1", "99999999999x8", "4x99999999",
                    "100000000x8", "4x8,racks=0", "4x8,racks=2,oversub=0", "4x8,racks=2,oversub=1e308",
                    "4 x 8 x 2", "-4x8"]
    for i, c in enumerate(bad_clusters):
        cmd = [*TABLE, "--cluster", c] if i % 2 else ["simulate", "--trace", "synthetic:3", "--cluster", c]
        out.append(Case(f"cluster-spec {c!r}", cmd, field="cluster"))
    return out


_CLUSTER_OK = "servers:\n  - {count: 2, gpus: 4, nic_Bps: 1.25e10}\n"


def cluster_yaml_cases() -> list[Case]:
    docs: dict[str, tuple[str, int | None, str | None]] = {
        "inf nic": ("servers:\n  - {count: 2, gpus: 4, nic_Bps: .inf}\n", 2, "nic_Bps"),
        "nan intra": ("servers:\n  - count: 2\n    gpus: 4\n    intra_Bps: .nan\n", 4, "intra_Bps"),
        "zero reduction": ("reduction_Bps: 0\n" + _CLUSTER_OK, 1, "reduction_Bps"),
        "inf latency": ("latency_inter_s: .inf\n" + _CLUSTER_OK, 1, "latency_inter_s"),
        "huge latency": ("latency_inter_s: 1e300\n" + _CLUSTER_OK, 1, "latency_inter_s"),
        "huge nic": ("servers:\n  - {count: 2, gpus: 4, nic_Bps: 1e308}\n", 2, "nic_Bps"),
        "fractional gpus": ("servers:\n  - {count: 2, gpus: 4.5}\n", 2, "gpus"),
        "bool gpus": ("servers:\n  - {count: 2, gpus: true}\n", 2, "gpus"),
        "string gpus": ("servers:\n  - {count: 2, gpus: eight}\n", 2, "gpus"),
        "huge count": ("servers:\n  - {count: 1000000000, gpus: 8}\n", 2, "count"),
        "huge gpus": ("servers:\n  - {count: 1, gpus: 100000000}\n", 2, "gpus"),
        "zero count": ("servers:\n  - {count: 0, gpus: 8}\n", 2, "count"),
        "unknown key": ("servers:\n  - {count: 2, gpus: 4, colour: red}\n", 2, "colour"),
        "unknown top key": ("bogus: 1\n" + _CLUSTER_OK, 1, "bogus"),
        "duplicate key": ("servers:\n  - count: 2\n    gpus: 4\n    gpus: 8\n", 4, "gpus"),
        "duplicate top key": (_CLUSTER_OK + "servers:\n  - {gpus: 1}\n", 3, "servers"),
        "no servers": ("racks: []\n", None, "servers"),
        "empty servers": ("servers: []\n", 1, "servers"),
        "unknown rack": ("servers:\n  - {count: 2, gpus: 4, rack: r9}\n", 2, "rack"),
        "rack zero uplink": ("racks:\n  - {name: r0, uplink_Bps: 0}\n" + _CLUSTER_OK, 2, "uplink_Bps"),
        "rack inf uplink": ("racks:\n  - {name: r0, uplink_Bps: .inf}\n" + _CLUSTER_OK, 2, "uplink_Bps"),
        "dup rack": ("racks:\n  - {name: r0, uplink_Bps: 1e9}\n  - {name: r0, uplink_Bps: 1e9}\n" + _CLUSTER_OK,
                     3, "name"),
        "dup server name": ("servers:\n  - {name: a, gpus: 4}\n  - {name: a, gpus: 4}\n", 3, "name"),
        "list doc": ("- 1\n- 2\n", 1, None),
        "scalar doc": ("42\n", 1, None),
        "bad yaml": ("servers: [\n  {gpus: 4\n", 3, None),
        "tab yaml": ("servers:\n\t- {gpus: 4}\n", 2, None),
        "negative latency": ("latency_intra_s: -1\n" + _CLUSTER_OK, 1, "latency_intra_s"),
        "string latency": ("latency_intra_s: fast\n" + _CLUSTER_OK, 1, "latency_intra_s"),
        "servers mapping": ("servers: {gpus: 4}\n", 1, "servers"),
        "multi doc": (_CLUSTER_OK + "---\n" + _CLUSTER_OK, 3, None),
        "python tag": ("servers: !!python/object/apply:os.system ['true']\n", 1, None),
    }
    out = []
    for i, (name, (text, row, fld)) in enumerate(docs.items()):
        cmd = [*TABLE, "--cluster", "{d}/c.yaml"] if i % 2 else ["simulate", "--trace", "synthetic:3", "--cluster",
                                                                 "{d}/c.yaml", "--policy", "fifo"]
        out.append(Case(f"cluster-yaml {name}", cmd, {"c.yaml": text}, file="{d}/c.yaml", row=row, field=fld))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi"))
    out.append(Case("cluster-yaml alias bomb", [*TABLE, "--cluster", "{d}/c.yaml"], {"c.yaml": bomb},
                    file="{d}/c.yaml"))
    out.append(Case("cluster-yaml huge file", [*TABLE, "--cluster", "{d}/c.yaml"],
                    {"c.yaml": _CLUSTER_OK + "#" * (8 << 20) + "\n"}, file="{d}/c.yaml"))
    out.append(Case("cluster-yaml missing", [*TABLE, "--cluster", "{d}/none.yaml"], file="{d}/none.yaml"))
    return out


_ENTRY = "def main(ctx):\n    pass\n"
_JOB = "  - name: j1\n    entry: trainmod:main\n    batch: 32\n    work: {samples: 1000}\n"


def jobs_cases() -> list[Case]:
    def job(**over) -> str:
        fields = {"name": "j1", "entry": "trainmod:main", "batch": "32", "work": "{samples: 1000}"}
        fields.update(over)
        body = "".join(f"    {k}: {v}\n" for k, v in fields.items() if v is not None)
        return "jobs:\n  - " + body[4:]

    # (name, text, row, field): rows count from "jobs:" = 1, "- name" = 2, then one per key
    docs = [
        ("epochs inf", job(work="{epochs: .inf, epoch_samples: 10}"), 5, "epochs"),
        ("epochs nan", job(work="{epochs: .nan, epoch_samples: 10}"), 5, "epochs"),
        ("epochs huge", job(work="{epochs: 1e300, epoch_samples: 1000}"), 5, "epochs"),
        ("samples huge", job(work="{samples: 1e300}"), 5, "samples"),
        ("samples float", job(work="{samples: 10.5}"), 5, "samples"),
        ("samples bool", job(work="{samples: true}"), 5, "samples"),
        ("samples zero", job(work="{samples: 0}"), 5, "samples"),
        ("samples and epochs", job(work="{samples: 10, epochs: 1}"), 5, "work"),
        ("batch true", job(batch="true"), 4, "batch"),
        ("batch float", job(batch="3.5"), 4, "batch"),
        ("batch string", job(batch="big"), 4, "batch"),
        ("batch huge", job(batch="99999999999999999999"), 4, "batch"),
        ("batch zero", job(batch="0"), 4, "batch"),
        ("arrival inf", job(arrival_s=".inf"), 6, "arrival_s"),
        ("arrival huge", job(arrival_s="1e300"), 6, "arrival_s"),
        ("arrival negative", job(arrival_s="-1"), 6, "arrival_s"),
        ("min_workers float", job(min_workers="1.5"), 6, "min_workers"),
        ("max below min", job(min_workers="4", max_workers="2"), 2, "max_workers"),
        ("max_workers huge", job(max_workers="100000"), 6, "max_workers"),
        ("seed negative", job(seed="-1"), 6, "seed"),
        ("seed bool", job(seed="false"), 6, "seed"),
        ("unknown key", job(colour="red"), 6, "colour"),
        ("bad name", job(name="'a b'"), 2, "name"),
        ("bad entry", job(entry="not an entry"), 3, "entry"),
        ("missing entry module", job(entry="nosuchmod:main"), 3, "entry"),
        ("missing batch", job(batch=None), 2, "batch"),
        ("missing work", job(work=None), 2, "work"),
        ("utility inf", job(utility="{kind: linear, value: .inf, slope_per_s: 1}"), 6, "value"),
        ("utility kind", job(utility="{kind: cubic}"), 6, "kind"),
        ("utility missing", job(utility="{kind: sigmoid, value: 1}"), 6, "utility"),
        ("args not plain", job(args="{f: !!binary aGVsbG8=}"), 6, "args"),
        ("duplicate key", job() + "    batch: 64\n", 6, "batch"),
        ("duplicate job", "jobs:\n" + _JOB + _JOB, 6, "name"),
        ("empty jobs", "jobs: []\n", 1, "jobs"),
        ("not a mapping", "42\n", 1, None),
        ("bad yaml", "jobs:\n  - name: [j1\n", 3, None),
        ("extra top key", "jobs:\n" + _JOB + "when: now\n", 6, "when"),
        ("tenant number", job(tenant="[1, 2]"), 6, "tenant"),
    ]
    out = []
    for name, text, row, fld in docs:
        argv = ["run", "--jobs", "{d}/jobs.yaml", "--cluster", "1x2", "--state", "{d}/statefile"]
        out.append(Case(f"jobs {name}", argv, {"jobs.yaml": text, "trainmod.py": _ENTRY, "statefile": "x"},
                        file="{d}/jobs.yaml", row=row, field=fld))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi")) + "jobs: *i\n"
    out.append(Case("jobs alias bomb", ["run", "--jobs", "{d}/jobs.yaml", "--state", "{d}/statefile"],
                    {"jobs.yaml": bomb, "statefile": "x"}, file="{d}/jobs.yaml"))
    for spec in ("demo:0", "demo:65", "demo:3,scale=0", "demo:3,scale=1e300", "demo:x", "demo:3,scale=2,scale=3"):
        out.append(Case(f"jobs {spec}", ["run", "--jobs", spec, "--state", "{d}/statefile"], {"statefile": "x"},
                        field="jobs"))
    return out
