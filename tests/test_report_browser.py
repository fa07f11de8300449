"""The compare and sweep reports in a real browser: headless Chromium, driven over the Chrome
DevTools Protocol by a tiny client on ``websockets`` (no browser download, no Node).

Chromium is Debian's ``chromium`` package, installed by ``make browser`` (``scripts/install_chromium.sh``,
which CI's ``.ci/run`` calls before ``make test``), never by the tests. Without /usr/bin/chromium
(or ``websockets``) the tests skip with the reason, except where RINGSCHED_REQUIRE_BROWSER=1 (CI
sets it): there a missing browser fails them. Marked ``browser`` (``make test-fast`` leaves them out).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


CHROMIUM = Path(os.environ.get("RINGSCHED_CHROMIUM", "/usr/bin/chromium"))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars"]


def _ensure_chromium() -> str | None:
    """None when the browser and the CDP client are usable, else the reason to skip."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is absent (Debian package 'chromium'; `make browser` installs it as root)"
    try:
        import websockets.sync.client  # noqa: F401
    except ImportError:
        return "the 'websockets' package (the CDP client) is not installed"
    return None


SKIP = _ensure_chromium()
REQUIRED = os.environ.get("RINGSCHED_REQUIRE_BROWSER") == "1"
pytestmark = [pytest.mark.browser, pytest.mark.skipif(SKIP is not None and not REQUIRED, reason=SKIP or "")]


@pytest.fixture(autouse=True)
def _browser_present():
    if SKIP is not None:  # only reached when RINGSCHED_REQUIRE_BROWSER=1
        pytest.fail(f"the browser is required here: {SKIP}")


class Browser:
    """Headless Chromium with one page, over CDP (flattened sessions on the browser socket)."""

    def __init__(self, workdir: Path):
        from websockets.sync.client import connect

        self.profile = workdir / "chromium-profile"
        shutil.rmtree(self.profile, ignore_errors=True)
        self.profile.mkdir(parents=True)
        self.log = open(workdir / "chromium.log", "wb")
        self.proc = subprocess.Popen([str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-port=0", "--window-size=1280,900", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"chromium did not start: {(workdir / 'chromium.log').read_text()[-2000:]}")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=30,
                                                    proxy=None))
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params) -> dict:
        i = next(self.ids)
        msg = {"id": i, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if reply.get("id") == i:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def page(self, method: str, **params) -> dict:
        return self.call(method, session=self.session, **params)

    def wait_event(self, name: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e["method"] == name:
                    return e
            reply = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if "method" in reply:
                self.events.append(reply)

    def open(self, path: Path) -> str:
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.page(f"{domain}.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)
        url = path.resolve().as_uri()
        self.page("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        time.sleep(0.3)  # let late console messages arrive
        self.page("Runtime.evaluate", expression="1")  # flush pending events into self.events
        return url

    def evaluate(self, js: str):
        r = self.page("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, out: Path) -> Path:
        size = self.page("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        out.write_bytes(base64.b64decode(shot["data"]))
        return out

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def requests(self, own_url: str) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"
                and e["params"]["request"]["url"] not in (own_url,)
                and not e["params"]["request"]["url"].startswith("data:")]

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                try:
                    self.call("Browser.close", timeout=5)
                except Exception:  # noqa: BLE001 - the socket closes as the browser exits
                    pass
                self._stack.close()
        finally:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # our own child, by its handle
                self.proc.wait(timeout=10)
            self.log.close()


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path)
    try:
        yield b
    finally:
        b.close()


# The compare run the browser checks (every policy) is the one tests/test_compare.py checks,
# shared through the session's temporary folder; RINGSCHED_BROWSER_TRACE=synthetic:2000 and
# RINGSCHED_BROWSER_CLUSTER=16x8 check the target instead (slower).
TRACE = os.environ.get("RINGSCHED_BROWSER_TRACE")
CLUSTER = os.environ.get("RINGSCHED_BROWSER_CLUSTER", "16x8")


@pytest.fixture(scope="module")
def compare_run(tmp_path_factory):
    from ringsched.policies import policy_names

    if TRACE:
        out = tmp_path_factory.mktemp("browser") / "compare"
        r = subprocess.run([sys.executable, "-m", "ringsched.cli.main", "compare", "--trace", TRACE, "--cluster",
                            CLUSTER, "--policies", "all", "--out", str(out)], capture_output=True, text=True,
                           timeout=1800)
        assert r.returncode == 0, r.stderr[-3000:]
    else:
        from test_compare import shared_compare_run

        out, _ = shared_compare_run(tmp_path_factory)
    return out, policy_names()


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    from test_sweep import shared_sweep_run

    return shared_sweep_run(tmp_path_factory)[0]


PLOT_INFO_JS = """
[...document.querySelectorAll('figure.plot')].map(f => {
  const svg = f.querySelector('svg'); const r = (svg || f).getBoundingClientRect();
  return {id: f.id, svg: !!svg, width: r.width, height: r.height,
          marks: svg ? svg.querySelectorAll('path, rect, polyline, line, use').length : 0,
          caption: (f.querySelector('figcaption') || {}).textContent || ''};
})
"""


def check_report(browser: Browser, report: Path, expected_ids, shot: Path) -> dict:
    url = browser.open(report)
    plots = {p["id"]: p for p in browser.evaluate(PLOT_INFO_JS)}
    for pid in expected_ids:
        assert pid in plots, f"plot {pid} missing; found {sorted(plots)}"
        p = plots[pid]
        assert p["svg"] and p["width"] > 200 and p["height"] > 100, p
        assert p["marks"] > 10, f"plot {pid} looks empty: {p}"
    assert browser.errors() == []
    assert browser.requests(url) == [], "the report made network requests"
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return plots


def test_compare_report_in_chromium(browser, compare_run, tmp_path):
    from ringsched.reports import COMPARE_PLOTS

    out, policies = compare_run
    plots = check_report(browser, out / "report.html", COMPARE_PLOTS, tmp_path / "compare-report.png")
    header = browser.evaluate("document.querySelector('#report-header').innerText")
    for word in ("workload", "cluster", "seed", "load", "objective", "ringsched", "python", "numpy", "pandas",
                 "synthetic:"):
        assert word in header, f"{word!r} not in the header: {header}"
    rows = browser.evaluate("[...document.querySelectorAll('#summary-table tbody tr')].map(r => r.cells[0].innerText)")
    assert rows == policies
    assert browser.evaluate("document.querySelectorAll('#summary-table td.best').length") >= 5
    sampled = browser.evaluate("document.querySelectorAll('#job-sample-table tbody tr').length")
    assert sampled > 0
    assert "under" in plots["plot-job-timeline"]["caption"]


def test_sweep_report_in_chromium(browser, sweep_run, tmp_path):
    from ringsched.reports import SWEEP_METRICS

    import pandas as pd

    present = set(pd.read_csv(sweep_run / "sweep.csv")["metric"])  # the metrics the simulator reports
    ids = [f"sweep-{m.key.replace('_', '-')}" for m in SWEEP_METRICS if m.key in present]
    assert len(ids) >= 8
    check_report(browser, sweep_run / "report.html", ids, tmp_path / "sweep-report.png")
