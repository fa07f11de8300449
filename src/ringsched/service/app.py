"""The HTTP API (FastAPI): submit, list, show, cancel, hold, release; cluster; metrics; page.

Every command is committed to the command log (``store``) before it is acknowledged, then put
on the controller's queue. Reads come from the journal (``views``). With a token, every
endpoint (the page and the OpenAPI schema included) wants ``Authorization: Bearer TOKEN``
(the page may carry it as ``?token=``, which it then sends as that header).
"""

from __future__ import annotations

import dataclasses
import secrets
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

from ringsched.backends.jobs_file import job_from_mapping
from ringsched.backends.online import Command, CommandQueue
from ringsched.errors import InputError
from ringsched.service.store import CommandLog, DuplicateJob
from ringsched.service.views import Views
from ringsched.validation.bounds import LIMITS
from ringsched.version import __version__


class Submission(BaseModel):
    """A job of the jobs-file schema, who submits it and with what priority."""

    job: dict[str, Any]
    user: str = Field("", max_length=64)
    priority: LIMITS["priority"].pydantic(int) = 0
    paths: list[str] = Field(default_factory=list, max_length=8)  # folders of the job's entry module


class Live:
    """What the controller's thread publishes for the page: GPU use over time, decisions."""

    def __init__(self, history_len: int = 720):
        from collections import deque

        self.gpu_use: deque[tuple[float, int]] = deque(maxlen=history_len)
        self.decisions = 0
        self.ready = False


def _page() -> str:
    return resources.files("ringsched.service").joinpath("page.html").read_text()


def build_app(views: Views, log: CommandLog, commands: CommandQueue, live: Live, token: str | None) -> FastAPI:
    app = FastAPI(title="ringsched", version=__version__,
                  description="The GADGET online scheduler service: submit and follow training jobs.")
    page = _page()

    @app.middleware("http")
    async def bearer(request: Request, call_next):
        if token is not None:
            given = request.headers.get("authorization", "")
            given = given[7:] if given.lower().startswith("bearer ") else request.query_params.get("token", "")
            if not secrets.compare_digest(given.encode(), token.encode()):
                return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    def known(job_id: str) -> None:
        if job_id not in log.submissions():
            raise HTTPException(404, f"unknown job {job_id!r}")

    @app.get("/", response_class=HTMLResponse, summary="The live page (answers once the service is ready)")
    def index() -> str:
        return page

    @app.get("/api/health", summary="Readiness")
    def health() -> dict:
        return {"ready": live.ready, "version": __version__, "cluster": views.cluster_spec}

    @app.post("/api/jobs", status_code=201, summary="Submit a job (acknowledged once journaled)")
    def submit(sub: Submission) -> dict:
        try:
            job = dataclasses.replace(job_from_mapping(sub.job, tuple(sub.paths), source="submission"),
                                      priority=sub.priority)
        except InputError as e:
            raise HTTPException(422, e.line()) from None
        try:
            seq = log.record("submit", job.name, job=job, user=sub.user, priority=sub.priority)
        except DuplicateJob:
            raise HTTPException(409, f"job {job.name!r} was submitted before") from None
        commands.put(Command("submit", job.name, job))
        return {"id": job.name, "state": "submitted", "seq": seq}

    @app.get("/api/jobs", summary="List jobs (unfinished only unless all=true)")
    def list_jobs(all: bool = False, state: str | None = None, user: str | None = None) -> list[dict]:  # noqa: A002
        return views.jobs(all_jobs=all, state=state, user=user)

    @app.get("/api/jobs/{job_id}", summary="One job: state, placements, step times, log tail")
    def show(job_id: str) -> dict:
        out = views.job(job_id)
        if out is None:
            raise HTTPException(404, f"unknown job {job_id!r}")
        return out

    @app.get("/api/jobs/{job_id}/logs", summary="The log of the job's latest attempt (rank 0)")
    def logs(job_id: str) -> dict:
        out = views.job(job_id)
        if out is None:
            raise HTTPException(404, f"unknown job {job_id!r}")
        return {"id": job_id, "lines": out["log_tail"]}

    def command(kind: str):
        def act(job_id: str) -> dict:
            known(job_id)
            seq = log.record(kind, job_id)
            commands.put(Command(kind, job_id))
            return {"id": job_id, "accepted": kind, "seq": seq}

        act.__name__ = kind
        return act

    for kind in ("cancel", "hold", "release"):
        app.post(f"/api/jobs/{{job_id}}/{kind}", status_code=202, summary=f"{kind.capitalize()} a job")(command(kind))

    @app.get("/api/cluster", summary="Servers, GPUs, the jobs on them, recent decisions")
    def cluster() -> dict:
        out = views.cluster_state()
        out["gpu_use"] = [{"t_s": t, "busy_gpus": b} for t, b in list(live.gpu_use)]
        return out

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    def metrics() -> str:
        return views.metrics({"ringsched_submissions_total": (log.count(), "Jobs accepted."),
                              "ringsched_decisions_total": (live.decisions, "Policy decisions taken.")})

    return app
