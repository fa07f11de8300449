"""``python -m ringsched.backends.zygote``: the local backend's worker factory.

Importing torch (and torch._dynamo, which the first optimizer pulls in) costs about ten
seconds of CPU per process, so one zygote does those imports once (``worker.warm_up``) and
forks a fresh process per worker on request. A forked worker connects back to the launcher
over TCP on 127.0.0.1, proves it holds its secret (``channel``), and speaks JSON lines: events
up, any line down asks it to checkpoint and stop, and the channel's end (the scheduler died)
or SIGTERM does the same. The zygote reports each worker's pid and exit code on its stdout
(``@@ringsched`` lines).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback

from ringsched.backends import channel
from ringsched.backends.worker import EXIT_ABORTED, EXIT_ORPHANED, PREFIX, output_to_log, run_worker, warm_up


class _Out:
    """Protocol lines to the launcher (the zygote's stdout)."""

    def __init__(self, fd: int):
        self.f = os.fdopen(fd, "w", buffering=1)
        self.lock = threading.Lock()

    def __call__(self, ev: dict) -> None:
        with self.lock:
            try:
                self.f.write(PREFIX + json.dumps(ev) + "\n")
                self.f.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass


def watch_channel(f, stop: threading.Event, grace_s: float, hard_exit=os._exit) -> None:
    """Any line from the scheduler asks the worker to checkpoint and stop. The channel's end
    means the scheduler is gone: stop too, and since nobody is left to kill a worker that
    cannot stop (blocked in a collective whose peer died, for up to the gloo timeout at each
    stage), leave anyway after ``grace_s``, as the scheduler would have after its stop timeout.
    Checkpoints are written whole or not at all, so leaving mid-write loses only that one."""
    try:
        for _ in f:
            stop.set()
    except OSError:
        pass
    stop.set()
    time.sleep(grace_s)
    hard_exit(EXIT_ORPHANED)


def _child(cmd: dict, inherited: list[int]) -> int:
    """A forked worker: connect to the launcher's channel, run one rank, exit."""
    import signal
    import socket

    for fd in inherited:  # the zygote's protocol pipe is not ours
        try:
            os.close(fd)
        except OSError:
            pass

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the scheduler's to handle: it stops us
    cfg = cmd["cfg"]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    output_to_log(cfg.get("log_path"))
    host, port = cmd["channel"]
    sock = socket.create_connection((host, int(port)), timeout=30)
    f = sock.makefile("r", encoding="utf-8")
    if not channel.client(sock, f, cmd["key"], cmd["token"], os.getpid()):
        return EXIT_ABORTED  # written off by the launcher (its zygote died first): touch nothing
    sock.settimeout(None)
    lock = threading.Lock()

    def emit(ev: dict) -> None:
        data = (json.dumps(ev) + "\n").encode()
        with lock:
            try:
                sock.sendall(data)
            except OSError:
                pass

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a polite kill: checkpoint and stop
    grace_s = float(cfg["stop_timeout_s"])  # (the controller's RunConfig.stop_timeout_s)
    threading.Thread(target=watch_channel, args=(f, stop, grace_s), daemon=True).start()
    rc = run_worker(cfg, emit, stop)
    sys.stdout.flush()
    sys.stderr.flush()
    emit({"ev": "bye", "rc": rc})  # the exit code, in case the zygote is no longer there to tell it
    return rc


def zygote() -> int:
    """``python -m ringsched.backends.zygote``: the local backend's worker factory.

    Imports torch once, then forks one process per worker on request (a JSON line
    ``{"key", "token", "cfg", "channel": [host, port]}`` on stdin), reports ``forked`` (key, pid) and
    ``child-exit`` (pid, rc) on stdout, and at the end of stdin waits for its children (they see
    their channel end, checkpoint and exit) and exits."""
    import select
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the scheduler's: it stops the jobs, then us
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so is SIGTERM (to the process group): we end at stdin's end
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    out_fd = os.dup(1)
    out = _Out(out_fd)
    warm_up()
    out({"ev": "ready", "pid": os.getpid()})
    children: set[int] = set()
    buf = b""
    eof = False

    def reap(block: bool) -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                children.clear()
                return
            if pid == 0:
                return
            children.discard(pid)
            out({"ev": "child-exit", "pid": pid, "rc": os.waitstatus_to_exitcode(status)})
            block = False

    while not eof:
        ready, _, _ = select.select([0], [], [], 0.1)
        reap(False)
        if not ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            eof = True
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                cmd = json.loads(line)
            except ValueError:
                print(f"zygote: ignoring a bad command line: {line[:200]!r}", file=sys.stderr)
                continue
            pid = os.fork()
            if pid == 0:
                rc = 1
                try:
                    rc = _child(cmd, [out_fd])
                except BaseException:  # noqa: BLE001
                    traceback.print_exc()
                finally:
                    os._exit(rc)
            children.add(pid)
            out({"ev": "forked", "key": cmd["key"], "pid": pid})
    deadline = time.monotonic() + 60.0
    while children and time.monotonic() < deadline:
        reap(False)
        time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(zygote())
