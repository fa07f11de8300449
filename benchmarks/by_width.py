"""Where each policy's utility and JCT go, by job width (docs/suite-history.md, thirty-second round).

A policy can win one width's jobs and lose another's (packing keeps servers whole for wide rings
at the narrow jobs' expense); the suite's totals hide that. This runs the cells and prints, per
requested width and policy, the utility summed over the runs, the mean JCT and the restarts,
then each policy's totals and their ratio to the first policy's: per workload, and pooled over
the workloads when there are several. Under an objective that sets deadlines (``--objective
deadline``) it counts the deadlines met too, by width: where a policy's deadlines come from.

    python benchmarks/by_width.py --workloads many-short --seeds 0,1,2 --policies gadget,gadget:pack_slack=0
    python benchmarks/by_width.py --trace synthetic:400,load=1.0 --trace synthetic:400,load=1.5 --cluster 8x4 \\
        --rigid both --contention --seeds 0,1,2 --policies gadget,gadget:pack_slack=0

``--workloads`` takes the suite's and ``benchmarks/heldout.py``'s names; ``--trace`` (repeatable)
builds workloads from trace specs on ``--cluster`` instead, rigid, elastic or both. The world is
the suite's (``experiment.suite.cell_world``: decisions at events, arrivals moved from seed 1 on),
with NIC contention on under ``--contention``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def width_jobs(cell, contention: bool):
    """The per-job table of one cell (a module-level function: the executor pickles it)."""
    from ringsched.experiment.run import run_one
    from ringsched.experiment.suite import cell_world

    jobs, cluster, cfg = cell_world(cell)
    cfg = dataclasses.replace(cfg, contention=contention)
    j = run_one(cell.objective, jobs, cluster, cell.policy, cfg).jobs
    out = j[["requested_gpus", "utility", "jct_s", "restarts"]].assign(
        workload=cell.workload.name, seed=cell.seed, policy=cell.policy)
    if "deadline_met" in j:  # (an objective that sets deadlines: each job's, from its report)
        out["deadline_met"] = j.deadline_met.astype(int)
    return out


def chosen_workloads(a):
    """The workloads the options name (suite or held-out names, or traces on one cluster)."""
    from ringsched.experiment.workloads import WORKLOADS, SuiteWorkload

    if a.trace:
        rigid = {"no": [False], "yes": [True], "both": [False, True]}[a.rigid]
        return [SuiteWorkload(f"{t} on {a.cluster}{' rigid' if r else ''}", "trace", t, a.cluster, "by_width.py",
                              rigid=r) for t in a.trace for r in rigid]
    import heldout

    known = {w.name: w for w in (*WORKLOADS, *heldout.workloads())}
    return [known[n] for n in heldout.workload_names(a.workloads, known)]


def tables(jobs):
    """(per width and policy: jobs, utility summed, mean JCT, restarts, deadlines met where the
    jobs have them; per policy: those totals and their ratios to the first policy's), policies in
    the order they came."""
    pols = list(dict.fromkeys(jobs.policy))
    sums = dict(utility=("utility", "sum"), mean_jct_s=("jct_s", "mean"))
    if "deadline_met" in jobs:
        sums["deadline_met"] = ("deadline_met", "sum")
    g = jobs.groupby(["requested_gpus", "policy"]).agg(jobs=("utility", "size"), **sums, restarts=("restarts", "sum"))
    wide = g.unstack("policy").reindex(columns=pols, level="policy")
    tot = jobs.groupby("policy").agg(**sums).reindex(pols)
    for col in sums:
        tot[f"{col.removesuffix('_s')}_ratio"] = tot[col] / tot[col].iloc[0]
    return wide, tot


def by_workload(jobs) -> list[tuple]:
    """``tables`` per workload, in the order they came, then pooled when there are several."""
    groups = [(name, g) for name, g in jobs.groupby("workload", sort=False)]
    if len(groups) > 1:
        groups.append(("every workload above, pooled", jobs))
    return [(name, *tables(g)) for name, g in groups]


def checked(a):
    """(workloads, seeds, policies) of the options, each workload's world built once, or one
    error line naming the option or workload and exit code 2, before anything runs."""
    from heldout import option_or_exit

    from ringsched.experiment.config import parse_estimates
    from ringsched.experiment.objectives import parse_objective
    from ringsched.experiment.suite import Cell, cell_world
    from ringsched.experiment.workload import resolve_policies

    pols = option_or_exit("--policies", lambda: resolve_policies(a.policies))
    if not all(s.strip().isdigit() for s in a.seeds.split(",")):
        print(f"by_width.py: --seeds: not a comma-separated list of seeds: {a.seeds!r}", file=sys.stderr)
        raise SystemExit(2)
    seeds = [int(s) for s in a.seeds.split(",")]
    option_or_exit("--estimates", lambda: parse_estimates(a.estimates))
    option_or_exit("--objective", lambda: parse_objective(a.objective))
    workloads = chosen_workloads(a)
    for w in workloads:  # (a bad trace or cluster)
        option_or_exit(w.name, lambda: cell_world(Cell(w, seeds[0], a.estimates, pols[0])))
    return workloads, seeds, pols


def cells_of(a, workloads, seeds, pols) -> list:
    """Every workload x seed x policy, under the options' estimates and objective."""
    from ringsched.experiment.suite import Cell

    return [Cell(w, s, a.estimates, p, objective=a.objective) for w in workloads for s in seeds for p in pols]


def main() -> None:
    import pandas as pd

    from ringsched.experiment.executors import Task, run_parallel

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=None, help="comma-separated suite or held-out names")
    ap.add_argument("--trace", action="append", default=[], help="a trace spec (repeatable), on --cluster")
    ap.add_argument("--cluster", default="4x8")
    ap.add_argument("--rigid", choices=("no", "yes", "both"), default="no")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--policies", default="gadget,gadget:pack_slack=0")
    ap.add_argument("--estimates", default="exact")
    ap.add_argument("--objective", default="jct", help="what the runs are judged and decided by (docs/objectives.md)")
    ap.add_argument("--contention", action="store_true", help="crossing rings share their NICs (docs/metrics.md)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    workloads, seeds, pols = checked(a)
    cells = cells_of(a, workloads, seeds, pols)
    tasks = [Task(f"{c.workload.name} seed {c.seed} {c.policy}", width_jobs, (c, a.contention)) for c in cells]
    out = run_parallel(tasks, workers=a.workers, per_task_bars=False, label="cells")  # (it prints failed cells)
    if not out.results:
        raise SystemExit(1)
    jobs = pd.concat([out.results[t.key] for t in tasks if t.key in out.results], ignore_index=True)
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        for name, wide, tot in by_workload(jobs):
            print(f"== {name}\n{wide.round(1).to_string()}\n\n{tot.round(4).to_string()}\n")
    raise SystemExit(130 if out.interrupted else 1 if out.errors else 0)


if __name__ == "__main__":
    main()
