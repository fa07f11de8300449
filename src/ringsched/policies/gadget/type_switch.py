"""Plans that change GPU type once (``type_switch``; docs/theory.md, section 11).

The trace-mode search (``search.py``) plans one worker count on the greedy embedding of each
type's servers. A plan kept on one type from start to end waits for the fast type while it is
committed, or runs slowly on the slow type after the fast one frees up. A plan that runs on
type a from its start step s until step m and on type b from m until done can finish sooner
at a price; the world moves the job at m and charges its checkpoint-restart
(``SimConfig.restart_s``: no progress for restart_s seconds, the GPUs held), so the first step
on b advances only ``keep`` = 1 - restart_s / step length of its progress, and costs the whole
step. For every start s and switch step m of an ordered pair of types (a, b) the kernel gives
the plan's completion step, finish time and cost with prefix sums and a binary search; the
best switch step of each start is kept, so ``plan.choose`` (largest payoff, latest start
paying enough, earliest finish among near ties) reads the pair's plans as it reads a one-type
search's. One change per plan: the set searched is every (s, m, a, b), exactly; plans with
more changes are not in it (a re-plan can change again)."""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

from ringsched.policies.gadget.kernels import prefix_sums

_jit = numba.njit(cache=True, nogil=True)


@_jit
def switch_plans(cost_a, prog_a, cost_b, prog_b, remaining, starts_s, step_len_s, keep):
    """(valid, completion step, finish time, cost), each (starts, switch steps): the plan on type
    a in steps s..m-1 and on type b from step m until ``remaining`` samples are done, the first
    step on b advancing ``keep`` of its progress (it restarts first: a plan done in that step
    finishes after the restart and then at b's speed). Only real changes are valid: the work is not
    done on a before m, and every step from s to the completion step can run."""
    n = cost_a.size
    Pa, Ca, Ba = prefix_sums(cost_a, prog_a)
    Pb, Cb, Bb = prefix_sums(cost_b, prog_b)
    valid = np.zeros((n, n), dtype=np.bool_)
    end = np.zeros((n, n), dtype=np.int64)
    finish = np.zeros((n, n))
    total = np.zeros((n, n))
    need = remaining * (1 - 1e-12)
    for s in range(n):
        for m in range(s + 1, n):
            if Ba[m] - Ba[s] != 0:
                break  # a step on a that cannot run: no later switch either
            done_a = Pa[m] - Pa[s]
            if done_a >= need:
                break  # done on a before the change: a one-type plan
            if Bb[m + 1] - Bb[m] != 0:
                continue  # b cannot run in the switch step
            rem = remaining - done_a
            first = prog_b[m] * keep
            lost = 0.0  # share of the completion step spent restarting
            if first >= rem * (1 - 1e-12):
                e, before, pe, lost = m, 0.0, prog_b[m], 1.0 - keep
            else:
                i = np.searchsorted(Pb, rem * (1 - 1e-12) - first + Pb[m + 1])  # (side left)
                if i > n:
                    continue  # not done in the window
                e = i - 1
                if Bb[e + 1] - Bb[m] != 0:
                    continue  # a step on b that cannot run lies in between
                before, pe = first + Pb[e] - Pb[m + 1], prog_b[e]
            frac = min(max(lost + (rem - before) / pe, 0.0), 1.0)
            valid[s, m] = True
            end[s, m] = e
            finish[s, m] = starts_s[e] + frac * step_len_s
            total[s, m] = Ca[m] - Ca[s] + Cb[e + 1] - Cb[m]
    return valid, end, finish, total


def switch_payoffs(a, b, remaining: float, win, keep: float, utility, arrival_s: float):
    """The payoffs of the plans from type a to type b by start step (``plan.contiguous_payoffs``'
    tuple, for ``plan.choose``), each start with its best switch step, and those switch steps;
    None when no such plan finishes in the window. ``a`` and ``b`` are (cost, progress) per step."""
    valid, e, finish, total = switch_plans(a[0], a[1], b[0], b[1], float(remaining), win.starts_s,
                                           float(win.step_len_s), float(keep))
    if not valid.any():
        return None
    pay = np.where(valid, np.asarray(utility(finish - arrival_s), dtype=float) - total, -np.inf)
    m = np.argmax(pay, axis=1)  # (ties: the earliest change)
    rows = np.arange(pay.shape[0])
    return (pay[rows, m], e[rows, m], finish[rows, m], total[rows, m]), m


class Switched:
    """The embedding of a plan that changes type at step ``m``: ``first``'s before, ``then``'s
    from m on (the ``StepEmbeddings`` interface ``search._plan_of`` reads)."""

    constant = False

    def __init__(self, first, then, m: int):
        self.first, self.then, self.m = first, then, m

    def counts(self, step: int, num_servers: int) -> np.ndarray:
        return (self.first if step < self.m else self.then).counts(step, num_servers)


def switched_window(win_a, win_b, m: int):
    """The price window of a plan that changes type at step m: a's free resources before, b's
    from m on (so the plan never keeps a's servers past the change)."""
    before = np.arange(win_a.steps) < m
    return dataclasses.replace(win_a, free=np.where(before, win_a.free, win_b.free),
                               bfree=np.where(before, win_a.bfree, win_b.bfree))


class SwitchCandidate:
    """The plans from type a to type b of one worker count, for ``search._plan_of``: at the start
    finally chosen, the embedding and window of its best switch step."""

    one_type = False

    def __init__(self, ea, eb, win_a, win_b, switch_at: np.ndarray):
        self.ea, self.eb, self.win_a, self.win_b, self.switch_at = ea, eb, win_a, win_b, switch_at

    def at(self, start: int):
        m = int(self.switch_at[start])
        return Switched(self.ea, self.eb, m), switched_window(self.win_a, self.win_b, m)
