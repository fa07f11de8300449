"""One run: a (workload, policy, objective) in the simulator. Every command and the Python API
run a policy through ``run_one``, so an objective acts the same way everywhere."""

from __future__ import annotations

import dataclasses

from ringsched.experiment.objectives import Objective, parse_objective


def policy_run_options(objective: Objective, policy: str, cluster, config) -> tuple[str, dict]:
    """The policy's name and its options: the objective's (only those the policy declares),
    then the spec's own (``gadget:pack_slack=0`` wins over the objective)."""
    from ringsched.policies.registry import parse_policy, policy_class

    name, spec_opts = parse_policy(policy)
    opts = dict(objective.policy_options(policy_class(name), cluster, config))
    opts.update(spec_opts)
    return name, opts


def run_one(objective: Objective | str, jobs, cluster, policy: str, config=None, *, progress=None,
            policy_options: dict | None = None, profiles: dict[str, dict] | None = None,
            decide_as: Objective | str | None = None):
    """Run ``policy`` on ``jobs`` under ``objective``: the SimResult, with the objective's fields
    in its summary (``objective`` = the canonical spec; ``policy`` = the spec as given).
    ``profiles``: fitted step-time parameters per model (experiment/profiles.py).
    ``decide_as``: the policy decides as under that objective (its jobs' utilities, its
    options) while the run is judged by ``objective`` (its utilities, its stop rule where it
    stops every policy, its report): how the suite measures what an objective changes against
    the same policy deciding for JCT (summary ``decided_as``)."""
    from ringsched.experiment.profiles import speed_model
    from ringsched.experiment.plugins import load_policy_plugins
    from ringsched.policies import make_policy
    from ringsched.simulator import SimConfig, Simulator

    load_policy_plugins()  # a Ray worker starts without them
    obj = parse_objective(objective) if isinstance(objective, str) else objective
    cfg = config or SimConfig()
    speed = speed_model(cluster, profiles)
    decider = obj if decide_as is None else (parse_objective(decide_as) if isinstance(decide_as, str) else decide_as)
    prepared = obj.prepare_jobs(list(jobs), cluster, speed)
    seen = prepared if decider is obj else decider.prepare_jobs(list(jobs), cluster, speed)
    name, opts = policy_run_options(decider, policy, cluster, cfg)
    opts.update(policy_options or {})
    rule = obj.stop_rule(opts)
    if rule is not None:
        cfg = dataclasses.replace(cfg, stop_rule=rule)
    result = Simulator(seen, cluster, make_policy(name, **opts), cfg, progress=progress, speed=speed).run()
    if seen is not prepared:  # judged by the objective's own utilities
        from ringsched.experiment.objectives.builtin import revalue

        revalue(result, {j.job_id: j.utility for j in prepared})
    obj.report(result, cfg)
    from ringsched.policies.registry import parse_policy

    if parse_policy(policy)[1]:  # the spec names the variant (gadget:admission=strict), also in summaries
        result.summary["policy"] = policy.strip()
    result.summary["objective"] = obj.spec()
    result.summary["decided_as"] = decider.spec()
    return result

