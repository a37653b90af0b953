import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from polar.errors import PolarError
from polar.rl.config import NetworkConfig
from polar.rl.policy import Policy, load_policy


def _goal_space():
    # A parameterised skill: grid + direction + a goal vector (e.g. one-hot target colour).
    return gym.spaces.Dict({
        "image": gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
        "direction": gym.spaces.Discrete(4),
        "goal": gym.spaces.Box(0, 1, (6,), np.float32),
        "mission": gym.spaces.Text(64),
    })


@pytest.mark.parametrize("algo,env_id", [("ppo", "CartPole-v1"), ("sac", "Pendulum-v1"), ("ppo", "Pendulum-v1")])
def test_state_roundtrip_through_safetensors_and_json(tmp_path, algo, env_id):
    env = gym.make(env_id)
    p = Policy(algo, env.observation_space, env.action_space, NetworkConfig(hidden=[16]), normalize_obs=True)
    obs = np.random.default_rng(0).normal(size=(5, *env.observation_space.shape)).astype(np.float32)
    p.update_normalizer({"obs": torch.as_tensor(obs)})
    tensors, config = p.to_state()
    save_file(tensors, str(tmp_path / "w.safetensors"))
    config = json.loads(json.dumps(config))  # must be plain JSON
    q = Policy.from_state(load_file(str(tmp_path / "w.safetensors")), config)
    np.testing.assert_allclose(q.value(obs), p.value(obs), rtol=1e-6)
    np.testing.assert_array_equal(q.act(obs), p.act(obs))
    single = q.act(obs[0])
    assert (isinstance(single, int) if algo == "ppo" and env_id == "CartPole-v1" else single.shape == env.action_space.shape)
    assert isinstance(q.value(obs[0]), float)


def test_goal_conditioned_dict_policy(tmp_path):
    space = _goal_space()
    p = Policy("ppo", space, gym.spaces.Discrete(7), NetworkConfig(shared=True))
    assert set(p.observation_space.spaces) == {"image", "direction", "goal"}  # text ignored
    rng = np.random.default_rng(0)
    obs = {"image": rng.integers(0, 11, (7, 7, 3)).astype(np.uint8), "direction": 2,
           "goal": np.eye(6, dtype=np.float32)[1], "mission": "go to the yellow key"}
    other_goal = dict(obs, goal=np.eye(6, dtype=np.float32)[4])
    assert p.value(obs) != p.value(other_goal)  # the goal is an input
    assert 0 <= p.act(obs) < 7
    p.save(tmp_path)
    q = load_policy(tmp_path)
    assert q.value(obs) == pytest.approx(p.value(obs))


def test_bad_saved_policy_is_a_clear_error(tmp_path):
    with pytest.raises(PolarError, match="no saved policy"):
        load_policy(tmp_path)
    env = gym.make("CartPole-v1")
    p = Policy("ppo", env.observation_space, env.action_space)
    tensors, config = p.to_state()
    tensors.pop(next(iter(tensors)))
    with pytest.raises(PolarError, match="missing"):
        Policy.from_state(tensors, config)
    with pytest.raises(PolarError, match="SAC needs a continuous"):
        Policy("sac", env.observation_space, env.action_space)
