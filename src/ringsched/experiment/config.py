"""Experiments as files: the fully resolved settings of a ``compare`` or a ``sweep``.

A config is what ``--config EXPERIMENT.yaml`` reads and what every run writes back into its
output folder as ``experiment.yaml`` (policies resolved, objective canonical), so that
``ringsched compare --config DIR/experiment.yaml`` runs the same experiment again. Validation
is pydantic's; a bad file is one ``InputError`` line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS

_STRICT = ConfigDict(extra="forbid", frozen=True)
# the numbers of a config obey the bounds of the command-line options they stand for
_SLOT = LIMITS["slot_s"].pydantic(float)
_RESTART = LIMITS["restart_s"].pydantic(float)
_CKPT = LIMITS["checkpoint_s"].pydantic(float)
_MTBF = LIMITS["mtbf_h"].pydantic(float)
_MTTR = LIMITS["mttr_h"].pydantic(float)
_HORIZON = LIMITS["horizon_s"].pydantic(float)
_LOAD = LIMITS["load_factor"].pydantic(float)
_SEED = LIMITS["seed"].pydantic(int)


def _field_error(call, value: str):
    """``call(value)``; its InputError becomes this field's error (a ValueError), so a config
    file's bad value is named with the file, the line and the field."""
    try:
        return call(value)
    except InputError as e:
        raise ValueError(e.message) from None


def _trace_spec(spec: str) -> str:
    """A trace spec, checked without loading the trace (format, count, options, path given)."""
    from ringsched.traces import check_spec

    _field_error(check_spec, spec)
    return spec


def _window(text: str) -> str:
    from ringsched.traces import parse_window

    _field_error(parse_window, text)
    return text


def _policy_spec(spec: str) -> str:
    """One policy spec of a list (or ``all``), checked as ``--policies`` checks it."""
    from ringsched.experiment.workload import resolve_policies

    _field_error(lambda s: resolve_policies([s]), spec)
    return spec


_POLICY = Annotated[str, AfterValidator(_policy_spec)]


class TraceSettings(BaseModel):
    """Which jobs: the trace and its filters (docs/traces.md)."""

    model_config = _STRICT
    trace: Annotated[str, AfterValidator(_trace_spec)] = "synthetic:2000"
    vc: str | None = None
    window: Annotated[str, AfterValidator(_window)] | None = None  # START:END, seconds from the trace's start
    limit: LIMITS["jobs"].pydantic(int) | None = None
    rigid: bool = False
    skip_bad_rows: bool = False


def parse_estimates(text: str):
    """An ``--estimates`` setting (exact, lognormal:SIGMA, user:FACTOR); one-line error if wrong."""
    from ringsched.simulator.estimates import parse_estimates as parse

    return parse(text)


class SimulatorSettings(BaseModel):
    """The simulator's options (``SimConfig`` less the seed)."""

    model_config = _STRICT
    slot_s: _SLOT = 300.0
    restart_s: _RESTART = 30.0
    checkpoint_s: _CKPT = 1800.0
    mtbf_h: _MTBF | None = None
    mttr_h: _MTTR = 2.0
    contention: bool = False
    horizon_s: _HORIZON | None = None
    estimates: str = "exact"  # what policies know of each job's work (simulator/estimates.py)
    slotted: bool = False  # decide only at slot boundaries (default: also at arrivals and completions)

    @field_validator("estimates")
    @classmethod
    def _known_estimates(cls, text: str) -> str:
        from ringsched.simulator.estimates import estimates_from_text

        return estimates_from_text(text).spec()  # a ValueError becomes the config's one-line error

    def sim_config(self, seed: int):
        from ringsched.simulator import SimConfig

        try:
            fields = self.model_dump()
            return SimConfig(seed=int(seed), decide_at_events=not fields.pop("slotted"), **fields)
        except ValueError as e:
            raise InputError(str(e), field="options") from None

    def describe(self) -> str:
        parts = [f"slot {self.slot_s:g} s", f"restart {self.restart_s:g} s", f"checkpoint {self.checkpoint_s:g} s"]
        parts.append(f"failures MTBF {self.mtbf_h:g} h, MTTR {self.mttr_h:g} h" if self.mtbf_h else "no failures")
        if self.contention:
            parts.append("network contention")
        if self.horizon_s is not None:
            parts.append(f"horizon {self.horizon_s:g} s")
        if self.slotted:
            parts.append("decisions at slot boundaries only")
        if self.estimates != "exact":
            parts.append(f"estimates {self.estimates}")
        return ", ".join(parts)


