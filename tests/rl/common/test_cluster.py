"""The address path: a run joins an existing multi-node Ray cluster (two nodes on 127.0.0.1)."""

import ray
from ray.cluster_utils import Cluster

from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer


def test_training_on_a_two_node_cluster_via_address(tmp_path, monkeypatch):
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024,
                                                             "include_dashboard": False})
    cluster.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024)
    cluster.wait_for_nodes()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        cfg = TrainConfig(harness="gym:CartPole-v1", steps=2 * 2 * 2 * 32, workers=2, progress=False,
                          address=cluster.address, eval_episodes=1,
                          ppo=dict(num_envs=2, num_steps=32, update_epochs=1))
        t = Trainer(cfg, tmp_path)
        nodes: list[set[str]] = []
        t.hooks.append(lambda tr: nodes.append({n for n, _ in ray.get([a.where.remote() for a in tr.pool.actors])}))
        res = t.run()
        assert ray.is_initialized() and len([n for n in ray.nodes() if n["Alive"]]) == 2
        # One CPU per node and one CPU per worker: the two workers must sit on both nodes.
        assert nodes and all(len(s) == 2 for s in nodes)
        assert res["env_steps"] == cfg.steps
    finally:
        ray.shutdown()
        cluster.shutdown()
