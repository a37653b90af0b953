"""The address path: a run joins an existing multi-node Ray cluster (two nodes on 127.0.0.1)."""

import ray

from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer


def test_training_on_a_two_node_cluster_via_address(tmp_path, local_cluster):
    local_cluster.add_small_node()
    cfg = TrainConfig(harness="gym:CartPole-v1", steps=2 * 2 * 2 * 32, workers=2, progress=False,
                      address=local_cluster.address, eval_episodes=1,
                      ppo=dict(num_envs=2, num_steps=32, update_epochs=1))
    t = Trainer(cfg, tmp_path)
    nodes: list[set[str]] = []
    t.hooks.append(lambda tr: nodes.append({n for n, _ in ray.get([a.where.remote() for a in tr.pool.actors])}))
    res = t.run()
    assert ray.is_initialized() and len([n for n in ray.nodes() if n["Alive"]]) == 2
    # One CPU per node and one CPU per worker: the two workers must sit on both nodes.
    assert nodes and all(len(s) == 2 for s in nodes)
    assert res["env_steps"] == cfg.steps
