"""The service's API without workers: auth, loopback, durable acknowledgement, errors, CLI."""

from __future__ import annotations

import sqlite3

import pytest
from fastapi.testclient import TestClient

from ringsched.backends.journal import Journal
from ringsched.backends.online import CommandQueue
from ringsched.cluster.model import load_cluster
from ringsched.service.app import Live, build_app
from ringsched.service.server import check_bind
from ringsched.service.store import CommandLog
from ringsched.service.views import Views
from ringsched.errors import InputError

JOB = {"name": "d1", "entry": "ringsched.backends.demo_jobs:digits_cnn", "batch": 32, "work": {"samples": 640},
       "max_workers": 2}


@pytest.fixture
def service(tmp_path):
    Journal(tmp_path).close()  # the controller creates it before the API answers
    log = CommandLog(tmp_path)
    queue = CommandQueue()

    def make(token=None):
        app = build_app(Views(tmp_path, load_cluster("2x2"), "2x2", log.submissions), log, queue, Live(), token)
        return TestClient(app)

    yield make, log, queue, tmp_path
    log.close()


def test_submission_is_on_disk_before_it_is_acknowledged(service):
    make, _, queue, state = service
    r = make().post("/api/jobs", json={"job": JOB, "user": "alice", "priority": 3})
    assert r.status_code == 201 and r.json()["id"] == "d1"
    db = sqlite3.connect(state / CommandLog.FILE)  # another connection: committed, not just buffered
    assert db.execute("SELECT kind, job_id, user, priority FROM commands").fetchall() == [("submit", "d1", "alice", 3)]
    cmds = queue.drain()
    assert [(c.kind, c.job_id, c.job.work_samples) for c in cmds] == [("submit", "d1", 640)]
    assert cmds[0].job.to_job(1.0).priority == 3  # what the policy sees (docs/policies.md, "Priority")
    again = CommandLog(state).replay()  # what a restarted service replays
    assert [(c.kind, c.job_id, c.job) for c in again] == [(c.kind, c.job_id, c.job) for c in cmds]


def test_submitted_job_is_listed_before_the_controller_takes_it(service):
    make, *_ = service
    client = make()
    client.post("/api/jobs", json={"job": JOB, "user": "alice"})
    jobs = client.get("/api/jobs").json()
    assert [(j["id"], j["state"], j["user"]) for j in jobs] == [("d1", "submitted", "alice")]
    assert client.get("/api/jobs?user=bob").json() == []
    assert 'ringsched_jobs{state="submitted"} 1' in client.get("/metrics").text


@pytest.mark.parametrize("job, status, needle", [
    (dict(JOB, work={}), 422, "field 'work'"),
    (dict(JOB, entry="no_such_module_xyz:main"), 422, "cannot find module"),
    (dict(JOB, batch="many"), 422, "field 'batch'"),
])
def test_bad_submission_is_refused_with_one_line(service, job, status, needle):
    make, log, queue, _ = service
    r = make().post("/api/jobs", json={"job": job})
    assert r.status_code == status and needle in r.json()["detail"], r.json()
    assert log.count() == 0 and queue.drain() == []


def test_duplicate_name_and_unknown_job(service):
    make, _, queue, _ = service
    client = make()
    assert client.post("/api/jobs", json={"job": JOB}).status_code == 201
    assert client.post("/api/jobs", json={"job": JOB}).status_code == 409
    assert client.post("/api/jobs/nope/cancel").status_code == 404
    assert client.get("/api/jobs/nope").status_code == 404
    assert client.post("/api/jobs/d1/hold").status_code == 202
    assert [c.kind for c in queue.drain()] == ["submit", "hold"]


def test_token_guards_every_endpoint(service):
    make, *_ = service
    client = make(token="s3cret")
    for path in ("/", "/api/jobs", "/metrics", "/openapi.json", "/api/cluster"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
        assert client.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200, path
    assert client.get("/?token=s3cret").status_code == 200  # the page carries it in its address
    assert client.post("/api/jobs", json={"job": JOB}).status_code == 401


def test_openapi_schema_lists_the_endpoints(service):
    make, *_ = service
    paths = make().get("/openapi.json").json()["paths"]
    for p in ("/api/jobs", "/api/jobs/{job_id}", "/api/jobs/{job_id}/cancel", "/api/jobs/{job_id}/hold",
              "/api/jobs/{job_id}/release", "/api/jobs/{job_id}/logs", "/api/cluster", "/metrics"):
        assert p in paths, p


@pytest.mark.parametrize("host, token, ok", [("127.0.0.1", None, True), ("localhost", None, True), ("::1", None, True),
                                             ("0.0.0.0", None, False), ("10.1.2.3", "", False),
                                             ("0.0.0.0", "t", True)])
def test_non_loopback_bind_needs_a_token(host, token, ok):
    if ok:
        check_bind(host, token)
    else:
        with pytest.raises(InputError, match="without an auth token"):
            check_bind(host, token)


def test_serve_refuses_open_bind_one_line_exit_2(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("RINGSCHED_TOKEN", raising=False)
    code, out, err = cli("serve", "--state", tmp_path / "s", "--host", "0.0.0.0")
    assert code == 2 and "without an auth token" in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()  # refused before touching the state


def test_client_verbs_service_unreachable_exit_2(cli, service, monkeypatch):
    monkeypatch.setenv("RINGSCHED_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    for verb in (("queue",), ("status", "x"), ("cancel", "x"), ("logs", "x")):
        code, _, err = cli(*verb)
        assert code == 2 and "service unreachable" in err and len(err.strip().splitlines()) == 1, (verb, err)
