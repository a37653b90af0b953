"""`local_cluster`: a real multi-node Ray cluster (`ray.cluster_utils.Cluster`) on this machine,
private to one test and checked to leave nothing behind.

- Loopback only: every node, and the driver, binds and talks to 127.0.0.1. On Linux Ray
  otherwise picks the machine's outward address; `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` gives
  it the loopback choice it makes on macOS (the spawned nodes read the variable, this
  process reads Ray's constant, so both are set).
- Private: the cluster's session folder and Ray's "current cluster" address file live under
  `RAY_TMPDIR`, which tests/conftest.py points into the test run's own folder, so the cluster
  is never found by `ray.init(address="auto")` elsewhere on the machine, and this test never
  joins another one (`RAY_ADDRESS` is cleared).
- Nothing left behind: every process of every node (GCS, raylets, their workers), snapshotted
  when a node goes and at the end, must be gone within seconds of the shutdown; otherwise the
  test fails naming them (after killing them).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

NODE = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024}
_GONE_WITHIN_S = 30.0


def _tree(node) -> set[psutil.Process]:
    """The live processes a Ray node started (and their children: the node's workers)."""
    found: set[psutil.Process] = set()
    for infos in node.all_processes.values():
        for info in infos:
            try:
                proc = psutil.Process(info.process.pid)
                found |= {proc, *proc.children(recursive=True)}
            except psutil.NoSuchProcess:
                continue
    return found


@pytest.fixture
def local_cluster(monkeypatch) -> Iterator:
    import ray
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv(ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, "0")
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
    seen: set[psutil.Process] = set()

    class TrackedCluster(Cluster):
        def add_small_node(self):
            """One more node of one CPU, up before this returns."""
            node = self.add_node(**NODE)
            self.wait_for_nodes()
            return node

        def remove_node(self, node, allow_graceful: bool = True) -> None:
            seen.update(_tree(node))  # its workers must end with it
            super().remove_node(node, allow_graceful)

    cluster = TrackedCluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    try:
        session = Path(cluster.head_node.get_session_dir_path())
        assert session.is_relative_to(os.environ["RAY_TMPDIR"]), session
        assert cluster.address.startswith("127.0.0.1:"), cluster.address
        yield cluster
    finally:
        for node in [cluster.head_node, *cluster.worker_nodes]:
            if node is not None:
                seen.update(_tree(node))
        ray.shutdown()
        cluster.shutdown()
        found = len(seen)
        _, alive = psutil.wait_procs(list(seen), timeout=_GONE_WITHIN_S)
        for proc in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
    assert found, "no process of the cluster was found: the leftover check would see nothing"
    assert not alive, f"Ray processes left behind by the cluster: {[p.pid for p in alive]}"
