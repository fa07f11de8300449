"""The fault suite of real execution (issue 20), the worker's side: the channel's secret, a
zygote that cannot start, and a worker whose scheduler died while it was stuck. Every
injected fault is counted (``fault_kit.FAULTS``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fault_kit import FAULTS, fault_totals  # noqa: F401 - fault_totals: a fixture


# ---------------------------------------------------------------------------- the worker channel
def handshake(token_of, key: str, token: str) -> tuple[str | None, bool]:
    """One handshake over a socket pair: (what the launcher authenticated, what the worker heard)."""
    import socket
    import threading

    from ringsched.backends import channel

    a, b = socket.socketpair()
    got = {}

    def launcher_side():
        got["key"] = channel.server(a, a.makefile("r"), token_of)
        a.sendall(b"ok\n" if got["key"] else b"no\n")

    t = threading.Thread(target=launcher_side)
    t.start()
    heard = channel.client(b, b.makefile("r"), key, token, 1234)
    t.join(5)
    a.close()
    b.close()
    return got["key"], heard


def test_worker_channel_needs_the_worker_secret():
    from ringsched.backends import channel

    key, token = channel.new_secret()
    tokens = {key: token}
    assert handshake(tokens.get, key, token) == (key, True)
    FAULTS["channel: wrong secret"] += 1
    assert handshake(tokens.get, key, channel.new_secret()[1]) == (None, False)
    FAULTS["channel: unknown key"] += 1
    assert handshake(tokens.get, "1234-1", token) == (None, False)  # the old guessable <pid>-<seq> form
    k2, t2 = channel.new_secret()
    assert (k2, t2) != (key, token) and len(bytes.fromhex(t2)) == 32


def test_a_zygote_that_cannot_start_ends_the_run(tmp_path):
    from ringsched.backends.controller import LauncherError
    from ringsched.backends.local import ZYGOTE_MAX_EARLY_DEATHS, LocalLauncher

    launcher = LocalLauncher(tmp_path, python="/bin/false")  # dies at once, every time
    try:
        with pytest.raises(LauncherError, match="before it was ready"):
            for _ in range(ZYGOTE_MAX_EARLY_DEATHS + 1):
                launcher.zygote.wait()
                FAULTS["zygote dies before ready"] += 1
                launcher._ensure_zygote()
        assert launcher.zygote_restarts == ZYGOTE_MAX_EARLY_DEATHS - 1
    finally:
        launcher.close()


STUCK_WORKER = """
import socket, sys, threading, time
from ringsched.backends.zygote import watch_channel
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
stop = threading.Event()
threading.Thread(target=watch_channel, args=(sock.makefile("r"), stop, float(sys.argv[2])), daemon=True).start()
while True:  # blocked for good, as in an all-reduce whose peer was killed: never looks at stop
    time.sleep(1)
"""


def test_a_worker_whose_scheduler_died_leaves_within_the_stop_timeout():
    """Mutant caught: watch_channel without its hard exit (the stuck worker outlives the
    scheduler until the gloo timeouts run out; the chaos run once waited over 240 s)."""
    import socket
    import time

    from ringsched.backends.worker import EXIT_ORPHANED

    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(120)  # (a child that never connects fails the test instead of hanging it)
        proc = subprocess.Popen([sys.executable, "-c", STUCK_WORKER, str(server.getsockname()[1]), "1.5"])
        try:
            conn, _ = server.accept()
            conn.sendall(b"stop\n")  # a stop asked while the scheduler lives: the scheduler enforces it
            time.sleep(2.5)
            assert proc.poll() is None, "a worker left while its scheduler was still there"
            conn.close()  # the scheduler is gone
            t0 = time.monotonic()
            assert proc.wait(timeout=30) == EXIT_ORPHANED
            assert 1.4 <= time.monotonic() - t0 < 20
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    FAULTS["worker: scheduler gone while stuck"] += 1
