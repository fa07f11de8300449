"""Jobs for real execution: a YAML file of entries (validated with pydantic), or ``demo:N``.

A jobs file is a mapping with a ``jobs`` list (or just the list)::

    jobs:
      - name: digits                       # unique; letters, digits, _ . -
        entry: my_train:main               # module:function taking a TrainContext
        batch: 32                          # per-worker batch (samples per worker per step)
        work: {samples: 20000}             # or {epochs: 3, epoch_samples: 1797}
        min_workers: 1                     # worker bounds (default 1..1: rigid)
        max_workers: 4
        utility: {kind: linear, value: 10, slope_per_s: 0.01}   # optional
        arrival_s: 0                       # optional: seconds after the run starts
        seed: 0                            # optional: model init and data order
        args: {lr: 0.1}                    # optional: passed to the entry as ctx.args
        model: digits-cnn                  # optional: speed-model label (default: the name)

Entry modules are looked up on the Python path and in the jobs file's directory. With work in
epochs, ``epoch_samples`` comes from the entry or from a ``dataset_size`` attribute of the
entry function. Any problem is an ``InputError`` naming the file and the entry's field.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from ringsched.errors import InputError
from ringsched.job import Job
from ringsched.utility.functions import DeadlineUtility, LinearUtility, SigmoidUtility, Utility
from ringsched.validation.bounds import LIMITS
from ringsched.validation.pydantic_errors import input_error
from ringsched.validation.yaml_doc import read_yaml

MAX_JOBS = 10_000  # jobs of one real run
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
ENTRY_RE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


_Samples = LIMITS["job_samples"].pydantic(int)
_Utility = LIMITS["utility"].pydantic(float)
_Rate = LIMITS["utility_rate"].pydantic(float)
_Time = LIMITS["time_s"].pydantic(float)
_Workers = LIMITS["job_workers"].pydantic(int)


class WorkEntry(_Strict):
    samples: _Samples | None = None
    epochs: LIMITS["epochs"].pydantic(float) | None = None
    epoch_samples: _Samples | None = None

    @model_validator(mode="after")
    def _one_of(self):
        if (self.samples is None) == (self.epochs is None):
            raise ValueError("give exactly one of samples or epochs")
        if self.samples is not None and self.epoch_samples is not None:
            raise ValueError("epoch_samples goes with epochs, not samples")
        return self


class UtilityEntry(_Strict):
    kind: Literal["sigmoid", "linear", "deadline"]
    value: _Utility = 1.0
    target_jct_s: _Time | None = None
    steepness_per_s: _Rate | None = None
    slope_per_s: _Rate | None = None
    deadline_s: _Time | None = None
    decay_per_s: _Rate = 0.0

    @model_validator(mode="after")
    def _fields(self):
        need = {"sigmoid": ("target_jct_s", "steepness_per_s"), "linear": ("slope_per_s",),
                "deadline": ("deadline_s",)}[self.kind]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"a {self.kind} utility needs {', '.join(missing)}")
        return self

    def build(self) -> Utility:
        if self.kind == "sigmoid":
            return SigmoidUtility(self.value, self.target_jct_s, self.steepness_per_s)
        if self.kind == "linear":
            return LinearUtility(self.value, self.slope_per_s)
        return DeadlineUtility(self.value, self.deadline_s, self.decay_per_s)


class JobEntry(_Strict):
    name: str = Field(pattern=NAME_RE)
    entry: str = Field(pattern=ENTRY_RE)
    batch: LIMITS["local_bsz"].pydantic(int)
    work: WorkEntry
    min_workers: _Workers = 1
    max_workers: _Workers | None = None
    utility: UtilityEntry | None = None
    arrival_s: _Time = 0.0
    seed: LIMITS["job_seed"].pydantic(int) = 0
    tenant: Annotated[str, Strict()] = ""
    args: dict[str, Any] = Field(default_factory=dict)
    model: str | None = Field(None, pattern=NAME_RE)

    @model_validator(mode="after")
    def _bounds(self):
        if self.max_workers is None:
            self.max_workers = self.min_workers
        if self.max_workers < self.min_workers:
            raise ValueError(f"max_workers ({self.max_workers}) is below min_workers ({self.min_workers})")
        return self


class JobsFile(_Strict):
    jobs: list[JobEntry] = Field(min_length=1, max_length=MAX_JOBS)


@dataclass(frozen=True)
class RunJob:
    """One job of a real run, resolved: everything the controller and the workers need."""

    name: str
    entry: str
    local_bsz: int
    work_samples: int
    min_workers: int
    max_workers: int
    arrival_s: float = 0.0
    seed: int = 0
    tenant: str = ""
    args: dict = field(default_factory=dict)
    model: str = ""
    paths: tuple[str, ...] = ()
    utility: dict | None = None  # a UtilityEntry as a dict; None: the default utility
    priority: int = 0  # given at submission to a service (ringsched submit --priority), not in jobs files

    def to_job(self, est_run_s: float) -> Job:
        """The scheduler's view; ``est_run_s`` (run time alone, estimated) sets the default utility."""
        if self.utility is not None:
            util = UtilityEntry(**self.utility).build()
        else:
            from ringsched.utility.defaults import jct_utility

            util = jct_utility(max(est_run_s, 1e-3), self.max_workers)
        return Job(job_id=self.name, arrival_s=self.arrival_s, model=self.model or self.name,
                   local_bsz=self.local_bsz, work_samples=float(self.work_samples),
                   min_workers=self.min_workers, max_workers=self.max_workers, utility=util,
                   requested_gpus=self.max_workers, tenant=self.tenant,
                   priority=self.priority)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["paths"] = list(self.paths)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunJob":
        d = dict(d)
        d["paths"] = tuple(d.get("paths", ()))
        return cls(**d)


