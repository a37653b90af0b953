"""Ray rollout workers. One Ray session for the whole module (each init costs seconds)."""

import json

import pytest
import ray

from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(num_cpus=2, object_store_memory=100 * 1024 * 1024, include_dashboard=False,
             log_to_driver=False)
    yield
    ray.shutdown()


def test_two_workers_train(tmp_path):
    cfg = TrainConfig(harness="gym:CartPole-v1", steps=8 * 2 * 4 * 64, seed=0, workers=2, progress=False,
                      eval_episodes=5, ppo=dict(num_envs=4, num_steps=64, learning_rate=1e-3,
                                                num_minibatches=2, update_epochs=4))
    res = Trainer(cfg, tmp_path).run()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if '"update"' in x]
    assert len(rows) == 8 and rows[-1]["transitions"] == 2 * 4 * 64
    # Learning, not only running: a random CartPole policy returns ~22.
    assert rows[-1]["episode_return"] > 1.5 * rows[0]["episode_return"]
    assert res["env_steps"] == cfg.steps


def test_killed_worker_is_replaced_and_training_completes(tmp_path, caplog):
    cfg = TrainConfig(harness="gym:CartPole-v1", steps=4 * 2 * 2 * 32, seed=1, workers=2, progress=False,
                      eval_episodes=2, ppo=dict(num_envs=2, num_steps=32, update_epochs=1))
    t = Trainer(cfg, tmp_path)
    killed = []

    def kill_one(tr: Trainer) -> None:
        if tr.updates == 1 and not killed:
            killed.append(tr.pool.actors[0])
            ray.kill(tr.pool.actors[0], no_restart=True)

    t.hooks.append(kill_one)
    with caplog.at_level("WARNING", logger="polar.rl"):
        res = t.run()
    assert killed and t.pool.restarts >= 1
    assert t.pool.actors[0] is not killed[0]
    assert "died" in caplog.text
    assert res["env_steps"] == cfg.steps


def test_workers_on_different_harnesses(tmp_path):
    cfg = TrainConfig(harness=["minigrid:MiniGrid-Empty-5x5-v0", "minigrid:MiniGrid-Empty-6x6-v0"],
                      steps=2 * 2 * 16, workers=2, progress=False, eval_episodes=1,
                      ppo=dict(num_envs=2, num_steps=16, update_epochs=1))
    res = Trainer(cfg, tmp_path).run()
    assert [r["harness"] for r in res["per_harness"]] == list(cfg.harness)
    assert "success_rate" in res and res["env_steps"] == cfg.steps


def test_sac_with_workers(tmp_path):
    cfg = TrainConfig(algo="sac", harness="gym:Pendulum-v1", steps=120, workers=2, progress=False,
                      eval_episodes=1, network=dict(hidden=[16], activation="relu"),
                      sac=dict(learning_starts=40, batch_size=16, worker_steps=10))
    res = Trainer(cfg, tmp_path).run()
    # 6 calls x 20 transitions; gradient steps from the call that crosses learning_starts on.
    assert res["env_steps"] == 120 and res["updates"] == 100


def test_recurrent_ppo_on_workers_keeps_each_envs_memory(tmp_path):
    # Two workers' rollouts, each carrying its envs' memory: the concatenated batch's LSTM
    # re-run gives back every stored log-prob, and the memory task is learned.
    cfg = TrainConfig(harness="gym:tests.rl.rl_scripted_envs:CueEnv", steps=20 * 2 * 8 * 32, seed=0, workers=2,
                      progress=False, eval_episodes=100, network=dict(hidden=[32], shared=True, lstm=32),
                      ppo=dict(num_envs=8, num_steps=32, learning_rate=3e-3, num_minibatches=4, ent_coef=0.01))
    res = Trainer(cfg, tmp_path).run()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if '"update"' in x]
    assert max(r["first_ratio_dev"] for r in rows) < 1e-5
    assert res["success_rate"] >= 0.95  # a policy without memory gets 0.5


def test_sac_goes_on_without_a_lost_worker_until_its_replacement_is_up(tmp_path):
    # replace_wait_s=0: the killed worker's replacement is not waited for, so the next call
    # has one worker's batch; its columns in the replay buffer get no transitions meanwhile.
    cfg = TrainConfig(algo="sac", harness="gym:Pendulum-v1", steps=200, workers=2, progress=False,
                      eval_episodes=1, network=dict(hidden=[16], activation="relu"),
                      sac=dict(num_envs=1, learning_starts=40, batch_size=16, worker_steps=10))
    t = Trainer(cfg, tmp_path)
    calls: list[tuple[int, int]] = []  # (env steps, workers up) after each call

    def kill_one(tr: Trainer) -> None:
        calls.append((tr.env_steps, len(tr.pool.up)))
        if len(calls) == 2:
            tr.pool.replace_wait_s = 0.0
            ray.kill(tr.pool.actors[1], no_restart=True)

    t.hooks.append(kill_one)
    res = t.run()
    assert t.pool.restarts == 1 and calls[2][1] == 1
    assert not t.pool.renewed  # SAC read the replaced slot (and ended its columns' episodes)
    assert calls[2][0] - calls[1][0] == 10  # one worker's chunk
    assert t.algo.replay.count[0] == 10 * len(calls) and t.algo.replay.count[1] < 10 * len(calls)
    assert res["env_steps"] == calls[-1][0] >= 200
