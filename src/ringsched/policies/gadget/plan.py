"""The per-job plan searches (the "dual subroutine" of the primal-dual framework).

``best_plan``: work is counted in ``need`` integer units; each step offers options that cost
something and advance some units. A dynamic program over steps x progress gives, for every
step i and option o, the cheapest plan that completes first in step i with o, so the best
payoff max_i u(T_i) - cost_i comes out of one pass. With every configuration as an option it
is exact: the theorem's subroutine (``exact.py``, ``subroutine=exact``; docs/theory.md
section 4); the optimum check's control algorithms use it too.

``contiguous_payoffs`` / ``choose``: the trace-mode search (``search.py``,
``subroutine=contiguous``): for one worker count on one embedding, every plan that runs
without gaps from some step until done; no approximation factor (docs/theory.md section 9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ringsched.policies.gadget import kernels


@dataclass
class PlanChoice:
    step: int  # completion step
    payoff: float
    cost: float
    finish_s: float
    options: list[int]  # option index per step 0..step (-1 = idle)


def best_plan(cost: np.ndarray, units: np.ndarray, real_units: np.ndarray, need: int,
              step_start_s: np.ndarray, step_len_s: float, utility, arrival_s: float) -> PlanChoice | None:
    """``cost``/``units``/``real_units`` are (steps, options); ``utility(jct_s)`` vectorised.

    Returns the plan with the largest payoff (None when no plan finishes in the window)."""
    n, m = cost.shape
    INF = np.inf
    best = np.full(need + 1, INF)
    best[0] = 0.0
    choice = np.full((n, need + 1), -1, dtype=np.int16)
    parent = np.tile(np.arange(need + 1, dtype=np.int32), (n, 1))
    top: PlanChoice | None = None
    top_payoff = -INF
    for i in range(n):
        new = best.copy()
        for o in range(m):
            c, p = cost[i, o], int(units[i, o])
            if not np.isfinite(c) or p <= 0:
                continue
            # completing in this step from q in [need - p, need): candidate payoffs
            lo = max(0, need - p)
            qs = np.arange(lo, need)
            base = best[lo:need]
            fin = np.isfinite(base)
            if fin.any():
                frac = (need - qs[fin]) / max(real_units[i, o], 1e-12)
                t = step_start_s[i] + np.minimum(frac, 1.0) * step_len_s
                pay = np.asarray(utility(t - arrival_s), dtype=float) - (base[fin] + c)
                j = int(np.argmax(pay))
                if pay[j] > top_payoff:
                    top_payoff = float(pay[j])
                    top = (i, o, int(qs[fin][j]), float(base[fin][j] + c), float(t[j]))
            # progress below need: shift by p
            if p < need:
                cand = best[: need - p] + c
                better = cand < new[p:need]
                idx = np.flatnonzero(better) + p
                new[idx] = cand[better]
                choice[i, idx] = o
                parent[i, idx] = idx - p
            # reaching need (kept for later steps' idle continuation is pointless: done)
        best = new
    if top is None:
        return None
    i, o, q, c, t = top
    options = [-1] * (i + 1)
    options[i] = o
    for s in range(i - 1, -1, -1):
        options[s] = int(choice[s, q])
        q = int(parent[s, q])
    return PlanChoice(step=i, payoff=top_payoff, cost=c, finish_s=t, options=options)


@dataclass
class ContiguousChoice:
    start: int  # first step the job runs
    end: int  # step in which it completes
    payoff: float
    cost: float
    finish_s: float


def contiguous_payoffs(cost: np.ndarray, progress: np.ndarray, remaining: float, step_start_s: np.ndarray,
                       step_len_s: float, utility, arrival_s: float) -> tuple | None:
    """The payoff of the plan starting in every step (-inf where none fits) with its completion
    step, finish time and cost, for ``choose``; None when no plan finishes in the window."""
    valid, e, finish, total = kernels.contiguous_plans(cost, progress, float(remaining), step_start_s, float(step_len_s))
    if not valid.any():
        return None
    pay = np.where(valid, np.asarray(utility(finish - arrival_s), dtype=float) - total, -np.inf)
    return pay, e, finish, total


def choose(payoffs: tuple | None, near: float = 0.0, floor: float | None = None) -> ContiguousChoice | None:
    """The plan of ``contiguous_payoffs`` with the largest payoff; or, with ``floor``, the latest
    start still paying at least floor; or, with ``near``, the earliest finish among plans within
    near of the best."""
    if payoffs is None:
        return None
    pay, e, finish, total = payoffs
    i = int(np.argmax(pay))
    if floor is not None:  # the latest start among plans paying at least floor
        ok = np.flatnonzero(pay >= floor)
        if ok.size == 0:
            return None
        i = int(ok[-1])
    elif near > 0:  # among plans within ``near`` of the best payoff, finish earliest
        close = np.flatnonzero(pay >= pay[i] - near)
        i = int(close[np.argmin(finish[close])])
    return ContiguousChoice(i, int(e[i]), float(pay[i]), float(total[i]), float(finish[i]))


def best_contiguous(cost: np.ndarray, progress: np.ndarray, remaining: float, step_start_s: np.ndarray,
                    step_len_s: float, utility, arrival_s: float, near: float = 0.0,
                    floor: float | None = None) -> ContiguousChoice | None:
    """The fast plan search of trace mode: run without gaps from some start step until done.

    ``cost[t]`` and ``progress[t]`` (samples) are those of one worker count in step t (cost inf
    where it does not fit). Every start step is tried at once with prefix sums
    (``kernels.contiguous_plans``), so the search is one O(steps) pass per worker count. Plans
    without gaps are the ones worth having in practice: every gap is a preemption and a
    checkpoint-restart."""
    return choose(contiguous_payoffs(cost, progress, remaining, step_start_s, step_len_s, utility, arrival_s),
                  near, floor)


def uniform_plans(cost: np.ndarray, progress: np.ndarray, remaining: np.ndarray, now_s: float,
                  step_len_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plans of the payoff bounds' relaxations: row r advances ``progress[r]`` samples in
    every step it runs, so the step in which a plan completes is a fixed offset from its start
    and no search is needed. Rows may have their own work and step length (several jobs at
    once). Returns (finish time, cost) of the plan starting in every step, (rows, steps), cost
    inf where it does not fit (``cost`` is inf where a row cannot run). Steps start at
    now_s + i x step_len_s. The work is shaved by 1e-9 so that rounding can only make plans
    finish sooner: the payoffs stay upper bounds of the exact search's."""
    return kernels.uniform_plans(np.asarray(cost, dtype=float), np.asarray(progress, dtype=float),
                                 np.asarray(remaining, dtype=float), float(now_s), np.asarray(step_len_s, dtype=float))


def uniform_row_payoffs(cost: np.ndarray, progress: np.ndarray, remaining: float, now_s: float, step_len_s: float,
                        utility, arrival_s: float, by_s: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The best payoff of each row's ``uniform_plans`` for one job (-inf where none fits): of
    all of them, and of those that finish by ``by_s`` (the same array when ``by_s`` is inf)."""
    m = cost.shape[0]
    finish, c = uniform_plans(cost, progress, np.full(m, remaining), now_s, np.full(m, step_len_s))
    pay = np.asarray(utility(finish - arrival_s), dtype=float) - c
    best = pay.max(axis=1)
    if by_s == np.inf:
        return best, best
    return best, np.where(finish <= by_s, pay, -np.inf).max(axis=1)
