"""Ray backend: servers are Ray nodes, a ring embedding is a placement group, workers are actors.

Server ``i`` of the cluster is the Ray node that advertises the custom resource
``server_i`` (as many units as the server has GPU slots), e.g. a node started with
``ray start --resources '{"server_0": 8}'``. Without ``--address`` a local Ray instance is
started whose single node carries every ``server_i`` resource (servers emulated on one
machine, like the local backend).

An attempt of a job on placement (s_0, ..., s_{w-1}) becomes a placement group of ``w``
bundles ``{"server_{s_r}": 1}``: the custom resource pins bundle ``r`` to server ``s_r``'s
node, and slots are never oversubscribed because the resource is finite. Rank ``r`` is an
actor scheduled into bundle ``r``; rank 0 picks a free port on its node and every rank joins
the gloo group there, then runs the same worker body as the local backend
(``worker.run_worker``). Actors are threaded (``max_concurrency=2``) so the controller can
drain their events and ask them to stop while they train. When every rank has ended, the
actors are killed and the placement group removed.

Ray's ownership model cleans up after a dead scheduler: its actors and placement groups are
not detached, so they die with it, and their jobs resume from their last periodic checkpoint
(not one taken at the kill, as on the local backend). The cleanup is asynchronous (the GCS has
to notice the dead driver), so a restarted scheduler first waits in ``reap`` until the
placement groups of the attempts its predecessor left open are removed, and removes (killing
their actors) those still there after ``REAP_TIMEOUT_S``: no rank of an old attempt trains
or checkpoints while its job runs again. It finds them by name: ``ringsched-TAG-aID``, where
TAG is a digest of the state directory (two services sharing a Ray cluster never touch each
other's) and ID the journaled attempt id. Checkpoints (rank 0) and every rank's stdout and
stderr (``STATE/logs/JOB/attemptN-rankR.log``) are written to ``--state``, which must be on a
filesystem every node sees (trivially so on one machine).
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from ringsched.backends import gpu_slots
from ringsched.backends.launcher import Attempt, Launcher, LauncherError
from ringsched.backends.faults import LAUNCH_FAILED
from ringsched.cluster.model import Cluster
from ringsched.errors import InputError

DRAIN_EVERY_S = 0.25
READY_TIMEOUT_S = 120.0
REAP_TIMEOUT_S = 30.0  # how long a dead scheduler's placement groups may take to go by themselves
REAP_POLL_S = 0.2


def server_resource(i: int) -> str:
    return f"server_{i}"


def placement_group_name(state_dir: Path, attempt_id: int) -> str:
    """The placement group of attempt ``attempt_id`` journaled in ``state_dir``: a digest of the
    directory names it apart from any other service's sharing the Ray cluster."""
    tag = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:10]
    return f"ringsched-{tag}-a{attempt_id}"


class WorkerActor:
    """One rank (wrapped with ``ray.remote`` by the launcher)."""

    def __init__(self):
        import os

        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = "1"
        self._events: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def rendezvous(self, loopback: bool) -> tuple[str, int, int]:
        """(address, a free port there, pid) for rank 0's gloo store: 127.0.0.1 on a local Ray
        instance, the node's IP on a cluster the user named (its other nodes must reach it)."""
        import os
        import socket

        import ray

        ip = "127.0.0.1" if loopback else ray.util.get_node_ip_address()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
            port = s.getsockname()[1]
        return ip, int(port), os.getpid()

    def run(self, cfg: dict) -> int:
        import ray

        from ringsched.backends.worker import output_to_log, run_worker

        output_to_log(cfg.get("log_path"))  # this actor's process is this rank's alone
        node = ray.get_runtime_context().get_node_id()

        def emit(ev: dict) -> None:
            if ev.get("ev") == "started":
                ev = dict(ev, node=node)
            self._emit(ev)

        return run_worker(cfg, emit, self._stop)

    def _emit(self, ev: dict) -> None:
        with self._lock:
            self._events.append(ev)

    def drain(self) -> list[dict]:
        with self._lock:
            out, self._events = self._events, []
        return out

    def stop(self) -> None:
        self._stop.set()

    def pid(self) -> int:
        import os

        return os.getpid()


class _RayAttempt:
    def __init__(self, attempt: Attempt, pg, actors):
        self.attempt = attempt
        self.pg = pg
        self.actors = actors
        self.refs: list = []  # run() per rank, once launched
        self.ref_rank: dict = {}
        self.launched = threading.Event()
        self.launch_error: str | None = None
        self.exited: set[int] = set()
        self.stop_requested = False
        self.last_drain = 0.0
        self.draining: dict[int, object] = {}  # rank -> its drain() not yet answered


