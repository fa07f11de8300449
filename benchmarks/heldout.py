"""Workloads outside the suite (docs/suite-history.md, "Held out"): other Philly VCs, another ITP
cluster, two synthetic mixes, the Alibaba pods on another cluster, and another Philly VC and a
heavier synthetic mix on the suite's two-GPU-type clusters, built the suite's way
(``SuiteWorkload``), every policy (or ``--policies``), seeds 0 and 1, exact estimates (or
``--estimates``), every workload (or ``--workloads``), judged by JCT utility (or ``--objective``,
docs/objectives.md). Writes OUT/cells.parquet and prints the target's ratios to the best
baseline per workload (under another objective: each policy's metrics of that objective, means
over the seeds). ``--set second`` runs a second list instead, built on 2026-12-07 from trace
parts in neither the suite nor the first list (three more Philly VCs, one of them on two
cluster sizes, two more ITP clusters, two synthetic mixes), for a check on workloads no change
had been judged on.

    python benchmarks/heldout.py OUT [--policies gadget,oasis] [--estimates lognormal:1] [--workloads NAME,...]
                                     [--objective deadline] [--set first|second] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

S = "{shared}"
PH = f"philly:{S}/philly-pollux/philly.csv"
ITP = f"itp:{S}/microsoft-itp-elasticflow/raw-traces"


def workloads(which: str = "all") -> list:
    """The first held-out list (``first``), the second (``second``), or both (``all``)."""
    return {"first": first, "second": second, "all": lambda: first() + second()}[which]()


def first() -> list:
    from ringsched.experiment.workloads import SuiteWorkload

    return [
        SuiteWorkload("ho-philly-2869ce", "philly", PH, "4x8", "held out", vc="2869ce", limit=400),
        SuiteWorkload("ho-philly-e13805", "philly", PH, "4x8", "held out", vc="e13805", limit=374),
        SuiteWorkload("ho-philly-ed69ec", "philly", PH, "8x8", "held out", vc="ed69ec", limit=500),
        SuiteWorkload("ho-philly-6c71a0", "philly", PH, "8x8", "held out", vc="6c71a0", limit=500),
        SuiteWorkload("ho-itp-cluster07", "itp", ITP, "10x8", "held out", vc="cluster07", limit=800),
        SuiteWorkload("ho-syn-8x8-1.5", "synthetic", "synthetic:400,load=0.75", "8x8", "held out"),
        SuiteWorkload("ho-syn-3x8-rigid-2", "synthetic", "synthetic:300,load=0.375", "3x8", "held out", rigid=True),
        SuiteWorkload("ho-alibaba-4x8", "alibaba", f"alibaba:{S}/alibaba-gpu-v2023/openb_pod_list_default.csv",
                      "4x8", "held out", limit=2000),
        SuiteWorkload("ho-mixed-philly-2869ce", "philly", PH, "{clusters}/t4x16-h200x4.yaml", "held out, two GPU types",
                      vc="2869ce", limit=400),
        SuiteWorkload("ho-mixed-syn-1.5", "synthetic", "synthetic:300,load=1.5", "{clusters}/t4x8-h200x2.yaml",
                      "held out, two GPU types"),
    ]


def second() -> list:
    from ringsched.experiment.workloads import SuiteWorkload as W

    mix = "held out, second list"
    return [
        W("ho2-philly-11cb48", "philly", PH, "4x8", mix, vc="11cb48", limit=400),
        W("ho2-philly-b436b2", "philly", PH, "4x8", mix, vc="b436b2", limit=400),
        W("ho2-philly-6214e9", "philly", PH, "4x8", mix, vc="6214e9", limit=400),
        W("ho2-philly-11cb48-2x8", "philly", PH, "2x8", mix, vc="11cb48", limit=300),
        W("ho2-itp-cluster05", "itp", ITP, "8x8", mix, vc="cluster05", limit=600),
        W("ho2-itp-cluster09", "itp", ITP, "8x8", mix, vc="cluster09", limit=600),
        W("ho2-syn-4x8-2", "synthetic", "synthetic:300,load=0.5", "4x8", mix),
        W("ho2-syn-2x8-rigid-2", "synthetic", "synthetic:300,load=0.25", "2x8", mix, rigid=True),
    ]


def option_or_exit(option: str, parse):
    """``parse()``; its InputError is one line on stderr naming the script and ``option``, and exit
    code 2 (``by_width.py`` checks its options the same way)."""
    from ringsched.errors import InputError

    try:
        return parse()
    except InputError as e:
        print(f"{Path(sys.argv[0]).name}: {option}: {e}", file=sys.stderr)
        raise SystemExit(2)


def workload_names(text: str | None, known) -> list[str]:
    """The names ``--workloads`` gives (comma-separated), or one error line naming the unknown
    ones (or none given) and exit code 2 (``by_width.py`` reads its ``--workloads`` the same way)."""
    names = (text or "").split(",")
    unknown = [n for n in names if n not in known]
    if unknown or not text:
        print(f"{Path(sys.argv[0]).name}: --workloads: unknown workload(s): {', '.join(unknown) or '(none given)'}",
              file=sys.stderr)
        raise SystemExit(2)
    return names


def checked(a):
    """(workloads, the objective's metrics, policies) of the options, or one error line naming
    the option and exit code 2, before anything runs."""
    from ringsched.experiment.config import parse_estimates
    from ringsched.experiment.suite import objective_metrics
    from ringsched.experiment.workload import resolve_policies
    from ringsched.policies.registry import policy_names

    ws = workloads("all" if a.workloads else a.set)
    if a.workloads:
        names = workload_names(a.workloads, {w.name for w in ws})
        ws = [w for w in ws if w.name in names]
    metrics = [m for m, _ in option_or_exit("--objective", lambda: objective_metrics(a.objective))]
    option_or_exit("--estimates", lambda: parse_estimates(a.estimates))
    # (resolve_policies: "a:k=v,k2=v2,b" is two policies, each checked)
    pols = option_or_exit("--policies", lambda: resolve_policies(a.policies)) if a.policies else policy_names()
    return ws, metrics, pols


def main() -> None:
    import ringsched.policies  # noqa: F401 - registers every policy
    from ringsched.experiment.suite import Cell, ratios, run_suite, skipped_workloads

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--policies", default=None, help="comma-separated (default: every policy)")
    ap.add_argument("--target", default="gadget")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--estimates", default="exact", help="the duration knowledge (docs/metrics.md)")
    ap.add_argument("--workloads", default=None, help="comma-separated names of either list (default: every one of --set)")
    ap.add_argument("--set", choices=("first", "second"), default="first", help="which held-out list")
    ap.add_argument("--objective", default="jct", help="what the runs are judged by (docs/objectives.md)")
    a = ap.parse_args()
    ws, metrics, pols = checked(a)
    for w, why in skipped_workloads(ws):
        print(f"skipped {w.name}: {why}")
    skipped = {w.name for w, _ in skipped_workloads(ws)}
    cells = [Cell(w, s, a.estimates, p, objective=a.objective) for w in ws if w.name not in skipped
             for s in (0, 1) for p in pols]
    run = run_suite(cells, workers=a.workers)
    a.out.mkdir(parents=True, exist_ok=True)
    run.cells.to_parquet(a.out / "cells.parquet")
    if metrics:
        print(run.cells.groupby(["workload", "policy"])[metrics].mean().round(4).to_string())
    elif len(set(pols)) > 1:
        r = ratios(run.cells, a.target)
        print(r[["workload", "total_utility_ratio", "total_utility_best", "mean_jct_s_ratio", "mean_jct_s_best"]]
              .round(3).to_string(index=False))


if __name__ == "__main__":
    main()