def _cluster_spec(spec: str) -> str:
    """A cluster spec that ``load_cluster`` reads, as ``--cluster`` reads it."""
    from ringsched.cluster.model import load_cluster

    _field_error(load_cluster, spec)
    return spec


def _objective_spec(text: str) -> str:
    """An objective's canonical spec (its name and every parameter: what the outputs record);
    a bad one is this field's error."""
    from ringsched.experiment.objectives import parse_objective

    return _field_error(lambda t: parse_objective(t).spec(), text)


class CompareConfig(BaseModel):
    """Every policy on one workload (trace, cluster, load, seed)."""

    model_config = _STRICT
    kind: Literal["compare"] = "compare"
    trace: TraceSettings = TraceSettings()
    cluster: str = "16x8"
    load: _LOAD = 1.0  # arrival-rate factor: arrival times divided by it
    seed: _SEED = 0
    policies: list[_POLICY] = Field(min_length=1)
    objective: str = Field("jct", validate_default=True)
    profiles: dict[str, dict] = {}  # model -> a `ringsched model fit` document (experiment/profiles.py)
    gpu_profiles: list[str] = []  # folders DIR/<gpu type>/<model>.json (--gpu-profiles; docs/catalogue.md)
    simulator: SimulatorSettings = SimulatorSettings()

    _cluster = field_validator("cluster")(classmethod(lambda cls, v: _cluster_spec(v)))
    _objective = field_validator("objective")(classmethod(lambda cls, v: _objective_spec(v)))


class SweepConfig(BaseModel):
    """Every policy over clusters x loads x seeds; intervals across seeds, paired against a baseline."""

    model_config = _STRICT
    kind: Literal["sweep"] = "sweep"
    trace: TraceSettings = TraceSettings()
    clusters: list[str] = Field(["16x8"], min_length=1)
    loads: list[_LOAD] = Field([0.5, 1.0, 2.0], min_length=1)
    seeds: list[_SEED] = Field([0, 1, 2], min_length=1, max_length=int(LIMITS["seeds_count"].hi))
    policies: list[_POLICY] = Field(min_length=1)
    objective: str = Field("jct", validate_default=True)
    baseline: str | None = None  # the policy paired differences are taken against (default: the first)
    confidence: float = Field(0.95, ge=0.5, le=0.999)
    engine: Literal["local", "ray"] = "local"
    address: str | None = None
    profiles: dict[str, dict] = {}
    simulator: SimulatorSettings = SimulatorSettings()

    _clusters = field_validator("clusters")(classmethod(lambda cls, v: [_cluster_spec(c) for c in v]))
    _objective = field_validator("objective")(classmethod(lambda cls, v: _objective_spec(v)))


def _first_error(e: ValidationError) -> tuple[str, str]:
    err = e.errors()[0]
    return ".".join(str(p) for p in err["loc"]) or "config", str(err["msg"]).removeprefix("Value error, ")


def load_config(path: Path, kind: type[BaseModel]) -> BaseModel:
    """The YAML file ``path`` validated as ``kind`` (CompareConfig or SweepConfig); an error
    names the file, the line and the field (the YAML rules of ``validation.yaml_doc``)."""
    from ringsched.validation.pydantic_errors import input_error
    from ringsched.validation.yaml_doc import read_yaml

    doc = read_yaml(path)
    if not isinstance(doc.value, dict):
        raise InputError("an experiment file is a mapping of settings", file=str(path), row=doc.line_of(()))
    try:
        return kind.model_validate(doc.value)
    except ValidationError as e:
        raise input_error(e, doc) from None


def dump_config(config: BaseModel) -> str:
    """The config as YAML, keys in declaration order (byte-identical for equal configs)."""
    from ringsched.validation.yaml_doc import dump_yaml

    return dump_yaml(config.model_dump(mode="json"))


def with_overrides(config: BaseModel, overrides: dict) -> BaseModel:
    """``config`` with ``overrides`` ({"trace.vc": "x", "seed": 1, ...}) applied and validated."""
    data = config.model_dump()
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = data
        for p in parents:
            node = node[p]
        node[leaf] = value
    try:
        return type(config).model_validate(data)
    except ValidationError as e:
        where, msg = _first_error(e)
        raise InputError(msg, field=where) from None


def build(kind: type[BaseModel], **values) -> BaseModel:
    """``kind(**values)``, a validation error turned into one InputError line naming the field."""
    try:
        return kind(**values)
    except ValidationError as e:
        where, msg = _first_error(e)
        raise InputError(msg, field=where) from None
