"""Local backend: every worker is a process on this machine; servers and GPU slots are emulated.

A job's attempt is ``world`` processes, one per worker, each limited to one thread, forming a
gloo group on 127.0.0.1 (a fresh free port per attempt). Placement decides nothing physical
here: each worker is told its server index, and all workers share this machine's cores (the
operating system balances them; pinning a server to a core was tried and made step times
depend on which other jobs share the core, which no placement model can see).

Starting a Python process that imports torch (and torch._dynamo, which the first optimizer
pulls in) takes about ten seconds of CPU, which would make every resize slow. So the launcher
starts one *zygote* (``python -m ringsched.backends.zygote``) that does those imports once and
then forks a fresh worker process per rank on request (milliseconds). Each worker connects
back to the launcher over a TCP socket on 127.0.0.1 and proves it holds its own random
secret (``channel``: an HMAC challenge): events come up that channel as JSON lines, a line
down it asks the worker to checkpoint and stop, and its end (the scheduler died) does the
same. The zygote reports each worker's pid and, when it exits, its exit code (a worker also
sends its code as its last event, ``bye``); a worker's ``exit`` event is emitted once both its
channel has ended and its exit code is known (so it follows all of its other events).

A zygote that dies is an infrastructure fault, not the jobs': workers it had already forked
go on (their channels are the launcher's), workers it had not forked yet are written off
(exit code ``ZYGOTE_LOST``; should one connect later it is told to abort), and the next
``start`` starts a new zygote. One that dies ``ZYGOTE_MAX_EARLY_DEATHS`` times in a row before
it is ready (a broken environment) is a :class:`LauncherError`.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ringsched.backends import channel, gpu_slots
from ringsched.backends.launcher import Attempt, Launcher, LauncherError
from ringsched.backends.faults import CHANNEL_LOST, ZYGOTE_LOST
from ringsched.backends.worker import PREFIX

WORKER_MODULE = "ringsched.backends.zygote"
ZYGOTE_MAX_EARLY_DEATHS = 3


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def worker_env() -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env["PYTHONUNBUFFERED"] = "1"
    src = str(Path(__file__).resolve().parents[2])  # workers import ringsched from where we do
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def pid_is_worker(pid: int) -> bool:
    """True when ``pid`` is a live ringsched worker process (not a zombie, not a reused pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return WORKER_MODULE.encode() in f.read()
    except OSError:
        return False


def _wait_gone(pids: list[int], timeout_s: float) -> bool:
    """Wait until none of ``pids`` is a live worker; False if some still are at the timeout."""
    deadline = time.monotonic() + timeout_s
    while any(pid_is_worker(p) for p in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@dataclass
class _Worker:
    key: str
    token: str
    attempt: int
    rank: int
    zygote: int = 0  # which zygote generation was asked to fork it
    pid: int | None = None
    rc: int | None = None
    conn: socket.socket | None = None
    connected: bool = False
    channel_ended: bool = False
    exited: bool = False  # the exit event was emitted
    kill_pending: bool = False
    stop_pending: bool = False  # asked to stop before its channel connected: told on connect
    said_rc: int | None = None  # the code the worker sent in its "bye" event


class LocalLauncher(Launcher):
    name = "local"

    def __init__(self, state_dir: str | Path, *, python: str = sys.executable):
        self.python = python
        self.state_dir = Path(state_dir)
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        self.events: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.workers: dict[str, _Worker] = {}
        self.by_pid: dict[int, _Worker] = {}
        self.by_attempt: dict[int, list[_Worker]] = {}
        self.early_rc: dict[int, int] = {}
        self.closed = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.5)
        self.channel = ("127.0.0.1", self.listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True, name="ringsched-accept").start()
        self._zlog = open(self.state_dir / "logs" / "zygote.log", "ab")  # noqa: SIM115 - kept open
        self.generation = 0
        self.dead_generations: set[int] = set()
        self.early_deaths = 0
        self.zygote_restarts = 0
        self._spawn_zygote()

    def _spawn_zygote(self) -> None:
        self.generation += 1
        self.zygote_ready = False
        self.zygote = subprocess.Popen([self.python, "-m", WORKER_MODULE], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=self._zlog, env=worker_env(), text=True,
                                       bufsize=1, close_fds=True)
        threading.Thread(target=self._read_zygote, args=(self.zygote, self.generation), daemon=True,
                         name=f"ringsched-zygote{self.generation}").start()

    def _ensure_zygote(self) -> None:
        """A dead zygote is replaced (an infrastructure fault, counted; not the jobs')."""
        if self.zygote.poll() is None:
            return
        self.early_deaths = 0 if self.zygote_ready else self.early_deaths + 1
        if self.early_deaths >= ZYGOTE_MAX_EARLY_DEATHS:
            raise LauncherError(f"the worker zygote died {self.early_deaths} times before it was ready "
                                f"(see {self.state_dir / 'logs' / 'zygote.log'})")
        self.zygote_restarts += 1
        self._spawn_zygote()

    # ------------------------------------------------------------------ threads
    def _read_zygote(self, proc: subprocess.Popen, generation: int) -> None:
        for line in proc.stdout:
            if not line.startswith(PREFIX):
                continue
            try:
                ev = json.loads(line[len(PREFIX):])
            except ValueError:
                continue
            kind = ev.get("ev")
            if kind == "ready":
                if proc is self.zygote:
                    self.zygote_ready = True
            elif kind == "forked":
                self._on_forked(str(ev.get("key")), int(ev["pid"]))
            elif kind == "child-exit":
                with self.lock:
                    w = self.by_pid.get(int(ev["pid"]))
                    if w is None:
                        self.early_rc[int(ev["pid"])] = int(ev["rc"])
                        continue
                    w.rc = int(ev["rc"])
                self._maybe_exit(w)
        proc.wait()
        # this zygote is gone: it forks nothing more and reports no more exit codes
        with self.lock:
            self.dead_generations.add(generation)
            mine = [w for w in self.workers.values() if w.zygote == generation and not w.exited and w.rc is None]
            for w in mine:
                if w.pid is None or not w.connected:
                    w.rc = ZYGOTE_LOST  # never forked, or never connected: written off
                elif w.channel_ended:
                    w.rc = w.said_rc if w.said_rc is not None else CHANNEL_LOST
                # else alive and connected: its "bye" (or the channel's end) tells its code
        for w in mine:
            self._maybe_exit(w)

    def _on_forked(self, key: str, pid: int) -> None:
        with self.lock:
            w = self.workers.get(key)
            if w is None:
                return
            w.pid = pid
            self.by_pid[pid] = w
            if pid in self.early_rc:
                w.rc = self.early_rc.pop(pid)
            kill = w.kill_pending or w.exited
        self.events.put((w.attempt, w.rank, {"ev": "spawned", "pid": pid}))
        if kill:
            self._signal(pid, signal.SIGKILL)
        self._maybe_exit(w)

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._read_worker, args=(conn,), daemon=True).start()

    def _token_of(self, key: str) -> str | None:
        with self.lock:
            w = self.workers.get(key)
            return None if w is None or w.connected else w.token

    def _read_worker(self, conn: socket.socket) -> None:
        f = conn.makefile("r", encoding="utf-8")
        w = None
        try:
            key = channel.server(conn, f, self._token_of)
            if key is None:
                return  # not one of our workers: nothing it sent is read
            with self.lock:
                w = self.workers[key]
                written_off = w.exited
                if not written_off:
                    w.conn, w.connected = conn, True
                stop_now = w.stop_pending
            if written_off:  # its attempt was ended without it (its zygote died): it must not run
                conn.sendall(b"abort\n")
                w = None
                return
            conn.sendall(b"ok\n")
            if stop_now:  # a stop sent while the worker was still starting must not be lost
                conn.sendall(b"stop\n")
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("ev") == "bye":
                    with self.lock:
                        w.said_rc = int(ev.get("rc", CHANNEL_LOST))
                    continue
                self.events.put((w.attempt, w.rank, ev))
        except OSError:
            pass
        finally:
            if w is not None:
                with self.lock:
                    w.channel_ended = True
                    if w.rc is None and w.zygote in self.dead_generations:  # nobody else will tell its code
                        w.rc = w.said_rc if w.said_rc is not None else CHANNEL_LOST
                self._maybe_exit(w)
            try:
                conn.close()
            except OSError:
                pass

    def _maybe_exit(self, w: _Worker) -> None:
        """A worker's exit event, once its channel has ended (or never opened) and its code is known."""
        with self.lock:
            if w.exited or w.rc is None or (w.connected and not w.channel_ended):
                return
            w.exited = True
        self.events.put((w.attempt, w.rank, {"ev": "exit", "rc": w.rc}))

    @staticmethod
    def _signal(pid: int | None, sig: int) -> None:
        if pid is None:
            return
        try:
            os.kill(pid, sig)
        except OSError:
            pass

    # ------------------------------------------------------------------ Launcher
    def start(self, attempt: Attempt, config: dict) -> None:
        self._ensure_zygote()
        port = free_port()
        log_dir = Path(config.pop("log_dir", self.state_dir / "logs"))
        ws = []
        with self.lock:
            for rank in range(attempt.world):
                key, token = channel.new_secret()
                w = _Worker(key, token, attempt.id, rank, zygote=self.generation)
                self.workers[w.key] = w
                ws.append(w)
            self.by_attempt[attempt.id] = ws
        try:
            for w in ws:
                cfg = dict(config, rank=w.rank, world=attempt.world, master_addr="127.0.0.1", master_port=port,
                           log_path=str(log_dir / f"attempt{attempt.id}-rank{w.rank}.log"),
                           gpu_numbering=gpu_slots.MACHINE)  # every emulated server's GPUs are this machine's
                cmd = {"key": w.key, "token": w.token, "cfg": cfg, "channel": list(self.channel)}
                self.zygote.stdin.write(json.dumps(cmd) + "\n")
            self.zygote.stdin.flush()
        except OSError:
            pass  # the zygote died meanwhile
        with self.lock:  # a zygote already gone before these were registered forks nothing: write them off
            lost = [w for w in ws if w.zygote in self.dead_generations and w.pid is None and w.rc is None]
            for w in lost:
                w.rc = ZYGOTE_LOST
        for w in lost:
            self._maybe_exit(w)
        attempt.host = socket.gethostname()
        # pids arrive asynchronously ("forked"); the controller also gets them in "started"

    def pids(self, attempt: Attempt) -> list[int]:
        with self.lock:
            return [w.pid for w in self.by_attempt.get(attempt.id, ()) if w.pid is not None]

    def stop(self, attempt: Attempt) -> None:
        for w in self.by_attempt.get(attempt.id, ()):
            with self.lock:
                conn = w.conn
                if conn is None:
                    w.stop_pending = True  # still starting: _read_worker tells it on connect
                    continue
            try:
                conn.sendall(b"stop\n")
            except OSError:
                pass

    def kill(self, attempt: Attempt) -> None:
        for w in self.by_attempt.get(attempt.id, ()):
            with self.lock:
                if w.pid is None:
                    w.kill_pending = True
                    continue
            self._signal(w.pid, signal.SIGKILL)

    def poll(self, timeout_s: float) -> list[tuple[int, int, dict]]:
        out = []
        try:
            out.append(self.events.get(timeout=timeout_s))
            while True:
                out.append(self.events.get_nowait())
        except queue.Empty:
            pass
        return out

    def reap(self, stale: list[dict]) -> None:
        """Workers of a killed scheduler saw their channel end: they checkpoint and exit. Wait for
        them (none may write a checkpoint while its job restarts), then kill leftovers."""
        pids = [int(p) for a in stale for p in a.get("pids", ())]
        if not _wait_gone(pids, 30.0):
            for p in pids:
                if pid_is_worker(p):
                    self._signal(p, signal.SIGKILL)
            _wait_gone(pids, 10.0)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self.lock:
            live = [w for w in self.workers.values() if not w.exited]
            for w in live:
                w.kill_pending = w.kill_pending or w.pid is None  # (a fork whose pid comes later is killed then)
        for w in live:  # the controller stops attempts before closing; these are stragglers
            self._signal(w.pid, signal.SIGKILL)
        _wait_gone([w.pid for w in live if w.pid is not None], 10.0)  # none may still be writing
        try:
            self.zygote.stdin.close()
        except OSError:
            pass
        self.zygote.kill()  # it holds no job (a zygote still warming up would not read stdin)
        self.zygote.wait()
        try:
            self.listener.close()
        except OSError:
            pass
        self._zlog.close()
