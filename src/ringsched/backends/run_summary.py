"""The summary of a real run, from the controller's state and its journal."""

from __future__ import annotations

import os
import time

from ringsched.backends.controller import TERMINAL
from ringsched.backends.refit import median_abs_pct_error


def _fitted_step_s(speed, a: dict) -> float:
    """The final (refitted) model's step time for a journaled attempt's shape."""
    return speed.step_time_s(a["model"], a["local_bsz"], (a["workers"], a["servers"], a["max_per_server"], 1))


def summarize(ctl) -> dict:
    """What ``ringsched run --json`` prints: per job and overall outcomes, faults, losses, and
    the step-time model's error (predicted at launch vs measured; the final refit in-sample)."""
    t = ctl.now()
    jobs_out = []
    all_pred, all_meas = [], []
    attempts = ctl.journal.attempts()
    for jid, js in sorted(ctl.states.items(), key=lambda kv: kv[1].index):
        j = ctl.jobs[jid]
        rows = [a for a in attempts if a["job_id"] == jid]
        steps = []
        for a in rows:
            pred, meas = a["predicted_step_s"], a["measured_step_s"]
            err = abs(pred / meas - 1.0) if pred and meas else None
            steps.append({"attempt": a["id"], "workers": a["workers"], "servers": a["servers"],
                          "informed": bool(a["informed"]),
                          "placement": a["placement"], "outcome": a["outcome"],
                          "predicted_s": pred, "measured_s": meas, "measured_steps": a["measured_steps"],
                          "error": err})
            if pred and meas:
                all_pred.append(pred)
                all_meas.append(meas)
        measured = [a for a in rows if a["measured_step_s"]]
        refit_pred = [_fitted_step_s(ctl.speed, a) for a in measured]
        lf, ll = ctl.loss_first[jid], ctl.loss_last[jid]
        jobs_out.append({
            "job": jid, "model": j.model, "status": js.status, "error": js.reason if js.status == "failed" else None,
            "reason": js.reason or None, "work_samples": j.work_samples, "done_samples": js.done_samples,
            "restarts": js.restarts, "resizes": ctl.counters[jid]["resizes"], "failures": js.failures,
            "infra_faults": ctl.counters[jid]["infra_faults"],
            "crashes": js.failures - ctl.counters[jid]["infra_faults"],
            "error_class": rows[-1]["fault"] if js.status == "failed" and rows else None,
            "preemptions": js.preemptions, "completions": ctl.counters[jid]["completions"],
            "workers": [s["workers"] for s in steps],
            "jct_s": (js.finish_s - js.job.arrival_s) if js.status == "completed" and js.finish_s is not None else None,
            "loss_first": lf, "loss_last": ll,
            "loss_fell": (ll < lf) if lf is not None and ll is not None else None,
            "step_time": steps,
            "median_step_error": median_abs_pct_error([s["predicted_s"] for s in steps], [s["measured_s"] for s in steps]),
            "median_step_error_refit": median_abs_pct_error(refit_pred, [a["measured_step_s"] for a in measured]),
            "fitted_params": ctl.speed.params(j.model).to_dict(),
        })
    count = lambda s: sum(1 for js in ctl.states.values() if js.status == s)  # noqa: E731
    return {
        "backend": ctl.launcher.name, "policy": ctl.policy.name, "cluster": ctl.cluster_spec,
        "jobs_source": ctl.jobs_source, "slot_s": ctl.cfg.slot_s, "state": str(ctl.journal.dir),
        "wall_s": time.perf_counter() - ctl.wall0, "clock_s": t, "decisions": ctl.decisions,
        "jobs": jobs_out, "completed": count("completed"), "failed": count("failed"),
        "rejected": count("rejected"), "unfinished": sum(1 for js in ctl.states.values() if js.status not in TERMINAL),
        "resizes": sum(c["resizes"] for c in ctl.counters.values()),
        "restarts": sum(js.restarts for js in ctl.states.values()),
        "infra_faults": sum(c["infra_faults"] for c in ctl.counters.values()),
        "median_step_error": median_abs_pct_error(all_pred, all_meas),
        "median_step_error_informed": median_abs_pct_error(
            [a["predicted_step_s"] for a in attempts if a["informed"]],
            [a["measured_step_s"] for a in attempts if a["informed"]]),
        "median_step_error_refit": median_abs_pct_error(
            [_fitted_step_s(ctl.speed, a) for a in attempts if a["measured_step_s"]],
            [a["measured_step_s"] for a in attempts if a["measured_step_s"]]),
        "interrupted": ctl.interrupted,
        "pid": os.getpid(),
    }
