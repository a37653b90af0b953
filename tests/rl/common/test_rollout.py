import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

from polar.rl.common.rollout import Collector
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.ppo.collect import collect_ppo
from polar.rl.ppo.config import PPOConfig
from polar.rl.ppo.ppo import PPO
from tests.rl.rl_scripted_envs import CountingEnv, ForeverEnv


def transitions(mode: AutoresetMode, steps: int):
    env = SyncVectorEnv([CountingEnv, CountingEnv, CountingEnv], autoreset_mode=mode)
    col = Collector(env, seed=3)
    per_env: list[list[tuple]] = [[] for _ in range(3)]
    for _ in range(steps):
        obs = col.current_obs()["obs"]
        actions = (obs[:, 1] % 2).astype(np.int64)  # a function of the observation only
        tr = col.step(actions)
        for i in np.flatnonzero(tr.valid):
            per_env[i].append((tuple(tr.obs["obs"][i]), int(actions[i]), float(tr.reward[i]),
                               tuple(tr.next_obs["obs"][i]), bool(tr.terminated[i]), bool(tr.truncated[i])))
    return per_env, col.pop_stats()


def test_next_step_and_same_step_store_identical_transitions():
    same, same_stats = transitions(AutoresetMode.SAME_STEP, 40)
    nxt, next_stats = transitions(AutoresetMode.NEXT_STEP, 50)
    for i in range(3):
        n = len(same[i])
        assert n == 40 and len(nxt[i]) >= n
        assert nxt[i][:n] == same[i]
        # The real final observation is stored at episode ends (t == 4 or t == 6), never the reset one.
        ends = [tr for tr in same[i] if tr[4] or tr[5]]
        assert ends and all(tr[3][1] in (4.0, 6.0) for tr in ends)
        assert not any(tr[0][1] == 0 and tr[2] == 0 for tr in nxt[i])  # no reset pseudo-step
    k = len(same_stats.returns)
    assert next_stats.returns[:k] == same_stats.returns
    assert same_stats.successes and set(same_stats.successes) <= {0.0, 1.0}


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_truncation_bootstraps_from_real_final_observation(mode):
    torch.manual_seed(0)
    env = SyncVectorEnv([lambda: TimeLimit(CountingEnv(), 100)] * 2, autoreset_mode=mode)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space)
    batch = collect_ppo(policy, Collector(env, seed=0), 20)
    truncated = (batch.dones & ~batch.terminated & batch.valid).numpy()
    assert truncated.any()
    for t, i in zip(*np.nonzero(truncated), strict=True):
        # The final obs of a truncated CountingEnv episode is [episode, 6].
        obs_t = batch.obs["obs"][t, i].numpy()
        final = np.array([obs_t[0], 6.0], np.float32)
        expected = float(policy.value(final))
        assert float(batch.next_values[t, i]) == pytest.approx(expected, abs=1e-5)


def test_infinite_horizon_value_approaches_geometric_sum():
    """Reward 1 forever, TimeLimit 8: with a correct truncation bootstrap V(s) -> 1/(1-gamma)."""
    torch.manual_seed(0)
    gamma = 0.8
    env = SyncVectorEnv([lambda: TimeLimit(ForeverEnv(), 8)] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space, NetworkConfig(hidden=[16]))
    ppo = PPO(policy, PPOConfig(learning_rate=0.05, gamma=gamma, clip_vloss=False, num_minibatches=1,
                                update_epochs=10, gae_lambda=0.95))
    col = Collector(env, seed=0)
    for _ in range(40):
        ppo.update(collect_ppo(policy, col, 16))
    assert policy.value(np.zeros(1, np.float32)) == pytest.approx(1 / (1 - gamma), rel=0.1)


def test_disabled_autoreset_is_rejected():
    env = SyncVectorEnv([CountingEnv], autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match="autoreset_mode"):
        Collector(env, seed=0)


def test_dict_obs_with_text_key_is_filtered():
    from polar.rl.common.envs import make_vector_env

    env = make_vector_env(["minigrid:MiniGrid-DoorKey-5x5-v0"] * 2)
    assert isinstance(env.single_observation_space, gym.spaces.Dict)
    assert "mission" not in env.single_observation_space.spaces
    col = Collector(env, seed=0)
    assert col.current_obs()["image"].shape == (2, 7, 7, 3)


def test_worker_batches_concatenate_along_the_env_axis():
    from polar.rl.common.batches import RolloutBatch, Transitions
    from polar.rl.sac.collect import collect_sac

    env = SyncVectorEnv([CountingEnv] * 2, autoreset_mode=AutoresetMode.SAME_STEP)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space)
    a, b = collect_ppo(policy, Collector(env, seed=0), 12), collect_ppo(policy, Collector(env, seed=5), 12)
    both = RolloutBatch.concat([a, b])
    assert both.obs["obs"].shape == (12, 4, 2) and both.values.shape == (12, 4)
    assert torch.equal(both.rewards[:, 2:], b.rewards) and both.num_transitions == 48
    assert len(both.stats.returns) == len(a.stats.returns) + len(b.stats.returns)
    pend = SyncVectorEnv([lambda: gym.make("Pendulum-v1")], autoreset_mode=AutoresetMode.SAME_STEP)
    sac = make_policy("sac", pend.single_observation_space, pend.single_action_space)
    t = [collect_sac(sac, Collector(pend, seed=s), 3) for s in (0, 1)]
    merged = Transitions.concat(t)
    assert merged.next_obs["obs"].shape == (3, 2, 3) and merged.actions.shape == (3, 2, 1)
    np.testing.assert_array_equal(merged.rewards[:, 1], t[1].rewards[:, 0])
