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
            policy_options: dict | None = None, profiles: dict[str, dict] | None = None):
    """Run ``policy`` on ``jobs`` under ``objective``: the SimResult, with the objective's fields
    in its summary (``objective`` = the canonical spec; ``policy`` = the spec as given).
    ``profiles``: fitted step-time parameters per model (experiment/profiles.py)."""
    from ringsched.experiment.profiles import speed_model
    from ringsched.experiment.plugins import load_policy_plugins
    from ringsched.policies import make_policy
    from ringsched.simulator import SimConfig, Simulator

    load_policy_plugins()  # a Ray worker starts without them
    obj = parse_objective(objective) if isinstance(objective, str) else objective
    cfg = config or SimConfig()
    speed = speed_model(cluster, profiles)
    prepared = obj.prepare_jobs(list(jobs), cluster, speed)
    rule = obj.stop_rule()
    if rule is not None:
        cfg = dataclasses.replace(cfg, stop_rule=rule)
    name, opts = policy_run_options(obj, policy, cluster, cfg)
    opts.update(policy_options or {})
    result = Simulator(prepared, cluster, make_policy(name, **opts), cfg, progress=progress, speed=speed).run()
    obj.report(result, cfg)
    from ringsched.policies.registry import parse_policy

    if parse_policy(policy)[1]:  # the spec names the variant (gadget:admission=strict), also in summaries
        result.summary["policy"] = policy.strip()
    result.summary["objective"] = obj.spec()
    return result
