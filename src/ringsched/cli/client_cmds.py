"""The verbs that talk to a running service: submit, queue, status, cancel, hold, release, logs.

A Slurm user's map: ``sbatch`` -> ``submit``, ``squeue`` -> ``queue``, ``scontrol show job``
-> ``status``, ``scancel`` -> ``cancel``, ``scontrol hold/release`` -> ``hold``/``release``.
"""

from __future__ import annotations

import getpass
import json
import math
import sys
from pathlib import Path
from urllib.parse import quote

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ringsched.errors import InputError

URL = typer.Option(None, "--url", envvar="RINGSCHED_URL", show_envvar=True,
                   help="The service's address (default http://127.0.0.1:8642).")
TOKEN = typer.Option(None, "--token", envvar="RINGSCHED_TOKEN", show_envvar=True, help="Bearer token.")


def _client(url, token):
    from ringsched.service.client import Client

    return Client(url, token)


def _fmt(v) -> str:
    return "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))


def count_text(v) -> str:
    """A count (samples) as a whole number with thousands separators, whether the service sent
    it as an int or a float (3000.0 -> "3,000", never "3e+03"); "-" when unknown."""
    return f"{int(v):,}" if v is not None and math.isfinite(v) else "-"


def submit(jobs_file: Path = typer.Argument(..., help="A YAML jobs file (the schema of ringsched run --jobs)."),
           user: str = typer.Option(None, "--user", help="Who submits (default: the login name)."),
           priority: int = typer.Option(0, "--priority", help="Slurm-style priority (-1000..1000): among waiting "
                                        "jobs a higher one is offered GPUs first (docs/policies.md)."),
           url: str = URL, token: str = TOKEN) -> None:
    """Submit every job of a jobs file (as sbatch); prints each job's id once it is journaled."""
    from ringsched.backends.jobs_file import load_jobs_file
    from ringsched.validation.yaml_doc import read_yaml

    load_jobs_file(jobs_file)  # every problem named by file, row and field before anything is sent
    doc = read_yaml(jobs_file).value
    entries = doc if isinstance(doc, list) else doc["jobs"]
    client = _client(url, token)
    who = user or getpass.getuser()
    for entry in entries:
        out = client.post("/api/jobs", {"job": entry, "user": who, "priority": priority,
                                        "paths": [str(jobs_file.resolve().parent)]})
        print(out["id"])


def queue(all_jobs: bool = typer.Option(False, "--all", help="Finished jobs too (completed, failed, ...)."),
          as_json: bool = typer.Option(False, "--json", help="One JSON list on stdout."),
          url: str = URL, token: str = TOKEN) -> None:
    """The jobs of the service, as squeue: state, user, workers and servers, progress."""
    jobs = _client(url, token).get(f"/api/jobs?all={'true' if all_jobs else 'false'}")
    if as_json:
        sys.stdout.write(json.dumps(jobs) + "\n")
        return
    t = Table()
    for col in ("job", "state", "user", "prio", "workers", "servers", "progress", "loss"):
        t.add_column(col)
    for j in jobs:
        prog = f"{100 * j['done_samples'] / j['work_samples']:.0f}%" if j["work_samples"] else "-"
        cells = (j["id"], j["state"], j["user"], str(j["priority"]), str(j["workers"]),
                 " ".join(map(str, j["placement"])) or "-", prog, f"{_fmt(j['loss_first'])} -> {_fmt(j['loss_last'])}")
        t.add_row(*(Text(str(c)) for c in cells))  # a submitter's free text: never read as markup
    Console(emoji=False, highlight=False).print(t)


def _job_path(job_id: str) -> str:
    return f"/api/jobs/{quote(job_id, safe='')}"


def status(job_id: str = typer.Argument(..., help="The job's id (its name)."),
           as_json: bool = typer.Option(False, "--json", help="The full record as JSON."),
           url: str = URL, token: str = TOKEN) -> None:
    """One job, as scontrol show job: state, placement history, step time predicted vs measured."""
    j = _unknown_as_error(lambda: _client(url, token).get(_job_path(job_id)), job_id)
    if as_json:
        sys.stdout.write(json.dumps(j) + "\n")
        return
    print(f"{j['id']}: {j['state']}" + (f" ({j['reason']})" if j["reason"] else "") +
          f", user {j['user'] or '-'}, {count_text(j['done_samples'])}/{count_text(j['work_samples'])} samples, "
          f"loss {_fmt(j['loss_first'])} -> {_fmt(j['loss_last'])}")
    for a in j["attempts"]:
        err = f"{a['step_error'] * 100:.0f}%" if a["step_error"] is not None else "-"
        print(f"  attempt {a['attempt']}: servers [{' '.join(map(str, a['placement']))}], "
              f"step predicted {_fmt(a['predicted_step_s'])} s, measured {_fmt(a['measured_step_s'])} s "
              f"(error {err}), {a['outcome'] or 'running'}")


def _unknown_as_error(call, job_id: str):
    try:
        return call()
    except InputError as e:
        if "unknown job" in e.message:
            raise InputError(f"unknown job {job_id!r}", field="ID") from None
        raise


def _command(kind: str, doc: str):
    def act(job_id: str = typer.Argument(..., help="The job's id."), url: str = URL, token: str = TOKEN) -> None:
        _unknown_as_error(lambda: _client(url, token).post(f"{_job_path(job_id)}/{kind}"), job_id)
        print(f"{job_id}: {kind} accepted")

    act.__doc__ = doc
    act.__name__ = kind
    return act


cancel = _command("cancel", "Cancel a job, as scancel: its workers checkpoint and stop; it never runs again.")
hold = _command("hold", "Hold a job, as scontrol hold: it stops (checkpointed) and waits until released.")
release = _command("release", "Release a held job, as scontrol release: it is queued again.")


def logs(job_id: str = typer.Argument(..., help="The job's id."), url: str = URL, token: str = TOKEN) -> None:
    """The tail of the log of the job's latest attempt (rank 0); full logs are under STATE/logs/ID."""
    out = _unknown_as_error(lambda: _client(url, token).get(f"{_job_path(job_id)}/logs"), job_id)
    for line in out["lines"]:
        print(line)
