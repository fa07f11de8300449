"""Bad inputs at the edges, written after the first corpus had passed (issue 20's "a corpus you
have not seen"): files that are not files (folders, FIFOs, devices, symlink loops), other
encodings and a byte-order mark, nesting deep enough to reach Python's recursion limit, JSON
numbers beyond a double, the commands and options the first corpus left out (suite, serve,
submit, optimum-check, model predict and fidelity, --config, --profiles, --gpu-profiles,
--estimates, --load, --admission) and numbers at their edges.
"""

from __future__ import annotations

from bad_inputs.corpus import TABLE, TABLES, UNWRITABLE, Case, _table_text

_SIM = ["--cluster", "1x2", "--policy", "fifo"]
_PHILLY = TABLES["philly"]
_FIT = "placement,local_bsz,step_time\n1,32,0.1\n2,32,0.12\n4,32,0.15\n22,32,0.2\n44,32,0.3\n"
_PARAMS = ('{"format": "ringsched-step-model/1", "model": "ring", '
           '"params": {"compute_base_s": 0.01, "compute_per_sample_s": 0.0001}}')
_QUERY = "placement,local_bsz\n1,32\n22,64\n"
_ENTRY = "def main(ctx):\n    pass\n"
_JOB = "jobs:\n  - name: j1\n    entry: trainmod:main\n    batch: 32\n    work: {samples: 1000}\n"


def _philly(rows=None) -> str:
    _, _, header, ok, sep = _PHILLY
    return _table_text(header, rows or ok, sep)


def _philly_bad_duration() -> str:
    _, _, header, ok, sep = _PHILLY
    rows = [list(r) for r in ok]
    rows[1][1] = "-7"
    return _table_text(header, rows, sep)


def file_kind_cases() -> list[Case]:
    """Paths that are not readable regular files, for every reader of a user file."""
    readers = {  # name -> (argv with {p} for the path, field or None)
        "trace": (["simulate", "--trace", "philly:{p}", *_SIM], None),
        "cluster": ([*TABLE, "--cluster", "{p}"], None),
        "jobs": (["run", "--jobs", "{p}", "--state", "{d}/statefile"], None),
        "fit data": (["model", "fit", "{p}"], None),
        "predict params": (["model", "predict", "{p}", "{d}/q.csv"], None),
        "predict query": (["model", "predict", "{d}/p.json", "{p}"], None),
        "config": (["compare", "--config", "{p}", "--out", "{d}/o"], None),
        "profile": (["simulate", "--trace", "synthetic:3", *_SIM, "--profiles", "resnet50={p}"], None),
    }
    base = {"q.csv": _QUERY, "p.json": _PARAMS, "statefile": "x", "dir/keep": ""}
    out = []
    for name, (argv, fld) in readers.items():
        for kind, path, extra in (("folder", "{d}/dir", {}), ("fifo", "{d}/pipe", {"fifos": ("pipe",)}),
                                  ("symlink loop", "{d}/loop", {"links": {"loop": "loop2", "loop2": "loop"}}),
                                  ("device", "/dev/zero", {})):
            if kind == "device" and name not in ("trace", "cluster", "fit data", "predict params", "config"):
                continue
            args = [a.replace("{p}", path) for a in argv]
            out.append(Case(f"{name} is a {kind}", args, dict(base), file=path, field=fld, **extra))
    return out


