"""Submission latency of the service: how long `POST /api/jobs` takes to be acknowledged
(validated, committed to the command log with synchronous=FULL, queued) with 500 jobs already
queued, against a reference measured in the same process on the same server: `GET
/api/health`, the HTTP round trip alone. Target (issue 17): p99 under 50 ms.

    python benchmarks/service_submit.py [QUEUED] [MEASURED]

Real HTTP over loopback (uvicorn in a thread, urllib as the client, as the CLI does); the
controller is left out (it drains the queue after the acknowledgement, off this path).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from ringsched.backends.journal import Journal
from ringsched.backends.online import CommandQueue
from ringsched.cluster.model import load_cluster
from ringsched.service.app import Live, build_app
from ringsched.service.client import Client
from ringsched.service.server import ApiThread, bind
from ringsched.service.store import CommandLog
from ringsched.service.views import Views


def job(i: int) -> dict:
    return {"name": f"bench{i:05d}", "entry": "ringsched.backends.demo_jobs:digits_cnn", "batch": 32,
            "work": {"samples": 3200}, "max_workers": 2, "model": "digits-cnn"}


def p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100)[98]


def main(queued: int = 500, measured: int = 300) -> None:
    with tempfile.TemporaryDirectory() as d:
        state = Path(d)
        Journal(state).close()
        log, queue = CommandLog(state), CommandQueue()
        app = build_app(Views(state, load_cluster("2x2"), "2x2", log.submissions), log, queue, Live(), None)
        api = ApiThread(app, bind("127.0.0.1", 0), state / "service.url", lambda msg: None)
        api.start()
        while not api.server.started:
            time.sleep(0.01)
        client = Client((state / "service.url").read_text().strip())
        for i in range(queued):
            client.post("/api/jobs", {"job": job(i), "user": "bench"})
        submit, health = [], []
        for i in range(queued, queued + measured):  # interleaved: both see the same machine load
            t = time.perf_counter()
            client.post("/api/jobs", {"job": job(i), "user": "bench"})
            submit.append(time.perf_counter() - t)
            t = time.perf_counter()
            client.get("/api/health")
            health.append(time.perf_counter() - t)
        assert log.count() == queued + measured and len(queue.drain()) == queued + measured
        api.stop()
        log.close()
    print(f"{queued} jobs queued, {measured} submissions measured (loopback HTTP; timings noisy on a shared machine)")
    print(f"submit acknowledged: median {statistics.median(submit) * 1e3:.2f} ms, p99 {p99(submit) * 1e3:.2f} ms "
          f"(target < 50 ms: {'met' if p99(submit) < 0.050 else 'NOT met'})")
    print(f"reference GET /api/health: median {statistics.median(health) * 1e3:.2f} ms, p99 {p99(health) * 1e3:.2f} ms")
    print(f"ratio submit / reference: median {statistics.median(submit) / statistics.median(health):.2f}x, "
          f"p99 {p99(submit) / p99(health):.2f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
