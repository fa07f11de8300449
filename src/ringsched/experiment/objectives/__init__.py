"""Objectives: what a run is judged by and what GADGET optimises (docs/objectives.md).

``registry.py`` holds the ``Objective`` base and the ``--objective`` parser, ``builtin.py``
the five built-in objectives and ``curves.py`` the learning curves the convergence objective
reads. An objective sets a policy's options only where the policy declares them (fields of its
``Params``), so no objective names a policy."""

from ringsched.experiment.objectives.registry import (Objective, objective_class, objective_names,
                                                      parse_objective, register_objective)

__all__ = ["Objective", "objective_class", "objective_names", "parse_objective", "register_objective"]
