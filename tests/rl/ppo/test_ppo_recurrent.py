"""Recurrent PPO: the LSTM re-run over a rollout gives back the stored log-probs, memory is
reset where episodes start, and a memory task is learned that a feedforward policy cannot."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from pydantic import ValidationError

from polar.rl.common.batches import RolloutBatch
from polar.rl.common.evaluate import evaluate_policy
from polar.rl.common.rollout import Collector
from polar.rl.config import NetworkConfig, TrainConfig
from polar.rl.policy import Policy, make_policy
from polar.rl.ppo.collect import collect_ppo
from polar.rl.ppo.config import PPOConfig
from polar.rl.ppo.ppo import PPO
from polar.rl.ppo.ppo_recurrent import RecurrentPPO
from tests.rl.rl_scripted_envs import CueEnv


def _setup(make_env, lstm: int, mode=AutoresetMode.NEXT_STEP, envs: int = 8, seed: int = 0):
    torch.manual_seed(seed)
    env = SyncVectorEnv([make_env] * envs, autoreset_mode=mode)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space,
                         NetworkConfig(hidden=[32], lstm=lstm, shared=True))
    return policy, Collector(env, seed=seed)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_the_lstm_rerun_gives_the_stored_log_probs(mode):
    # CartPole's random-policy episodes last ~20 steps: a 48-step rollout holds several
    # resets per env, and the second rollout starts from memory carried over from the first.
    policy, col = _setup(lambda: gym.make("CartPole-v1"), lstm=16, mode=mode)
    ppo = RecurrentPPO(policy, PPOConfig(num_minibatches=4, update_epochs=2))
    for _ in range(3):
        batch = collect_ppo(policy, col, 48)
        assert batch.starts is not None and batch.memory is not None
        assert batch.starts[0].all() or _ > 0 and batch.starts.any()
        m = ppo.update(batch)
        assert m["first_ratio_dev"] < 1e-5
        assert m["transitions"] == batch.num_transitions


def test_memory_is_reset_where_an_episode_starts():
    # The memory an env carries into a new episode must not change what the policy does there.
    policy, _ = _setup(lambda: gym.make("CartPole-v1"), lstm=8)
    obs = {"obs": torch.randn(6, 4)}
    zero = policy.initial_memory(3)
    old = torch.randn(2, 3, 8)
    starts = torch.ones(3, 2, dtype=torch.bool)
    starts[1, 0] = False
    with torch.no_grad():
        a, _, _ = policy.evaluate_sequence(obs, torch.zeros(3, 2, dtype=torch.long), zero[:, :2], starts[:, :2])
        b, _, _ = policy.evaluate_sequence(obs, torch.zeros(3, 2, dtype=torch.long), old[:, :2], starts[:, :2])
        c, _, _ = policy.evaluate_sequence(obs, torch.zeros(3, 2, dtype=torch.long), old[:, :2],
                                           torch.zeros(3, 2, dtype=torch.bool))
    assert torch.equal(a, b)  # a start at t = 0 wipes the carried memory
    assert not torch.allclose(b, c)  # without starts, the carried memory is read


def test_act_remembers_until_reset_and_survives_save_and_load(tmp_path):
    policy, _ = _setup(lambda: CueEnv(), lstm=8)
    policy.save(tmp_path)
    loaded = Policy.load(tmp_path)
    assert loaded.recurrent and loaded.network_cfg.lstm == 8
    seq = [np.array([1, 0, 0], np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32)]

    def values(p):
        p.reset()
        out = []
        for o in seq:
            out.append(p.value(o))
            p.act(o)
        return out

    first = values(policy)
    assert values(policy) == first  # reset: the same episode gives the same values
    assert values(loaded) == pytest.approx(first)
    assert len(set(first)) == 3  # the memory moves with every step


def _train(lstm: int, iterations: int, seed: int = 0) -> float:
    policy, col = _setup(lambda: CueEnv(delay=3), lstm=lstm, envs=16, seed=seed)
    cfg = PPOConfig(num_minibatches=4, update_epochs=4, learning_rate=3e-3, ent_coef=0.01)
    ppo = (RecurrentPPO if lstm else PPO)(policy, cfg)
    for _ in range(iterations):
        ppo.update(collect_ppo(policy, col, 32))
    return evaluate_policy(policy, "gym:tests.rl.rl_scripted_envs:CueEnv", 200, seed=10_000)["success_rate"]


def test_recurrent_ppo_learns_what_a_feedforward_policy_cannot():
    # 16 envs x 32 steps x 40 updates = 20k env steps (about 4k episodes of 5 steps).
    assert _train(lstm=32, iterations=40) >= 0.95
    assert _train(lstm=0, iterations=40) <= 0.65


def test_worker_batches_concatenate_their_memories():
    policy, col = _setup(lambda: gym.make("CartPole-v1"), lstm=4, envs=2)
    policy2, col2 = _setup(lambda: gym.make("CartPole-v1"), lstm=4, envs=3, seed=1)
    both = RolloutBatch.concat([collect_ppo(policy, col, 8), collect_ppo(policy, col2, 8)])
    assert both.memory is not None and both.memory.shape == (2, 5, 4)
    assert both.starts is not None and both.starts.shape == (8, 5)


def test_config_errors_name_the_field():
    with pytest.raises(ValidationError, match="network.lstm"):
        TrainConfig(algo="sac", harness="gym:Pendulum-v1", network={"lstm": 8})
    with pytest.raises(ValidationError, match="ppo.num_minibatches"):
        TrainConfig(harness="gym:CartPole-v1", network={"lstm": 8}, ppo={"num_envs": 2, "num_minibatches": 4})
