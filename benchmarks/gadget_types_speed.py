"""What GADGET's options for several GPU types cost in wall time (``type_switch``: plans that
change type once; ``type_upgrade``: idle faster GPUs lent to jobs planned on slower ones).

Runs the suite's two-type workloads (docs/suite.md) with GADGET as it is (both on) and, as
the reference in the same process, with both off, and prints each run's wall time, the ratio,
and the figures, so a reader sees what the time buys. The first run of each pair is preceded
by a warm-up (numba compiles ``type_switch.switch_plans`` once).

    python benchmarks/gadget_types_speed.py [--workloads mixed-syn,mixed-philly-ee9e8c] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

from ringsched.experiment.config import TraceSettings
from ringsched.experiment.run import run_one
from ringsched.experiment.workload import load_workload
from ringsched.experiment.workloads import WORKLOADS, perturb_arrivals
from ringsched.simulator import SimConfig

SPECS = ("gadget:type_switch=false,type_upgrade=false", "gadget")


def run(name: str, seed: int, spec: str) -> tuple[float, dict]:
    w = next(x for x in WORKLOADS if x.name == name)
    trace = TraceSettings(trace=w.spec(), vc=w.vc, window=w.window, limit=w.limit, rigid=w.rigid)
    wl = load_workload(trace, w.cluster_spec(), seed=seed)
    jobs = perturb_arrivals(w.adapt(wl.jobs), seed)
    t0 = time.perf_counter()
    s = run_one("jct", jobs, wl.cluster, spec, SimConfig(seed=seed, estimates="exact")).summary
    return time.perf_counter() - t0, s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="mixed-syn,mixed-philly-ee9e8c")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    names = [n for n in a.workloads.split(",") if n]
    run(names[0], a.seed, SPECS[1])  # warm-up: compile the kernels
    for name in names:
        (t_ref, s_ref), (t, s) = (run(name, a.seed, spec) for spec in SPECS)
        print(f"{name:22s} reference {t_ref:6.2f} s  types {t:6.2f} s  ratio {t / t_ref:5.2f}  "
              f"mean JCT {s_ref['mean_jct_s']:,.0f} -> {s['mean_jct_s']:,.0f} s  "
              f"utility {s_ref['total_utility']:,.1f} -> {s['total_utility']:,.1f}", flush=True)


if __name__ == "__main__":
    main()
