"""Bad inputs of the command line itself: ``model fit`` tables, numeric options, output paths,
policy and objective specs, usage errors (the file formats are in ``corpus``)."""

from __future__ import annotations

from bad_inputs.corpus import UNWRITABLE, Case, _table_text


_FIT_OK = [["1", "32", "0.1"], ["2", "32", "0.12"], ["4", "32", "0.15"], ["22", "32", "0.2"], ["44", "32", "0.3"]]


def model_cases() -> list[Case]:
    def fit_case(name, header, rows, row=None, fld=None, extra=()):
        return Case(f"model-fit {name}", ["model", "fit", "{d}/data.csv", *extra],
                    {"data.csv": _table_text(header, rows, ",")}, file="{d}/data.csv", row=row, field=fld)

    h = ["placement", "local_bsz", "step_time"]
    out = []
    bad = {"placement": ["", "0", "x1", "1234567890", "-1"], "local_bsz": ["", "0", "1.5", "x", "1e300", "inf",
                                                                          "99999999999999999999"],
           "step_time": ["", "0", "-1", "inf", "nan", "x", "1e308", "1e-320"]}
    k = 0
    for col, vals in bad.items():
        for v in vals:
            rows = [list(r) for r in _FIT_OK]
            r = k % len(rows)
            k += 1
            rows[r][h.index(col)] = v
            out.append(fit_case(f"{col}={v!r}", h, rows, r + 2, col))
    shape = ["num_nodes", "num_replicas", "local_bsz", "step_time", "max_per_node"]
    srows = [["1", "1", "32", "0.1", "1"], ["1", "4", "32", "0.2", "4"], ["2", "8", "32", "0.3", "4"]]
    for col, v in (("num_nodes", "0"), ("num_replicas", "1"), ("max_per_node", "9"), ("num_nodes", "1e300"),
                   ("num_replicas", "1.5"), ("max_per_node", "0")):
        rows = [list(r) for r in srows]
        rows[2][shape.index(col)] = v
        out.append(fit_case(f"shape {col}={v}", shape, rows, 4, col))
    out.append(fit_case("dup column", h + ["step_time"], [r + ["0.5"] for r in _FIT_OK], 1, "step_time"))
    out.append(fit_case("no step_time", h[:2], [r[:2] for r in _FIT_OK], 1, "step_time"))
    out.append(fit_case("no local_bsz", ["placement", "step_time"], [[r[0], r[2]] for r in _FIT_OK], 1, "local_bsz"))
    out.append(fit_case("long line", h, _FIT_OK[:2] + [_FIT_OK[2] + ["9"]] + _FIT_OK[3:], 4))
    out.append(fit_case("header only", h, []))
    out.append(Case("model-fit empty", ["model", "fit", "{d}/data.csv"], {"data.csv": ""}, file="{d}/data.csv"))
    out.append(Case("model-fit binary", ["model", "fit", "{d}/data.csv"], {"data.csv": b"\xff\xfe\x00\x9c"},
                    file="{d}/data.csv"))
    out.append(Case("model-fit missing", ["model", "fit", "{d}/none.csv"], file="{d}/none.csv"))
    # degenerate data whose fit is not finite: tiny step times
    tiny = [[p, "32", "1e-300"] for p in ("1", "2", "4", "22", "44")]
    out.append(fit_case("tiny step times", h, tiny, None, "step_time"))
    unknown = fit_case("unknown model", h, _FIT_OK, None, "model", extra=("--model", "nosuch"))
    unknown.file = None  # the option is wrong, not the file
    out.append(unknown)
    out.append(Case("model-fit out is folder", ["model", "fit", "{d}/data.csv", "--out", "{d}/outdir"],
                    {"data.csv": _table_text(h, _FIT_OK, ","), "outdir/keep": ""}, file="{d}/outdir", field="out"))
    out.append(Case("model-fit out in missing folder", ["model", "fit", "{d}/data.csv", "--out", "{d}/no/such/p.json"],
                    {"data.csv": _table_text(h, _FIT_OK, ",")}, file="{d}/no/such/p.json", field="out"))
    # predict
    params_ok = ('{"format": "ringsched-step-model/1", "model": "ring", '
                 '"params": {"compute_base_s": 0.01, "compute_per_sample_s": 0.0001}}')
    q = _table_text(["placement", "local_bsz"], [["1", "32"], ["22", "64"]], ",")
    pred = {
        "not json": ("{oops", q, "{d}/p.json", None, None),
        "wrong format": ('{"format": "x"}', q, "{d}/p.json", None, None),
        "nan param": ('{"format": "ringsched-step-model/1", "model": "ring", "params": {"alpha_c": NaN}}', q,
                      "{d}/p.json", None, "alpha_c"),
        "inf param": ('{"format": "ringsched-step-model/1", "model": "ring", "params": {"alpha_c": Infinity}}', q,
                      "{d}/p.json", None, "alpha_c"),
        "string param": ('{"format": "ringsched-step-model/1", "model": "ring", "params": {"alpha_c": "x"}}', q,
                         "{d}/p.json", None, "alpha_c"),
        "unknown param": ('{"format": "ringsched-step-model/1", "model": "ring", "params": {"zeta": 1}}', q,
                          "{d}/p.json", None, "zeta"),
        "dup key": ('{"format": "ringsched-step-model/1", "model": "ring", "model": "pollux", "params": {}}', q,
                    "{d}/p.json", None, "model"),
        "params list": ('[1, 2]', q, "{d}/p.json", None, None),
        "query bad bsz": (params_ok, _table_text(["placement", "local_bsz"], [["1", "32"], ["2", "0"]], ","),
                          "{d}/q.csv", 3, "local_bsz"),
        "query bad placement": (params_ok, _table_text(["placement", "local_bsz"], [["1", "32"], ["2a", "8"]], ","),
                                "{d}/q.csv", 3, "placement"),
    }
    for name, (p, qq, f, row, fld) in pred.items():
        out.append(Case(f"model-predict {name}", ["model", "predict", "{d}/p.json", "{d}/q.csv"],
                        {"p.json": p, "q.csv": qq}, file=f, row=row, field=fld))
    out.append(Case("model-predict out folder", ["model", "predict", "{d}/p.json", "{d}/q.csv", "--out", "{d}/o"],
                    {"p.json": params_ok, "q.csv": q, "o/keep": ""}, file="{d}/o", field="out"))
    out.append(Case("model-fidelity missing", ["model", "fidelity", "{d}/nodir"], file="{d}/nodir"))
    out.append(Case("model-fidelity empty", ["model", "fidelity", "{d}/e"], {"e/readme": ""}, file="{d}/e"))
    out.append(Case("model-table cluster", ["model", "table", "--cluster", "4x8,racks=1.5"], field="cluster"))
    out.append(Case("model-table model", ["model", "table", "--model", "nosuch"], field="model"))
    return out


