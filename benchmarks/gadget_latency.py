"""GADGET's decision latency on a large cluster (issue 4 target: p99 <= 20 ms per arrival on
512x8 with 500 or more active jobs).

Runs the simulator with GADGET on a synthetic Philly-shaped workload sized to the cluster
(``--load`` of its GPUs) and times every decision. A decision "with arrivals" is one at which
jobs not seen before are offered; it is counted once 500 jobs (``--min-active``) are active.
Prints p50 / p99 / max of those decisions' wall time and, for GADGET, of each arrival's own
offer (the work one arrival costs: the payoff bounds, the price window and the plan search of
its first offer; at most ``max_plans_per_slot`` arrivals are offered per slot, the others wait
for the next), and, as the reference run in
the same process, the decisions of fifo on the same workload (ratio = GADGET / fifo).

    python benchmarks/gadget_latency.py [--cluster 512x8] [--jobs 4000] [--load 0.9] [--hours 12]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ringsched.cli.workload import load_workload
from ringsched.policies import make_policy
from ringsched.simulator import SimConfig, Simulator


class Timed:
    """Wraps a policy: the wall time of every decision, with how many jobs are active and new."""

    def __init__(self, policy):
        self.policy = policy
        self.seen: set[str] = set()
        self.rows: list[tuple[float, int, int]] = []
        self.searches: list[tuple[float, int]] = []  # (seconds, active jobs) of first offers
        self.offered: set[str] = set()
        self.active = 0
        offer = getattr(policy, "offer", None)
        if offer is not None:  # an offer: the payoff bounds, the price window and the plan search
            def timed_offer(js, *args, **kw):
                t0 = time.perf_counter()
                plan = offer(js, *args, **kw)
                if js.job_id not in self.offered:
                    self.offered.add(js.job_id)
                    self.searches.append((time.perf_counter() - t0, self.active))
                return plan
            policy.offer = timed_offer

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def optimize(self, jobs, nodes, previous_allocations):
        new = sum(1 for js in jobs if js.job_id not in self.seen)
        self.active = len(jobs)
        t0 = time.perf_counter()
        out = self.policy.optimize(jobs, nodes, previous_allocations)
        self.rows.append((time.perf_counter() - t0, len(jobs), new))
        self.seen.update(js.job_id for js in jobs)
        return out


def measure(name: str, wl, cfg, min_active: int) -> dict:
    t = Timed(make_policy(name))
    t0 = time.perf_counter()
    Simulator(wl.jobs, wl.cluster, t, cfg).run()
    wall = time.perf_counter() - t0
    rows = np.array(t.rows) if t.rows else np.zeros((0, 3))
    sel = rows[(rows[:, 2] > 0) & (rows[:, 1] >= min_active)] if len(rows) else rows
    ms = sel[:, 0] * 1e3
    per = ms / np.maximum(sel[:, 2], 1)
    q = (lambda a, p: float(np.percentile(a, p)) if a.size else float("nan"))
    srch = np.array([t for t, n in t.searches if n >= min_active]) * 1e3
    return {"policy": name, "wall_s": wall, "decisions": len(rows), "counted": int(len(sel)),
            "max_active": int(rows[:, 1].max()) if len(rows) else 0,
            "p50_ms": q(ms, 50), "p99_ms": q(ms, 99), "max_ms": float(ms.max()) if ms.size else float("nan"),
            "p99_per_arrival_ms": q(per, 99), "searches": int(srch.size), "search_p50_ms": q(srch, 50),
            "search_p99_ms": q(srch, 99)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="512x8")
    ap.add_argument("--jobs", type=int, default=4000)
    ap.add_argument("--load", type=float, default=0.9, help="offered load, share of the cluster's GPUs")
    ap.add_argument("--hours", type=float, default=12.0, help="simulated hours (the run stops there)")
    ap.add_argument("--min-active", type=int, default=500)
    a = ap.parse_args()
    from ringsched.cluster.model import parse_spec

    gpus = parse_spec(a.cluster).total_gpus
    trace = f"synthetic:{a.jobs},load={a.load * gpus / 128:g}"  # synthetic's load is per 128 GPUs
    wl = load_workload(trace, a.cluster, vc=None, window=None, limit=None, seed=0, rigid=False)
    cfg = SimConfig(horizon_s=a.hours * 3600.0)
    print(f"{trace} on {wl.cluster.describe()}, {a.hours:g} simulated hours; decisions with arrivals "
          f"and >= {a.min_active} active jobs")
    ref = measure("fifo", wl, cfg, a.min_active)
    g = measure("gadget", wl, cfg, a.min_active)
    for r in (ref, g):
        print(f"  {r['policy']:7s} wall {r['wall_s']:7.1f} s  decisions {r['decisions']:6d}  counted {r['counted']:5d}  "
              f"max active {r['max_active']:5d}  p50 {r['p50_ms']:8.2f} ms  p99 {r['p99_ms']:8.2f} ms  "
              f"max {r['max_ms']:8.2f} ms  p99/arrival {r['p99_per_arrival_ms']:8.2f} ms")
    print(f"  gadget: {g['searches']} arrivals offered with >= {a.min_active} active: offer (bounds + search) p50 "
          f"{g['search_p50_ms']:.2f} ms, p99 {g['search_p99_ms']:.2f} ms")
    print(f"  GADGET / fifo decision p99: {g['p99_ms'] / ref['p99_ms']:.1f}x;  arrival search p99 / 20 ms target: "
          f"{g['search_p99_ms'] / 20:.2f}")


if __name__ == "__main__":
    main()