def encoding_cases() -> list[Case]:
    """A byte-order mark before a bad value (the error still names it), UTF-16 and Latin-1 files."""
    _, _, header, ok, _ = _PHILLY
    bom = "\ufeff"
    utf16 = _philly_bad_duration().encode("utf-16")
    latin = _philly().replace("vc2", "vc\xe92").encode("latin-1")
    trace = ["simulate", "--trace", "philly:{d}/t.csv", *_SIM]
    out = [
        Case("philly BOM then a bad duration", trace, {"t.csv": bom + _philly_bad_duration()}, file="{d}/t.csv",
             row=3, field="duration"),
        Case("philly UTF-16", trace, {"t.csv": utf16}, file="{d}/t.csv"),
        Case("philly Latin-1", trace, {"t.csv": latin}, file="{d}/t.csv"),
        Case("cluster BOM then a bad gpus", [*TABLE, "--cluster", "{d}/c.yaml"],
             {"c.yaml": bom + "servers:\n  - {count: 2, gpus: 0}\n"}, file="{d}/c.yaml", row=2, field="gpus"),
        Case("cluster UTF-16", [*TABLE, "--cluster", "{d}/c.yaml"],
             {"c.yaml": "servers:\n  - {count: 2, gpus: 4}\n".encode("utf-16")}, file="{d}/c.yaml"),
        Case("jobs BOM then a bad batch", ["run", "--jobs", "{d}/j.yaml", "--state", "{d}/statefile"],
             {"j.yaml": bom + _JOB.replace("batch: 32", "batch: -3"), "trainmod.py": _ENTRY, "statefile": "x"},
             file="{d}/j.yaml", row=4, field="batch"),
        Case("fit data BOM then a bad step time", ["model", "fit", "{d}/f.csv"],
             {"f.csv": bom + _FIT.replace("0.15", "-0.15")}, file="{d}/f.csv", row=4, field="step_time"),
        Case("fit data UTF-16", ["model", "fit", "{d}/f.csv"], {"f.csv": _FIT.encode("utf-16")}, file="{d}/f.csv"),
        Case("params BOM then NaN", ["model", "predict", "{d}/p.json", "{d}/q.csv"],
             {"p.json": bom + _PARAMS.replace("0.01", "NaN"), "q.csv": _QUERY}, file="{d}/p.json",
             field="compute_base_s"),
        Case("params Latin-1", ["model", "predict", "{d}/p.json", "{d}/q.csv"],
             {"p.json": _PARAMS.replace('"ring"', '"r\xefng"').encode("latin-1"), "q.csv": _QUERY}, file="{d}/p.json"),
    ]
    return out


def nesting_cases() -> list[Case]:
    """Deep nesting (Python's recursion limit), numbers beyond a double, NUL bytes."""
    deep_yaml = "servers: " + "[" * 5000 + "]" * 5000 + "\n"
    deep_json = '{"format": "ringsched-step-model/1", "model": "ring", "params": ' + "[" * 100_000 + "]" * 100_000 + "}"
    deep_args = _JOB + "    args: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n"
    pred = ["model", "predict", "{d}/p.json", "{d}/q.csv"]
    out = [
        Case("cluster nested 5000 deep", [*TABLE, "--cluster", "{d}/c.yaml"], {"c.yaml": deep_yaml},
             file="{d}/c.yaml"),
        Case("jobs args nested 3000 deep", ["run", "--jobs", "{d}/j.yaml", "--state", "{d}/statefile"],
             {"j.yaml": deep_args, "trainmod.py": _ENTRY, "statefile": "x"}, file="{d}/j.yaml"),
        Case("params nested 100000 deep", pred, {"p.json": deep_json, "q.csv": _QUERY}, file="{d}/p.json"),
        Case("params 1e999", pred, {"p.json": _PARAMS.replace("0.01", "1e999"), "q.csv": _QUERY},
             file="{d}/p.json", field="compute_base_s"),
        Case("params -1e999", pred, {"p.json": _PARAMS.replace("0.0001", "-1e999"), "q.csv": _QUERY},
             file="{d}/p.json", field="compute_per_sample_s"),
        Case("params negative", pred, {"p.json": _PARAMS.replace("0.01", "-0.01"), "q.csv": _QUERY},
             file="{d}/p.json", field="compute_base_s"),
        Case("params bool", pred, {"p.json": _PARAMS.replace("0.01", "true"), "q.csv": _QUERY},
             file="{d}/p.json", field="compute_base_s"),
        Case("params huge integer", pred, {"p.json": _PARAMS.replace("0.01", "1" + "0" * 400), "q.csv": _QUERY},
             file="{d}/p.json", field="compute_base_s"),
        Case("params model unknown", pred, {"p.json": _PARAMS.replace('"ring"', '"cubic"'), "q.csv": _QUERY},
             file="{d}/p.json", field="model"),
        Case("params no params", pred, {"p.json": '{"format": "ringsched-step-model/1", "model": "ring"}',
                                        "q.csv": _QUERY}, file="{d}/p.json", field="params"),
        Case("params huge file", pred, {"p.json": _PARAMS[:-1] + ', "pad": "' + "x" * (64 << 20) + '"}',
                                        "q.csv": _QUERY}, file="{d}/p.json"),
        Case("query huge batch", pred, {"p.json": _PARAMS, "q.csv": "placement,local_bsz\n1,32\n2,1e300\n"},
             file="{d}/q.csv", row=3, field="local_bsz"),
        Case("query header only", pred, {"p.json": _PARAMS, "q.csv": "placement,local_bsz\n"}, file="{d}/q.csv"),
        Case("query placement of 2000 servers", pred,
             {"p.json": _PARAMS, "q.csv": "placement,local_bsz\n1,32\n" + "1" * 200_001 + ",32\n"},
             file="{d}/q.csv", row=3, field="placement"),
        Case("philly NUL in a cell", ["simulate", "--trace", "philly:{d}/t.csv", *_SIM],
             {"t.csv": _philly().replace("3600,1", "36\x0000,1", 1)}, file="{d}/t.csv", row=2, field="duration"),
    ]
    return out