def option_cases() -> list[Case]:
    """Numeric options, output paths, policy and objective specs, usage errors."""
    sim = ["simulate", "--trace", "synthetic:3", "--cluster", "1x2", "--policy", "fifo"]
    cmp_ = ["compare", "--trace", "synthetic:3", "--cluster", "1x2", "--policies", "fifo", "--out", "{d}/o"]
    swp = ["sweep", "--trace", "synthetic:3", "--cluster", "1x2", "--policies", "fifo", "--seeds", "0",
           "--loads", "1", "--out", "{d}/o"]
    out = []
    numeric = {"--seed": ["-1", "1e3", "99999999999999999999999", "x"],
               "--slot-s": ["0", "-1", "nan", "inf", "1e-300", "1e300"],
               "--restart-s": ["-1", "nan", "1e300"], "--checkpoint-s": ["0", "inf", "1e-300"],
               "--mtbf": ["1e-9", "0", "-1", "nan", "inf"], "--mttr": ["0", "-1", "nan", "1e-12", "1e300"],
               "--horizon-s": ["-1", "0", "nan", "inf", "1e300"]}
    k = 0
    for opt, vals in numeric.items():
        for v in vals:
            base = (sim, cmp_, swp)[k % 3] if opt != "--seed" or k % 3 != 2 else sim
            k += 1
            out.append(Case(f"{base[0]} {opt} {v}", [*base, opt, v], field=opt.lstrip("-")))
    for v in ("1e-300", "0", "-1", "nan", "inf", "1e300", "x", ""):
        out.append(Case(f"sweep --loads {v}", [*swp[:-4], "--loads", v, "--out", "{d}/o"], field="loads"))
    for v in ("x", "-1", "5-2", "1-99999999999"):
        out.append(Case(f"sweep --seeds {v}", [*swp[:7], "--seeds", v, "--loads", "1", "--out", "{d}/o"],
                        field="seeds"))
    for v in ("0.1", "1", "nan"):
        out.append(Case(f"sweep --confidence {v}", [*swp, "--confidence", v], field="confidence"))
    for v in ("0", "-1", "x"):
        out.append(Case(f"compare --workers {v}", [*cmp_, "--workers", v], field="workers"))
    out.append(Case("sweep --engine", [*swp, "--engine", "nosuch"], field="engine"))
    # output paths
    files = {"existing": "x", "ro/keep": ""}
    out.append(Case("simulate --out is a file", [*sim, "--out", "{d}/existing"], files, file="{d}/existing",
                    field="out"))
    out.append(Case("simulate --out unwritable", [*sim, "--out", f"{UNWRITABLE}/sub"], files, file=f"{UNWRITABLE}/sub",
                    field="out", mode={"ro": 0o500}))
    out.append(Case("compare --out is a file", [*cmp_[:-2], "--out", "{d}/existing"], files, file="{d}/existing",
                    field="out"))
    out.append(Case("compare --out unwritable", [*cmp_[:-2], "--out", f"{UNWRITABLE}/sub"], files,
                    file=f"{UNWRITABLE}/sub",
                    field="out", mode={"ro": 0o500}))
    out.append(Case("sweep --out is a file", [*swp[:-2], "--out", "{d}/existing"], files, file="{d}/existing",
                    field="out"))
    out.append(Case("sweep --out unwritable", [*swp[:-2], "--out", f"{UNWRITABLE}/sub"], files,
                    file=f"{UNWRITABLE}/sub",
                    field="out", mode={"ro": 0o500}))
    out.append(Case("optimum --details folder", ["optimum-check", "--instances", "1", "--details", "{d}/ro"], files,
                    file="{d}/ro", field="details"))
    out.append(Case("model-fit --out unwritable",
                    ["model", "fit", "{d}/data.csv", "--out", f"{UNWRITABLE}/p.json"],
                    {**files, "data.csv": _table_text(["placement", "local_bsz", "step_time"], _FIT_OK, ",")},
                    file=f"{UNWRITABLE}/p.json", field="out", mode={"ro": 0o500}))
    # optimum-check
    for opt, v in (("--instances", "0"), ("--max-jobs", "13"), ("--max-slots", "5"), ("--time-limit", "nan"),
                   ("--time-limit", "-1"), ("--workers", "0"), ("--zeta", "nope"), ("--seed", "-1"),
                   ("--instances", "99999999999"), ("--time-limit", "1e300")):
        out.append(Case(f"optimum-check {opt} {v}", ["optimum-check", opt, v], field=opt.lstrip("-")))
    # policies and objectives at the CLI boundary
    pols = ["nosuch", "fifo:x=1", "gadget:admission=strict,admission=deferred", "gadget:admission=maybe",
            "gadget:pack_slack=nan", "gadget:pack_slack=1e400", "fifo:bogus", "gadget:=3", ":x"]
    for i, p in enumerate(pols):
        if i % 2:
            out.append(Case(f"policy {p}", [*sim[:-2], "--policy", p], field="policy"))
        else:
            out.append(Case(f"policies {p}", [*cmp_[:6], p, "--out", "{d}/o"], field="polic"))  # policy/policies
    out.append(Case("run --policy", ["run", "--policy", "nosuch", "--state", "{d}/s"], field="policy"))
    out.append(Case("run --backend", ["run", "--backend", "nosuch", "--state", "{d}/s"], field="backend"))
    out.append(Case("run --state unwritable", ["run", "--state", "/proc/ringsched-corpus/state"], field="--state"))
    out.append(Case("run --slot-s", ["run", "--slot-s", "0", "--state", "{d}/s"], field="slot-s"))
    out.append(Case("run --checkpoint-s", ["run", "--checkpoint-s", "nan", "--state", "{d}/s"], field="checkpoint-s"))
    out.append(Case("run --cluster", ["run", "--cluster", "2x2,racks=1.5", "--state", "{d}/s"], field="cluster"))
    objs = ["nosuch", "jct,x=1", "deadline,slack=nan", "jct,=3", "energy,idle_w=inf", "fairness,rho=1,rho=2"]
    for o in objs:
        out.append(Case(f"objective {o}", [*sim, "--objective", o], field="objective"))
    # usage errors: click's own
    usage = [(["simulate", "--bogus"], "bogus"), (["simulate", "--seed"], "seed"),
             (["simulate", "--seed", "abc"], "seed"), (["nosuchcommand"], "nosuchcommand"),
             (["model", "fit"], "DATA"), (["model", "nosuch"], "nosuch"), (["compare"], "out"),
             (["sweep", "--trace", "synthetic:3"], "out"), (["simulate", "--limit", "0"], "limit"),
             (["model", "fidelity", "--seeds", "0", "{d}"], "seeds"), (["simulate", "--slot-s", "fast"], "slot-s"),
             (["run", "--json", "extra-arg"], "extra-arg")]
    for argv, fld in usage:
        out.append(Case(f"usage {' '.join(argv)}", argv, field=fld, usage=True))
    return out
