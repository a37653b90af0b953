"""Elastic training on a local multi-node Ray cluster (`ray.cluster_utils.Cluster`): a run
loses the node of one of its workers, loses another with no room left for the replacement,
then gains a node, and ends with its configured workers and a curve without gap or repeat.

One cluster and one run cover both the loss and the gain: each node is a raylet and each
worker a process importing torch, which cost seconds apiece on a 2-core machine. The cluster
(`local_cluster`, conftest.py) binds to 127.0.0.1 only, keeps its session in the test run's
own folder and fails the test if any of its processes outlives it."""

import json

import ray

from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer


def test_run_survives_node_loss_and_grows_back_when_a_node_joins(tmp_path, local_cluster):
    cluster = local_cluster
    nodes = {"b": cluster.add_small_node()}
    seen: list[tuple[int, int, frozenset[str]]] = []  # (update, workers up, their nodes) after each iteration

    def add(name: str) -> None:
        nodes[name] = cluster.add_small_node()

    def events(tr: Trainer) -> None:
        pool = tr.pool
        seen.append((tr.updates, len(pool.up), frozenset(pool.places.values())))
        if tr.updates == 2:
            # Room first (node c), then node b goes: its worker restarts on c at once.
            assert nodes["b"].node_id in pool.places.values()
            pool.replace_wait_s = 120.0  # a loaded machine may take long to start a worker
            add("c")
            cluster.remove_node(nodes["b"])
        elif tr.updates == 4:
            # Node c goes with no room left: its worker's replacement waits, the run goes on.
            assert nodes["c"].node_id in pool.places.values()
            pool.replace_wait_s = 2.0
            cluster.remove_node(nodes["c"])
        elif tr.updates == 7:
            add("d")
            # Let the pending replacement come up before the next collect, which must see it.
            assert ray.wait(list(pool._pending.values()), timeout=120)[0]

    cfg = TrainConfig(harness="gym:CartPole-v1", steps=10 * 2 * 2 * 32, workers=2, progress=False,
                      address=cluster.address, eval_episodes=1,
                      ppo=dict(num_envs=2, num_steps=32, update_epochs=1))
    t = Trainer(cfg, tmp_path)
    t.hooks.append(events)
    res = t.run()

    by_update = {u: (n, where) for u, n, where in seen}
    # Node b lost at update 2: both workers up again for update 3, neither on b, one on c.
    assert by_update[3][0] == 2 and nodes["b"].node_id not in by_update[3][1]
    assert nodes["c"].node_id in by_update[3][1]
    # Node c lost at update 4 with no room: one worker from update 5 until node d joins.
    assert [by_update[u][0] for u in (5, 6, 7)] == [1, 1, 1]
    # Node d joined after update 7: the pool is back to its two workers for update 8.
    assert by_update[8][0] == 2 and nodes["d"].node_id in by_update[8][1]
    assert t.pool.restarts == 2

    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if '"update"' in x]
    # The curve: one row per update, none missing or repeated, env steps rising by each
    # iteration's transitions (64 per worker up).
    assert [r["update"] for r in rows] == list(range(1, len(rows) + 1))
    steps = [r["env_steps"] for r in rows]
    assert [b - a for a, b in zip([0, *steps[:-1]], steps, strict=True)] == [r["transitions"] for r in rows]
    per_update = [64 * by_update[r["update"]][0] for r in rows]
    assert [r["transitions"] for r in rows] == per_update
    assert res["env_steps"] == steps[-1] >= cfg.steps