def trace_edge_cases() -> list[Case]:
    """Values each trace loader must refuse that the first corpus did not try."""
    def trace(fmt, rows, row, fld, header=None):
        prefix, fname, h, _, sep = TABLES[fmt]
        text = _table_text(header if header is not None else h, rows, sep)
        return Case(f"{fmt} {fld} edge row {row}", ["simulate", "--trace", f"{prefix}:{{d}}/{fname}", *_SIM],
                    {fname: text}, file=f"{{d}}/{fname}", row=row, field=fld)

    def broken(fmt, r, col, v):
        _, _, header, ok, _ = TABLES[fmt]
        cols = header or ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
                          "arrival_time", "scale_factor"]
        rows = [list(x) for x in ok]
        rows[r][cols.index(col)] = v
        return trace(fmt, rows, r + (1 if header is None else 2), col)

    return [
        broken("philly", 1, "num_gpus", "-0"),
        broken("philly", 2, "duration", "1e-400x"),
        broken("philly", 0, "num_gpus", "0x2"),
        broken("pollux", 1, "batch_size", "-0"),
        broken("pollux", 2, "num_replicas", "65537"),
        broken("itp", 1, "submission_time", "+inf"),
        broken("itp_ef", 2, "num_gpu", "-1"),           # (iterations and deadlines are not read: docs/traces.md)
        broken("elasticflow", 0, "submit_time", "nan"),
        broken("elasticflow", 1, "batch_size", "-0"),
        broken("gavel", 1, "total_steps", "-3"),
        broken("gavel", 2, "scale_factor", "nan"),
        broken("alibaba", 1, "deletion_time", "40"),      # before its creation (50)
        broken("alibaba", 2, "num_gpu", "99999999999999999999"),
        broken("alibaba", 0, "gpu_milli", "nan"),
    ]


