"""The service on a two-node Ray cluster (``ray.cluster_utils.Cluster``) survives kill -9 (issue
17's target): the 20-job run of test_service_durable.py with ``--backend ray --address``. Ray
kills the actors and placement groups of a dead driver by itself, but asynchronously: the
restarted service waits for them to be gone (``RayLauncher.reap``) before it resumes a job, so
no rank of a killed service trains or checkpoints while its job runs again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_service_durable import check_every_job_completed_once, kill_twice_and_finish, query, report, start

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.backend, pytest.mark.slow]

SLOTS_PER_SERVER = 2  # the service's --cluster 2x2
DEADLINE_S = 300.0  # Ray starts a process per rank of every attempt: slower than the local backend


@pytest.fixture(scope="module")
def two_nodes():
    """Server i is node i, carrying the custom resource server_i (ray_backend's contract)."""
    from ray.cluster_utils import Cluster

    mb = 100 * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"server_0": SLOTS_PER_SERVER}, "object_store_memory": mb,
        "include_dashboard": False})
    cluster.add_node(num_cpus=1, resources={"server_1": SLOTS_PER_SERVER}, object_store_memory=mb)
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def orphaned_pids(state: Path) -> list[int]:
    rows = query(state, "SELECT pids FROM attempts WHERE outcome = 'orphaned'")
    return [int(p) for r in rows for p in json.loads(r["pids"])]


def test_ray_service_killed_twice_every_job_completes_once(two_nodes, tmp_path):
    t0 = time.monotonic()
    state = tmp_path / "state"
    backend = ("--backend", "ray", "--address", two_nodes.address)
    restarts = []

    def start_ray_service():
        proc, client = start(state, backend)
        # ready means recovered: no worker of the killed service may be running any more
        left = [p for p in orphaned_pids(state) if alive(p)]
        assert not left, f"ranks of the killed service still running: {left}"
        restarts.append(len(orphaned_pids(state)))
        return proc, client

    kill_twice_and_finish(state, start_ray_service, DEADLINE_S)
    assert restarts[0] == 0 and restarts[1] > 0 and restarts[2] > restarts[1], restarts
    errors = check_every_job_completed_once(state)
    hosts = {h for r in query(state, "SELECT host FROM attempts WHERE outcome = 'done'") for h in r["host"].split()}
    assert len(hosts) == 2, f"every rank ran on one node: {hosts}"
    for a in query(state, "SELECT id, job_id, workers FROM attempts WHERE outcome = 'done'"):
        for r in range(a["workers"]):  # each rank's output kept under the state directory
            assert (state / "logs" / a["job_id"] / f"attempt{a['id']}-rank{r}.log").is_file(), a
    print(report(errors, time.monotonic() - t0))


def test_reap_removes_placement_groups_left_by_another_scheduler(two_nodes, tmp_path, monkeypatch):
    """A placement group of an open attempt that Ray did not remove (here: its owner is still
    alive) is removed by ``reap`` after REAP_TIMEOUT_S, its actor killed; other names are kept."""
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from ringsched.backends import ray_backend
    from ringsched.cluster.model import load_cluster

    monkeypatch.setattr(ray_backend, "REAP_TIMEOUT_S", 1.0)
    launcher = ray_backend.RayLauncher(load_cluster("2x2"), tmp_path, address=two_nodes.address)
    try:
        stale = placement_group([{"server_1": 1}], name=launcher.pg_name(7))
        # attempt 7 of another service's state directory: not this one's to remove
        other = placement_group([{"server_0": 1}], name=ray_backend.placement_group_name(tmp_path / "other", 7))
        ray.get([stale.ready(), other.ready()], timeout=60)
        actor = launcher.actor_cls.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
            stale, placement_group_bundle_index=0)).remote()
        pid = ray.get(actor.pid.remote(), timeout=60)
        launcher.reap([{"id": 7, "job_id": "j", "pids": [pid]}])
        table = ray.util.placement_group_table()
        assert table[stale.id.hex()]["state"] == "REMOVED"
        assert table[other.id.hex()]["state"] == "CREATED"
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), "the actor of a removed placement group kept running"
    finally:
        launcher.close()


DRIVER = """
import sys, time, ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
from ringsched.backends.ray_backend import WorkerActor, placement_group_name
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
pg = placement_group([{"server_1": 1}], name=placement_group_name(sys.argv[2], 3))
ray.get(pg.ready(), timeout=60)
actor = ray.remote(num_cpus=0)(WorkerActor).options(scheduling_strategy=PlacementGroupSchedulingStrategy(
    pg, placement_group_bundle_index=0)).remote()
print(ray.get(actor.pid.remote(), timeout=60), flush=True)
time.sleep(600)
"""


def test_reap_after_kill_9_returns_once_the_dead_drivers_actors_are_gone(two_nodes, tmp_path):
    """A scheduler (here a bare driver) SIGKILLed with an attempt running: ``reap`` returns only
    once Ray has removed its placement group, and its rank is dead by then or soon after."""
    from ringsched.backends import ray_backend
    from ringsched.cluster.model import load_cluster

    state = tmp_path / "state"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, two_nodes.address, str(state)],
                              stdout=subprocess.PIPE, text=True)
    launcher = None
    try:
        pid = int(driver.stdout.readline())
        launcher = ray_backend.RayLauncher(load_cluster("2x2"), state, address=two_nodes.address)
        name = launcher.pg_name(3)
        assert launcher._live_placement_groups({name}), "the driver's placement group is not there"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        launcher.reap([{"id": 3, "job_id": "j", "pids": [pid]}])
        assert not launcher._live_placement_groups({name})
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), "a rank of the killed driver kept running"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        if launcher is not None:
            launcher.close()
