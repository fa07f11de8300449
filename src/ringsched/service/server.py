"""``ringsched serve``: the controller in the main thread, the HTTP API in a second one.

Order of a start: bind the socket (a taken port fails before anything else), take the state
directory's lock, open (check) the journal and the command log, rebuild the journaled jobs,
queue the command log for replay, start the launcher and the controller; the API starts
answering on the controller's first turn (after recovery), so ``GET /`` answers once the
service is ready. The controller runs in the main thread because signals arrive there:
SIGTERM and SIGINT make it checkpoint every running job and return; the service then stops
the API and exits 0. ``kill -9`` leaves the journal and the command log consistent (each
write is a transaction) for the next start on the same ``--state``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ringsched.backends import signals
from ringsched.backends.controller import Controller, RunConfig
from ringsched.backends.jobs_file import RunJob
from ringsched.backends.journal import Journal
from ringsched.backends.online import CommandQueue, online_check_journal
from ringsched.backends.state_lock import StateLock
from ringsched.errors import InputError
from ringsched.service.app import Live, build_app
from ringsched.service.store import CommandLog
from ringsched.service.views import Views

URL_FILE = "service.url"  # where a started service writes its address (tests, scripts)
GPU_SAMPLE_S = 1.0


@dataclass
class ServeOptions:
    backend: str
    cluster_spec: str
    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 8642
    policy: str = "optimus"
    token: str | None = None
    slot_s: float = 5.0
    checkpoint_s: float = 10.0
    address: str | None = None  # a Ray cluster to join (ray backend); None: a local Ray instance


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise InputError(f"refusing to listen on {host} (not loopback) without an auth token: "
                         "give --token or RINGSCHED_TOKEN", field="host")


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {e.strerror}", field="port") from None
    sock.set_inheritable(False)
    return sock


def _launcher(opts: ServeOptions, cluster):
    if opts.backend == "local":
        from ringsched.backends.local import LocalLauncher

        return LocalLauncher(opts.state_dir)
    from ringsched.backends.ray_backend import RayLauncher

    return RayLauncher(cluster, opts.state_dir, address=opts.address)


class ApiThread:
    """uvicorn on an already bound socket, started on the controller's first turn."""

    def __init__(self, app, sock: socket.socket, url_file: Path, notify):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False))
        self.sock = sock
        self.url_file = url_file
        self.notify = notify
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.sock.listen(512)  # connections from now on wait in the backlog until uvicorn accepts them
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="ringsched-api")
        self.thread.start()
        host, port = self.sock.getsockname()[:2]
        url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        tmp = self.url_file.with_suffix(".tmp")
        tmp.write_text(url + "\n")
        os.replace(tmp, self.url_file)
        self.notify(f"listening on {url}")

    def stop(self) -> None:
        self.url_file.unlink(missing_ok=True)
        if self.thread is not None:
            self.server.should_exit = True
            self.thread.join(timeout=10)
        self.sock.close()


def _on_tick(live: Live, api: ApiThread):
    last = [float("-inf")]

    def tick(ctl: Controller) -> None:
        if not live.ready:
            live.ready = True
            api.start()
        now = time.monotonic()
        live.decisions = ctl.decisions
        if now - last[0] >= GPU_SAMPLE_S:
            last[0] = now
            live.gpu_use.append((round(ctl.now(), 2), sum(len(p) for p in ctl.alloc.values())))

    return tick


def serve(opts: ServeOptions, notify) -> dict:
    """Run the service until a signal ends it; the controller's summary."""
    from ringsched.cluster.model import load_cluster
    from ringsched.policies import make_policy

    check_bind(opts.host, opts.token)
    cluster = load_cluster(opts.cluster_spec)
    policy = make_policy(opts.policy)
    sock = bind(opts.host, opts.port)
    lock = StateLock(opts.state_dir).acquire()
    (opts.state_dir / URL_FILE).unlink(missing_ok=True)  # a killed predecessor's address
    previous = signals.terminate_gracefully()
    journal = log = api = None
    try:
        journal = Journal(opts.state_dir)
        online_check_journal(journal, opts.cluster_spec)  # before any worker starts
        log = CommandLog(opts.state_dir)
        queue = CommandQueue()
        for cmd in log.replay():
            queue.put(cmd)
        jobs = [RunJob.from_dict(json.loads(r["spec"])) for r in journal.jobs()]
        live = Live()
        app = build_app(Views(opts.state_dir, cluster, opts.cluster_spec, log.submissions), log, queue, live,
                        opts.token)
        api = ApiThread(app, sock, opts.state_dir / URL_FILE, notify)
        launcher = _launcher(opts, cluster)
        signals.terminate_gracefully()  # again: ray.init installs its own SIGTERM handler (it aborts)
        ctl = Controller(jobs, cluster, opts.cluster_spec, policy, launcher, journal,
                         RunConfig(slot_s=opts.slot_s, ckpt_every_s=opts.checkpoint_s), jobs_source="service",
                         notify=notify, on_tick=_on_tick(live, api), commands=queue)
        return ctl.run()
    finally:
        if api is not None:
            api.stop()
        else:
            sock.close()
        signals.restore(previous)
        if log is not None:
            log.close()
        if journal is not None:
            journal.close()
        lock.release()