def command_cases() -> list[Case]:
    """Commands and options the first corpus left out."""
    sim = ["simulate", "--trace", "synthetic:3", *_SIM]
    cmp_ = ["compare", "--trace", "synthetic:3", "--cluster", "1x2", "--policies", "fifo", "--out", "{d}/o"]
    suite = ["suite", "--quick", "--seeds", "1", "--out", "{d}/o"]
    serve = ["serve", "--state", "{d}/s", "--port", "0"]
    cfg = "kind: compare\ntrace: {trace: 'synthetic:3'}\ncluster: 1x2\npolicies: [fifo]\n"
    out = [Case(f"simulate --estimates {e}", [*sim, "--estimates", e], field="estimates")
           for e in ("lognormal:nan", "lognormal:-1", "user:0", "user:inf", "bogus:1", "lognormal", "exact:3")]
    out += [Case(f"compare --load {v}", [*cmp_, "--load", v], field="load") for v in ("0", "nan", "1e-300", "inf")]
    # an option of one value given twice (click keeps the last one silently)
    out += [Case(f"{argv[0]} {flag} given twice", argv + again, {"f.csv": _FIT}, field=flag)
            for argv, flag, again in (
                (sim, "--seed", ["--seed", "1", "--seed", "2"]), (sim, "--policy", ["--policy", "srtf"]),
                (cmp_, "--out", ["--out={d}/o2"]), (["model", "fit", "{d}/f.csv", "-o", "{d}/a.json"], "--out",
                                                   ["--out", "{d}/b.json"]),
                (["run", "--jobs", "demo:1", "--state", "{d}/s"], "--jobs", ["--jobs", "demo:2"]),
                (sim, "--json", ["--json", "--json"]))]
    out += [
        Case("simulate --admission maybe", [*sim, "--admission", "maybe"], field="admission"),
        Case("simulate --seed 2^32", [*sim, "--seed", str(2**32)], field="seed"),
        Case("simulate --vc on a trace without tenants", [*sim, "--vc", "vc9"], field="vc"),
        Case("simulate --profiles no =", [*sim, "--profiles", "resnet50"], field="profiles"),
        Case("simulate --profiles unknown model", [*sim, "--profiles", "nosuch={d}/p.json"], {"p.json": _PARAMS},
             field="profiles"),
        Case("simulate --profiles NaN params", [*sim, "--profiles", "resnet50={d}/p.json"],
             {"p.json": _PARAMS.replace("0.01", "NaN")}, file="{d}/p.json", field="compute_base_s"),
        Case("simulate --gpu-profiles bad file", [*sim, "--gpu-profiles", "{d}/g"],
             {"g/t4/resnet50.json": "{oops"}, file="{d}/g/t4/resnet50.json"),
        Case("simulate --gpu-profiles missing", [*sim, "--gpu-profiles", "{d}/nog"], file="{d}/nog"),
        Case("sweep --baseline unknown", ["sweep", "--trace", "synthetic:3", "--cluster", "1x2", "--policies", "fifo",
                                          "--seeds", "0", "--loads", "1", "--baseline", "srtf", "--out", "{d}/o"],
             field="baseline"),
        Case("sweep a second bad --cluster", ["sweep", "--trace", "synthetic:3", "--cluster", "1x2", "--cluster",
                                              "2x0", "--policies", "fifo", "--seeds", "0", "--out", "{d}/o"],
             field="cluster"),
        Case("compare --config unknown key", ["compare", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": cfg + "colour: red\n"}, file="{d}/e.yaml", row=5, field="colour"),
        Case("compare --config duplicate key", ["compare", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": cfg + "cluster: 2x2\n"}, file="{d}/e.yaml", row=5, field="cluster"),
        Case("compare --config NaN slot", ["compare", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": cfg + "simulator: {slot_s: .nan}\n"}, file="{d}/e.yaml", row=5, field="slot_s"),
        Case("compare --config bad cluster", ["compare", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": cfg.replace("1x2", "1x2,racks=1.5")}, file="{d}/e.yaml", field="cluster"),
        Case("compare --config load 1e-300", ["compare", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": cfg + "load: 1.0e-300\n"}, file="{d}/e.yaml", row=5, field="load"),
        Case("compare --config wrong kind", ["compare", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": cfg.replace("kind: compare", "kind: nonsense")}, file="{d}/e.yaml", row=1, field="kind"),
        Case("sweep --config loads 1e-300", ["sweep", "--config", "{d}/e.yaml", "--out", "{d}/o"],
             {"e.yaml": "kind: sweep\ntrace: {trace: 'synthetic:3'}\nclusters: [1x2]\npolicies: [fifo]\n"
                        "seeds: [0]\nloads: [1.0e-300]\n"}, file="{d}/e.yaml", field="loads"),
        Case("suite --workloads unknown", [*suite, "--workloads", "nosuch"], field="workloads"),
        Case("suite --target unknown", [*suite, "--target", "nosuch"], field="target"),
        Case("suite --estimates bad", [*suite, "--estimates", "lognormal:-2"], field="estimates"),
        Case("suite --engine unknown", [*suite, "--engine", "nosuch"], field="engine"),
        Case("suite --objective unknown", [*suite, "--objective", "nosuch"], field="objective"),
        Case("suite --policies unknown", [*suite, "--policies", "fifo,nosuch"], field="polic"),
        Case("suite --seeds 0", [*suite[:-4], "--seeds", "0", "--out", "{d}/o"], field="seeds"),
        Case("suite --out is a file", [*suite[:-2], "--out", "{d}/f"], {"f": "x"}, file="{d}/f", field="out"),
        Case("optimum-check --regime unknown", ["optimum-check", "--instances", "1", "--regime", "nosuch"],
             field="regime"),
        Case("optimum-check --max-jobs 1", ["optimum-check", "--instances", "1", "--max-jobs", "1"],
             field="max-jobs"),
        Case("optimum-check --max-slots 25", ["optimum-check", "--instances", "1", "--max-slots", "25"],
             field="max-slots"),
        Case("model fidelity --train-frac 0", ["model", "fidelity", "--train-frac", "0", "{d}"], field="train-frac"),
        Case("model fit --model unknown, data fine", ["model", "fit", "{d}/f.csv", "--model", "cubic"],
             {"f.csv": _FIT}, field="model"),
        Case("model table unknown model", [*TABLE[:2], "--model", "cubic", "--cluster", "1x2"], field="model"),
        Case("serve --host 0.0.0.0 without a token", [*serve, "--host", "0.0.0.0"], field="token"),
        Case("serve --port 70000", [*serve[:-2], "--port", "70000"], field="port"),
        Case("serve --slot-s nan", [*serve, "--slot-s", "nan"], field="slot-s"),
        Case("serve --policy unknown", [*serve, "--policy", "nosuch"], field="policy"),
        Case("serve --cluster bad", [*serve, "--cluster", "0x2"], field="cluster"),
        Case("serve --backend unknown", [*serve, "--backend", "nosuch"], field="backend"),
        Case("serve --state unwritable", ["serve", "--state", f"{UNWRITABLE}/s", "--port", "0"], {"ro/keep": ""},
             mode={"ro": 0o500}, field="state"),
        Case("serve --state is a file", ["serve", "--state", "{d}/f", "--port", "0"], {"f": "x"}, field="state"),
        Case("submit a bad jobs file", ["submit", "{d}/j.yaml", "--url", "http://127.0.0.1:9"],
             {"j.yaml": _JOB.replace("batch: 32", "batch: .inf"), "trainmod.py": _ENTRY}, file="{d}/j.yaml",
             row=4, field="batch"),
        Case("submit --priority 5000", ["submit", "{d}/j.yaml", "--priority", "5000", "--url", "http://127.0.0.1:9"],
             {"j.yaml": _JOB, "trainmod.py": _ENTRY}, field="priority"),
        Case("submit --url not a url", ["submit", "{d}/j.yaml", "--url", "not a url"],
             {"j.yaml": _JOB, "trainmod.py": _ENTRY}, field="url"),
        Case("run --slot-s 1e300", ["run", "--slot-s", "1e300", "--state", "{d}/s"], field="slot-s"),
        Case("run --jobs demo:3,scale=nan", ["run", "--jobs", "demo:3,scale=nan", "--state", "{d}/s"], field="jobs"),
        Case("run --address with the local backend", ["run", "--address", "10.0.0.1:6379", "--state", "{d}/statefile"],
             {"statefile": "x"}, field="address"),
        Case("run --state is a file", ["run", "--jobs", "demo:1", "--state", "{d}/f"], {"f": "x"}, field="state"),
        Case("unwritable HOME and a bad policy", [*sim[:-2], "--policy", "nosuch"], field="policy",
             env={"HOME": "/proc/ringsched-home", "NUMBA_CACHE_DIR": ""}),
    ]
    return out


def jobs_edge_cases() -> list[Case]:
    """Jobs files: entry points that misbehave at import, names and values at their edges."""
    def jobs(name, text, row, fld, files=None):
        return Case(f"jobs {name}", ["run", "--jobs", "{d}/j.yaml", "--cluster", "1x2", "--state", "{d}/statefile"],
                    {"j.yaml": text, "trainmod.py": _ENTRY, "statefile": "x", **(files or {})},
                    file="{d}/j.yaml", row=row, field=fld)

    def with_key(k, v):
        return _JOB + f"    {k}: {v}\n"

    # work in epochs without epoch_samples: the entry's dataset_size is read, so its module is
    # imported (otherwise only the workers import it)
    epochs = _JOB.replace("{samples: 1000}", "{epochs: 2}")
    return [
        jobs("entry module exits at import", epochs.replace("trainmod", "exitmod"), 5, "work",
             {"exitmod.py": "import sys\nsys.exit(0)\n"}),
        jobs("entry module raises at import", epochs.replace("trainmod", "raisemod"), 5, "work",
             {"raisemod.py": "raise ValueError('boom')\n"}),
        jobs("entry dataset_size raises", epochs, 5, "work",
             {"trainmod.py": _ENTRY + "main.dataset_size = lambda args: 1 // 0\n"}),
        jobs("entry dataset_size huge", epochs, 5, "work", {"trainmod.py": _ENTRY + "main.dataset_size = 10**30\n"}),
        jobs("entry attribute missing", epochs.replace("trainmod:main", "trainmod:nosuch"), 5, "work"),
        jobs("min_workers zero", with_key("min_workers", "0"), 6, "min_workers"),
        jobs("max_workers 1e300", with_key("max_workers", "1e300"), 6, "max_workers"),
        jobs("epochs without epoch_samples", _JOB.replace("{samples: 1000}", "{epochs: 2}"), 5, "epoch"),
        jobs("epoch_samples zero", _JOB.replace("{samples: 1000}", "{epochs: 2, epoch_samples: 0}"), 5,
             "epoch_samples"),
        jobs("deadline utility negative", with_key("utility", "{kind: deadline, value: 1, deadline_s: -5}"), 6,
             "deadline"),
        jobs("sigmoid utility nan", with_key("utility", "{kind: sigmoid, value: .nan, slope_per_s: 1, mid_s: 1}"),
             6, "value"),
        jobs("name with a slash", _JOB.replace("name: j1", "name: ../j1"), 2, "name"),
        jobs("name of 10000 characters", _JOB.replace("name: j1", "name: " + "j" * 10_000), 2, "name"),
        jobs("jobs null", "jobs:\n", 1, "jobs"),
        jobs("jobs a mapping", "jobs: {name: j1}\n", 1, "jobs"),
        jobs("10001 jobs", "jobs:\n" + "".join(f"  - {{name: j{i}, entry: 'trainmod:main', batch: 1, "
                                               f"work: {{samples: 1}}}}\n" for i in range(10_001)), None, "jobs"),
        jobs("model label empty", with_key("model", "''"), 6, "model"),
    ]


def edge_cases() -> list[Case]:
    return (file_kind_cases() + encoding_cases() + nesting_cases() + trace_edge_cases() + command_cases()
            + jobs_edge_cases())
