"""The service's live page in headless Chromium: no console errors, and the page follows the
service (a submitted job appears, runs on servers, completes; GPU use is drawn)."""

from __future__ import annotations

import signal
import time

import pytest

from test_report_browser import SKIP, REQUIRED, Browser, browser  # noqa: F401 - the fixture
from test_service_durable import start

pytestmark = [pytest.mark.browser, pytest.mark.backend,
              pytest.mark.skipif(SKIP is not None and not REQUIRED, reason=SKIP or "")]

JOB = {"name": "pagejob", "entry": "ringsched.backends.demo_jobs:synth_mlp", "batch": 64,
       "work": {"samples": 64 * 600}, "max_workers": 2, "model": "synth-mlp"}


def poll(b: Browser, js: str, want, timeout_s: float = 60.0):
    t0 = time.monotonic()
    while True:
        got = b.evaluate(js)
        if want(got):
            return got
        assert time.monotonic() - t0 < timeout_s, f"page never showed it; last {got!r}"
        time.sleep(0.5)


def test_live_page_follows_a_submission(browser, tmp_path):  # noqa: F811
    state = tmp_path / "state"
    proc, client = start(state)
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.page(f"{domain}.enable")
        browser.page("Page.navigate", url=client.url + "/")
        browser.wait_event("Page.loadEventFired")
        poll(browser, "document.getElementById('updated').textContent", lambda v: v != "never")
        assert browser.evaluate("document.querySelectorAll('#jobs tbody tr').length") == 0
        assert browser.evaluate("document.querySelectorAll('#servers tbody tr').length") == 2
        client.post("/api/jobs", {"job": JOB, "user": "alice"})
        rows = "[...document.querySelectorAll('#jobs tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
        running = poll(browser, rows, lambda v: v and v[0][1] == "running")
        assert running[0][0] == "pagejob" and running[0][2] == "alice" and running[0][4]  # its servers shown
        poll(browser, "[...document.querySelectorAll('#servers tbody tr')].map(r => r.cells[2].textContent).join()",
             lambda v: "pagejob" in v)
        poll(browser, rows, lambda v: v[0][1] == "completed", timeout_s=120)
        poll(browser, "document.querySelectorAll('#decisions tbody tr').length", lambda v: v >= 1)
        poll(browser, "document.querySelector('#gpu polyline') !== null", lambda v: v is True)
        browser.page("Runtime.evaluate", expression="1")
        assert browser.errors() == []
        assert all(u.startswith(client.url) for u in browser.requests(client.url + "/"))  # self-contained
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
