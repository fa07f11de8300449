"""Objectives: utilities of a job's completion time (design brief, section 3), and the
``--objective`` registry (``objectives/registry.py``, docs/objectives.md)."""


def objective_names() -> list[str]:
    from ringsched.objectives.registry import objective_names as names

    return names()


def parse_objective(text):
    from ringsched.objectives.registry import parse_objective as parse

    return parse(text)
