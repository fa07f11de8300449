"""Real execution on Ray (issue 6): a two-node ``ray.cluster_utils.Cluster`` on this machine,
each node carrying the custom resource that names its server; a job whose ring spans both
servers becomes a placement group with one bundle pinned to each node, its workers are actors
forming one gloo group, and it trains to completion. Bounded: one rigid job, small work."""

from __future__ import annotations

import sys

import pytest

from test_backends import query, ringsched_run

ray = pytest.importorskip("ray")

JOBS = """
jobs:
  - name: ring2
    entry: ringsched.backends.demo_jobs:digits_cnn
    batch: 32
    work: {samples: 6400}
    min_workers: 2
    max_workers: 2
"""


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    mb = 100 * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"server_0": 1}, "object_store_memory": mb, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=1, resources={"server_1": 1}, object_store_memory=mb)
    cluster.wait_for_nodes()
    try:
        yield cluster, {0: cluster.head_node.node_id, 1: worker.node_id}
    finally:
        cluster.shutdown()


def test_ray_two_nodes_end_to_end(two_nodes, tmp_path):
    cluster, node_of_server = two_nodes
    (tmp_path / "jobs.yaml").write_text(JOBS)
    state = tmp_path / "state"
    rc, s, err = ringsched_run("--backend", "ray", "--address", cluster.address, "--cluster", "2x1",
                               "--jobs", str(tmp_path / "jobs.yaml"), "--policy", "srtf", "--slot-s", "2",
                               "--state", str(state))
    assert rc == 0, err[-3000:]
    (job,) = s["jobs"]
    assert s["backend"] == "ray" and job["status"] == "completed" and job["completions"] == 1
    assert job["loss_last"] < job["loss_first"]
    assert job["step_time"][0]["measured_s"] > 0
    attempts = query(state, "SELECT placement, host, outcome FROM attempts")
    assert attempts and attempts[-1]["outcome"] == "done"
    placement = [int(x) for x in attempts[-1]["placement"].split()]
    nodes = attempts[-1]["host"].split()
    assert placement == [0, 1]
    # rank r ran on the node that carries server_{placement[r]}: bundles were pinned
    assert nodes == [node_of_server[p] for p in placement], (nodes, node_of_server)


def test_ray_cluster_without_server_resources_is_refused(two_nodes, tmp_path):
    cluster, _ = two_nodes
    rc, s, err = ringsched_run("--backend", "ray", "--address", cluster.address, "--cluster", "3x1",
                               "--jobs", "demo:1", timeout=120)
    assert rc == 2 and "server_2" in err and len(err.strip().splitlines()) == 1, err


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