def jobs_digest(jobs: list[RunJob]) -> str:
    """A stable fingerprint of a job list (what a --state directory belongs to). A default
    priority (0) is left out, so a state directory made before jobs had priorities resumes."""
    rows = [{k: v for k, v in j.to_dict().items() if not (k == "priority" and v == 0)} for j in jobs]
    blob = json.dumps(rows, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _import_path(paths: tuple[str, ...]):
    class _Ctx:
        def __enter__(self):
            self.added = [p for p in paths if p not in sys.path]
            sys.path[:0] = self.added

        def __exit__(self, *a):
            for p in self.added:
                if p in sys.path:
                    sys.path.remove(p)

    return _Ctx()


def check_entry(entry: str, paths: tuple[str, ...], *, where: str, file: str | None, row: int | None = None) -> None:
    """The entry's module must be findable (it is imported only by the workers)."""
    module = entry.split(":", 1)[0]
    with _import_path(paths):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError) as e:
            raise InputError(f"cannot find module of entry {entry!r}: {e}", file=file, row=row, field=where) from None
    if not found:
        raise InputError(f"cannot find module {module!r} of entry {entry!r} (not on the Python path "
                         "nor next to the jobs file)", file=file, row=row, field=where)


def _dataset_size(entry: str, paths: tuple[str, ...], args: dict, *, where: str, file: str,
                  row: int | None = None) -> int:
    module, fn = entry.split(":", 1)
    with _import_path(paths):
        try:
            f = getattr(importlib.import_module(module), fn)
            size = getattr(f, "dataset_size", None)
            if callable(size):
                size = size(args)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - any problem of the user's module is bad input here
            raise InputError(f"cannot import entry {entry!r} or read its dataset_size: {type(e).__name__}: {e}",
                             file=file, row=row, field=where) from None
    if isinstance(size, bool) or not isinstance(size, int) or LIMITS["job_samples"].problem(size):
        raise InputError("work in epochs needs epoch_samples (the entry has no usable dataset_size)",
                         file=file, row=row, field=where)
    return size


