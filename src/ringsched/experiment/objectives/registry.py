"""Objectives: what a run is judged by and what GADGET optimises (docs/objectives.md).

An objective is selected by ``--objective NAME[,key=value...]`` (e.g. ``deadline,slack=2``).
Each one is a subclass of ``Objective`` registered by name, with a frozen dataclass of
documented parameters (``Params``). It acts at three points of a run, for every policy:

* ``prepare_jobs``: the jobs' utilities (e.g. deadlines) before the run;
* ``stop_rule`` / ``policy_options``: a stop rule the simulator evaluates at its decision
  boundaries (convergence; for the policies whose options take it) and options of the
  policy (GADGET's energy prices);
* ``report``: summary fields (and job-table columns) after the run; ``metrics`` names the
  summary fields the objective is judged by, each with its better direction (the suite's
  ``--objective`` tables), and ``details`` the summary fields the suite keeps beside them in
  its cells, to read, not judged by.

``ringsched.experiment.run.run_one`` is the one way a policy runs under an objective.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar

from ringsched.errors import InputError
from ringsched.specs import coerce

_REGISTRY: dict[str, type["Objective"]] = {}


def register_objective(cls: type["Objective"]) -> type["Objective"]:
    _REGISTRY[cls.name] = cls
    return cls


@dataclasses.dataclass(frozen=True)
class NoParams:
    pass


class Objective:
    """Base: the default JCT objective's behaviour (nothing changes)."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams
    summary: ClassVar[str] = ""
    metrics: ClassVar[tuple[tuple[str, str], ...]] = ()  # (summary field, "max" | "min")
    details: ClassVar[tuple[str, ...]] = ()  # summary fields kept in the suite's cells, not judged

    def __init__(self, params=None):
        self.p = params if params is not None else self.Params()

    # --- hooks
    def prepare_jobs(self, jobs: list, cluster, speed) -> list:
        return list(jobs)

    def stop_rule(self, policy_options: dict) -> Callable | None:
        """The world's stop rule for a policy run with ``policy_options`` (None: no early stop)."""
        return None

    def policy_options(self, policy_cls: type, cluster, config) -> dict:
        return {}

    def report(self, result, config) -> None:
        """Add summary fields (``result.summary``) and job-table columns (``result.jobs``)."""

    # --- description
    def params_dict(self) -> dict:
        return dataclasses.asdict(self.p)

    def spec(self) -> str:
        """Canonical text: the name and every parameter (``jct,weigh=count``)."""
        parts = [self.name] + [f"{k}={_fmt(v)}" for k, v in self.params_dict().items()]
        return ",".join(parts)


def declares(policy_cls: type, *options: str) -> bool:
    """Whether the policy declares every one of ``options`` as a field of its ``Params``: how an
    objective learns what a policy can take, without naming the policy."""
    params = getattr(policy_cls, "Params", None)
    if params is None or not dataclasses.is_dataclass(params):
        return False
    names = {f.name for f in dataclasses.fields(params)}
    return all(o in names for o in options)


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def objective_names() -> list[str]:
    _load_builtins()
    return list(_REGISTRY)


def objective_class(name: str) -> type[Objective]:
    _load_builtins()
    cls = _REGISTRY.get(name)
    if cls is None:
        raise InputError(f"unknown objective {name!r}; known: {', '.join(_REGISTRY)}", field="objective")
    return cls


def _load_builtins() -> None:
    if not _REGISTRY:
        import ringsched.experiment.objectives.builtin  # noqa: F401  (registers the objectives)


def parse_objective(text: str | None) -> Objective:
    """``NAME[,key=value...]`` -> an Objective (InputError, one line, for anything wrong)."""
    text = (text or "jct").strip()
    name, *rest = [p.strip() for p in text.split(",")]
    cls = objective_class(name)
    fields = {f.name: f for f in dataclasses.fields(cls.Params)}
    kw = {}
    for item in rest:
        if not item:
            continue
        key, eq, val = item.partition("=")
        key = key.strip()
        if not eq or key not in fields:
            known = ", ".join(fields) or "none"
            raise InputError(f"objective {name}: unknown parameter {item!r}; parameters: {known}", field="objective")
        if key in kw:
            raise InputError(f"objective {name}: parameter {key!r} given twice", field="objective")
        kw[key] = coerce(val.strip(), fields[key].type, key=key, owner=f"objective {name}", field="objective")
    try:
        params = cls.Params(**kw)
    except (ValueError, TypeError) as e:
        raise InputError(f"objective {name}: {e}", field="objective") from None
    return cls(params)
