"""Checking a policy's answer: what changes, and that the changes are possible."""

from __future__ import annotations

from ringsched.perfmodel.speed import Placement


class PolicyError(RuntimeError):
    """A policy returned an impossible allocation (a bug in the policy, not bad input)."""


def validated_changes(name: str, new: dict, alloc, active, used, up, gpus,
                      t: float) -> list[tuple[str, Placement, Placement]]:
    """(job, old, new) for every placement of ``new`` that differs from ``alloc`` (the
    running placements of the ``active`` jobs), validated against ``used`` GPUs per server,
    servers ``up`` and their ``gpus``; policy ``name`` is named in the error.

    Unchanged placements were valid when made and failures evict what they break, so only
    the changes need checking: bounds and order per job, then capacity with the changes
    applied to the current usage."""
    n = used.size
    out = []
    for jid, p in new.items():
        old = alloc.get(jid, ())
        if p == old:
            continue
        js = active.get(jid)
        if js is None:
            raise PolicyError(f"{name}: allocation for unknown or inactive job {jid!r} at t={t}")
        if p:
            w = len(p)
            if not js.job.min_workers <= w <= js.job.max_workers:
                raise PolicyError(f"{name}: job {jid} given {w} workers outside "
                                  f"[{js.job.min_workers}, {js.job.max_workers}] at t={t}")
            if p[0] < 0 or p[-1] >= n or (w > 1 and any(a > b for a, b in zip(p, p[1:]))):
                raise PolicyError(f"{name}: job {jid}: placement {p} is not sorted server indices")
        out.append((jid, old, p))
    out.extend((jid, old, ()) for jid, old in alloc.items() if jid not in new)
    if out:
        delta: dict[int, int] = {}
        for _, old, p in out:
            for s_ in old:
                delta[s_] = delta.get(s_, 0) - 1
            for s_ in p:
                delta[s_] = delta.get(s_, 0) + 1
        for s_, d in delta.items():
            if d > 0 and (not up[s_] or used[s_] + d > gpus[s_]):
                cap = int(gpus[s_]) if up[s_] else 0
                raise PolicyError(f"{name}: server {s_} given {int(used[s_] + d)} workers, capacity {cap} at t={t}")
    return out