def load_jobs_file(path: str | Path) -> list[RunJob]:
    path = Path(path)
    name = str(path)
    doc = read_yaml(path)
    if isinstance(doc.value, list):  # just the list: located as if under "jobs"
        doc.value = {"jobs": doc.value}
        doc.lines = {("jobs", *loc): line for loc, line in doc.lines.items()}
    if not isinstance(doc.value, dict):
        raise InputError("expected a mapping with a 'jobs' list (or a list of jobs)", file=name, row=doc.line_of(()))
    try:
        spec = JobsFile.model_validate(doc.value)
    except ValidationError as e:
        raise input_error(e, doc) from None
    names = [j.name for j in spec.jobs]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise InputError(f"duplicate job name {n!r}", file=name, row=doc.line_of(("jobs", i, "name")),
                             field=f"jobs[{i}].name")
    paths = (str(path.resolve().parent),)
    return [_resolve(j, i, paths, name, doc.line_of) for i, j in enumerate(spec.jobs)]


def _resolve(j: JobEntry, i: int, paths: tuple[str, ...], name: str, line_of) -> RunJob:
    """One validated entry as a RunJob: its entry found, its work in samples."""
    check_entry(j.entry, paths, where=f"jobs[{i}].entry", file=name, row=line_of(("jobs", i, "entry")))
    if j.work.samples is not None:
        work = j.work.samples
    else:
        per_epoch = j.work.epoch_samples or _dataset_size(j.entry, paths, j.args, where=f"jobs[{i}].work",
                                                          file=name, row=line_of(("jobs", i, "work")))
        work = max(1, math.ceil(j.work.epochs * per_epoch))
        LIMITS["job_samples"].check(work, field=f"jobs[{i}].work", file=name, row=line_of(("jobs", i, "work")),
                                    what="epochs x epoch_samples")
    try:
        json.dumps(j.args)
    except (TypeError, ValueError):
        raise InputError("args must be plain YAML values (numbers, strings, lists, mappings)", file=name,
                         row=line_of(("jobs", i, "args")), field=f"jobs[{i}].args") from None
    return RunJob(name=j.name, entry=j.entry, local_bsz=j.batch, work_samples=int(work),
                  min_workers=j.min_workers, max_workers=int(j.max_workers), arrival_s=j.arrival_s,
                  seed=j.seed, tenant=j.tenant, args=dict(j.args), model=j.model or j.name, paths=paths,
                  utility=j.utility.model_dump() if j.utility is not None else None)


def job_from_mapping(raw: object, paths: tuple[str, ...], *, source: str) -> RunJob:
    """One job given as a mapping of the jobs-file schema (a service's submission)."""
    if not isinstance(raw, dict):
        raise InputError("expected a job mapping (the jobs-file schema)", file=source)
    try:
        entry = JobEntry.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or None
        raise InputError(err.get("msg", "invalid"), file=source, field=where) from None
    return _resolve(entry, 0, paths, source, lambda loc: None)


_DEMO_RE = re.compile(r"^demo:(\d+)(?:,scale=([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))?$")


def load_jobs(source: str) -> list[RunJob]:
    """``demo:N[,scale=F]`` (built-in jobs, work scaled by F) or a YAML jobs file."""
    text = source.strip()
    m = _DEMO_RE.match(text)
    if m:
        n = int(m.group(1))
        scale = float(m.group(2)) if m.group(2) else 1.0
        if not 1 <= n <= 64:
            raise InputError(f"demo:N needs 1 <= N <= 64, got {n}", field="jobs")
        if not 0 < scale <= 100:
            raise InputError(f"demo scale must lie in (0, 100], got {m.group(2)}", field="jobs")
        from ringsched.backends.demo_jobs import demo_jobs

        return demo_jobs(n, scale)
    if text.startswith("demo:"):
        raise InputError(f"bad demo jobs spec {source!r}: expected demo:N or demo:N,scale=F", field="jobs")
    return load_jobs_file(source)