class RayLauncher(Launcher):
    name = "ray"

    def __init__(self, cluster: Cluster, state_dir: str | Path, *, address: str | None = None,
                 object_store_mb: int = 100):
        import ray

        self.ray = ray
        self.cluster = cluster
        self.state_dir = Path(state_dir)
        self.started_ray = False
        self.loopback = address is None  # a local instance: everything on 127.0.0.1
        # a local instance emulates every server on this machine; on a cluster each node is one server
        self.numbering = gpu_slots.MACHINE if self.loopback else gpu_slots.NODE
        if not ray.is_initialized():
            kwargs = dict(include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                          configure_logging=True)
            if address is None:
                res = {server_resource(i): float(g) for i, g in enumerate(cluster.gpus)}
                # "local": always a new instance (never one another program left running here)
                ray.init(address="local", resources=res, object_store_memory=object_store_mb * 1024 * 1024,
                         _node_ip_address="127.0.0.1", **kwargs)
            else:
                try:
                    ray.init(address=address, **kwargs)
                except (ConnectionError, RuntimeError, ValueError) as e:
                    raise InputError(f"cannot connect to Ray at {address!r}: {e}", field="address") from None
            self.started_ray = True
        have = ray.cluster_resources()
        missing = [f"{server_resource(i)} ({int(g)})" for i, g in enumerate(cluster.gpus)
                   if have.get(server_resource(i), 0.0) < g]
        if missing:
            if self.started_ray:
                ray.shutdown()
            raise InputError("the Ray cluster lacks the custom resources naming the servers: "
                             + ", ".join(missing) + " (start each node with "
                             "--resources '{\"server_I\": SLOTS}')", field="address")
        # Ray hides every GPU (CUDA_VISIBLE_DEVICES="") from an actor that asks for none; the
        # server_i resources are the slots here, so the worker binds its slot's GPU itself
        self.actor_cls = ray.remote(num_cpus=0, max_concurrency=2, runtime_env={
            "env_vars": {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}})(WorkerActor)
        self.attempts: dict[int, _RayAttempt] = {}
        self.pending: list[tuple[int, int, dict]] = []
        self.lock = threading.Lock()
        self.closed = False

    def pg_name(self, attempt_id: int) -> str:
        return placement_group_name(self.state_dir, attempt_id)

    # ------------------------------------------------------------------ Launcher
    def start(self, attempt: Attempt, config: dict) -> None:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        log_dir = Path(config.pop("log_dir", self.state_dir / "logs"))  # (on the shared filesystem)
        bundles = [{server_resource(s): 1.0} for s in attempt.placement]
        pg = placement_group(bundles, strategy="PACK", name=self.pg_name(attempt.id))
        actors = [self.actor_cls.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
                      pg, placement_group_bundle_index=r), name=None).remote() for r in range(attempt.world)]
        ra = _RayAttempt(attempt, pg, actors)
        self.attempts[attempt.id] = ra
        # waiting for the placement group and the actors takes seconds: not in the control loop
        threading.Thread(target=self._launch, args=(ra, config, log_dir), daemon=True).start()

    def _launch(self, ra: _RayAttempt, config: dict, log_dir: Path) -> None:
        ray = self.ray
        att = ra.attempt
        try:
            ray.get(ra.pg.ready(), timeout=READY_TIMEOUT_S)
            ip, port, pid0 = ray.get(ra.actors[0].rendezvous.remote(self.loopback), timeout=READY_TIMEOUT_S)
            refs = []
            for rank, actor in enumerate(ra.actors):
                cfg = dict(config, rank=rank, world=att.world, master_addr=ip, master_port=port,
                           log_path=str(log_dir / f"attempt{att.id}-rank{rank}.log"), gpu_numbering=self.numbering)
                refs.append(actor.run.remote(cfg))
            with self.lock:
                ra.refs = refs
                ra.ref_rank = {ref: r for r, ref in enumerate(refs)}
                stop = ra.stop_requested
            if stop:
                for a in ra.actors:
                    a.stop.remote()
            pids = ray.get([a.pid.remote() for a in ra.actors], timeout=READY_TIMEOUT_S)
            with self.lock:
                for r, pid in enumerate(pids):
                    self.pending.append((att.id, r, {"ev": "spawned", "pid": int(pid)}))
        except Exception as e:  # noqa: BLE001 - reported as the attempt's failure
            with self.lock:
                ra.launch_error = f"{type(e).__name__}: {e}"
        finally:
            ra.launched.set()

    def stop(self, attempt: Attempt) -> None:
        ra = self.attempts.get(attempt.id)
        if ra is None:
            return
        with self.lock:
            ra.stop_requested = True
            launched = bool(ra.refs)
        if launched:
            for a in ra.actors:
                a.stop.remote()

    def kill(self, attempt: Attempt) -> None:
        ra = self.attempts.get(attempt.id)
        if ra is not None:
            self._kill_actors(ra)

    def _kill_actors(self, ra) -> None:
        for a in ra.actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass

    def poll(self, timeout_s: float) -> list[tuple[int, int, dict]]:
        ray = self.ray
        out: list[tuple[int, int, dict]] = []
        with self.lock:
            out.extend(self.pending)
            self.pending = []
        now = time.monotonic()
        for aid, ra in list(self.attempts.items()):
            if ra.launched.is_set() and ra.launch_error is not None and not ra.exited:
                out.append((aid, -1, {"ev": "error", "kind": "launch", "error": ra.launch_error}))
                for r in range(ra.attempt.world):
                    ra.exited.add(r)
                    out.append((aid, r, {"ev": "exit", "rc": LAUNCH_FAILED}))
                self._cleanup(aid)
                continue
            if not ra.refs:
                continue
            remaining = [ref for ref in ra.refs if ra.ref_rank[ref] not in ra.exited]
            done, _ = ray.wait(remaining, num_returns=len(remaining), timeout=0) if remaining else ([], [])
            out.extend(self._answered_drains(ra))
            if now - ra.last_drain >= DRAIN_EVERY_S:
                ra.last_drain = now
                for r in range(ra.attempt.world):
                    if r not in ra.exited and r not in ra.draining:
                        ra.draining[r] = ra.actors[r].drain.remote()
            for ref in done:
                rank = ra.ref_rank[ref]
                out.extend(self._last_events(ra, rank))
                try:
                    rc = int(ray.get(ref))
                except Exception as e:  # noqa: BLE001 - the actor died (killed, node lost)
                    rc = -1
                    out.append((aid, rank, {"ev": "error", "kind": "comm", "error": f"actor died: {type(e).__name__}"}))
                ra.exited.add(rank)
                out.append((aid, rank, {"ev": "exit", "rc": rc}))
            if len(ra.exited) >= ra.attempt.world:
                self._cleanup(aid)
        if not out:
            time.sleep(timeout_s)
        return out

    def _answered_drains(self, ra: _RayAttempt) -> list[tuple[int, int, dict]]:
        """Events of the drains the ranks have answered; never waits (a rank whose actor is
        still starting answers once it is up, and the control loop must not stall meanwhile)."""
        if not ra.draining:
            return []
        ray = self.ray
        ready, _ = ray.wait(list(ra.draining.values()), num_returns=len(ra.draining), timeout=0)
        ready = set(ready)
        out = []
        for r, ref in list(ra.draining.items()):
            if ref in ready:
                del ra.draining[r]
                out.extend(self._events(ra, r, ref))
        return out

    def _last_events(self, ra: _RayAttempt, rank: int) -> list[tuple[int, int, dict]]:
        """Everything a rank whose run has returned still holds (before its exit event); its
        actor is idle, so it answers at once."""
        refs = [ra.draining.pop(rank)] if rank in ra.draining else []
        refs.append(ra.actors[rank].drain.remote())
        return [ev for ref in refs for ev in self._events(ra, rank, ref)]

    def _events(self, ra: _RayAttempt, rank: int, ref) -> list[tuple[int, int, dict]]:
        try:
            evs = self.ray.get(ref, timeout=30)
        except Exception:  # noqa: BLE001 - a dead actor has nothing more to say
            return []
        return [(ra.attempt.id, rank, ev) for ev in evs]

    def _cleanup(self, aid: int) -> None:
        from ray.util.placement_group import remove_placement_group

        ra = self.attempts.pop(aid, None)
        if ra is None:
            return
        self._kill_actors(ra)
        try:
            remove_placement_group(ra.pg)
        except Exception:  # noqa: BLE001
            pass

    def reap(self, stale: list[dict]) -> None:
        """Recovery: wait until the placement groups of the attempts a dead scheduler left open
        are gone (their actors with them), removing any left after ``REAP_TIMEOUT_S``."""
        from ray.util.placement_group import PlacementGroup, remove_placement_group

        names = {self.pg_name(int(a["id"])) for a in stale}
        for pg_hex in self._wait_removed(names):
            remove_placement_group(PlacementGroup(self.ray.PlacementGroupID.from_hex(pg_hex)))
        if self._wait_removed(names):
            raise LauncherError(f"Ray did not remove the placement groups of the previous scheduler's "
                                f"attempts ({', '.join(sorted(names))}) within {REAP_TIMEOUT_S:g} s")

    def _wait_removed(self, names: set[str]) -> list[str]:
        """Wait up to ``REAP_TIMEOUT_S`` for these placement groups to be removed; those still there."""
        deadline = time.monotonic() + REAP_TIMEOUT_S
        while (live := self._live_placement_groups(names)) and time.monotonic() < deadline:
            time.sleep(REAP_POLL_S)
        return live

    def _live_placement_groups(self, names: set[str]) -> list[str]:
        table = self.ray.util.placement_group_table()
        return [pg_id for pg_id, info in table.items() if info.get("name") in names and info.get("state") != "REMOVED"]

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for aid in list(self.attempts):
            self._cleanup(aid)
        if self.started_ray:
            self.ray.shutdown()
