import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from polar.errors import PolarError
from polar.rl.config import NetworkConfig
from polar.rl.policy import Policy, load_policy, make_policy
from polar.rl.ppo.ppo_policy import PPOPolicy
from polar.rl.sac.sac_policy import SACPolicy


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
    p = make_policy(algo, env.observation_space, env.action_space, NetworkConfig(hidden=[16]), normalize_obs=True)
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
    p = make_policy("ppo", space, gym.spaces.Discrete(7), NetworkConfig(shared=True),
                    observation_kinds={"image": "index_grid"})
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
    p = make_policy("ppo", env.observation_space, env.action_space)
    tensors, config = p.to_state()
    tensors.pop(next(iter(tensors)))
    with pytest.raises(PolarError, match="missing"):
        Policy.from_state(tensors, config)
    with pytest.raises(PolarError, match="SAC needs a continuous"):
        make_policy("sac", env.observation_space, env.action_space)


DATA = Path(__file__).parent / "data"
CHECKOUT = Path(__file__).parents[2]


def assert_same_floats(actual: np.ndarray, desired: np.ndarray) -> None:
    """Equal up to float32 rounding: the references were recorded on another CPU, whose
    matmul kernels sum in another order (a 1e-6 relative difference, e.g. Intel vs AMD).
    Integer outputs (discrete actions) must match exactly."""
    if np.issubdtype(np.asarray(desired).dtype, np.integer):
        np.testing.assert_array_equal(actual, desired)
    else:
        np.testing.assert_allclose(actual, desired, rtol=1e-4, atol=1e-6)


def test_shipped_goto_skill_gives_the_recorded_actions():
    # goto@2's weights (shipped as goto@4) were saved by the single-class Policy (format 1),
    # whose manifest names `polar.rl.policy:Policy` as its loader; actions and values were
    # recorded before the split into per-algorithm policies.
    from polar.skills.store import SkillLibrary, load_skill_policy

    skill = SkillLibrary(CHECKOUT / "skills").get("goto@4")
    assert skill.policy.loader == "polar.rl.policy:Policy"
    policy = load_skill_policy(skill)
    assert isinstance(policy, PPOPolicy) and policy.observation_kinds["grid"] == "index_grid"
    ref = np.load(DATA / "goto2_reference.npz")
    obs = {"grid": ref["grid"], "target": ref["target"]}
    np.testing.assert_array_equal(policy.act(obs), ref["actions"])
    assert_same_floats(policy.value(obs), ref["values"])


@pytest.mark.parametrize("name,cls", [("v1_ppo_cartpole", "PPOPolicy"), ("v1_ppo_pendulum", "PPOPolicy"),
                                      ("v1_sac_pendulum", "SACPolicy")])
def test_format1_saved_policies_load_with_the_recorded_actions(name, cls):
    policy = load_policy(DATA / name)
    assert type(policy).__name__ == cls
    ref = np.load(DATA / name / "reference.npz")
    assert_same_floats(policy.act(ref["obs"]), ref["actions"])
    assert_same_floats(policy.value(ref["obs"]), ref["values"])
    # Saved again, it is format 2 with its kinds written down, and loads to the same actions.
    tensors, config = policy.to_state()
    assert config["format"] == "polar.rl.policy/2" and config["observation_kinds"] == {"obs": "vector"}
    assert_same_floats(Policy.from_state(tensors, config).act(ref["obs"]), ref["actions"])


def test_loader_builds_the_class_of_the_algorithm():
    env = gym.make("Pendulum-v1")
    sac = make_policy("sac", env.observation_space, env.action_space, NetworkConfig(hidden=[8]))
    tensors, config = sac.to_state()
    assert isinstance(Policy.from_state(tensors, config), SACPolicy)
    assert isinstance(SACPolicy.from_state(tensors, config), SACPolicy)
    with pytest.raises(PolarError, match="not a PPOPolicy"):
        PPOPolicy.from_state(tensors, config)
    with pytest.raises(PolarError, match="algo"):
        Policy.from_config(dict(config, algo="dqn"))


def _image_space(shape=(16, 16, 3)):
    return gym.spaces.Box(0, 255, shape, np.uint8)


def test_undeclared_uint8_image_is_read_as_pixels():
    # Before: any uint8 HxWx3 Box was a MiniGrid index grid clamped to 15, so an all-40 and
    # an all-250 image gave the same features.
    torch.manual_seed(0)
    p = make_policy("ppo", _image_space(), gym.spaces.Discrete(2), NetworkConfig(hidden=[16]))
    assert p.observation_kinds == {"obs": "image"}
    assert p.actor_enc.images and not p.actor_enc.grids
    dark, bright = np.full((16, 16, 3), 40, np.uint8), np.full((16, 16, 3), 250, np.uint8)
    with torch.no_grad():
        f = [p.actor_enc(p.prepare({"obs": x[None]})) for x in (dark, bright)]
    assert not torch.allclose(f[0], f[1])
    # Pixels are scaled to [0, 1] before the first convolution.
    enc = p.actor_enc.images["obs"]
    with torch.no_grad():
        direct = enc.head(enc.cnn(torch.as_tensor(bright[None]).permute(0, 3, 1, 2).float() / 255))
    torch.testing.assert_close(f[1], direct)
    # 84x84 Atari-size frames get the Nature-CNN's 8x8/4, 4x4/2, 3x3/1 convolutions.
    big = make_policy("ppo", _image_space((84, 84, 3)), gym.spaces.Discrete(2))
    convs = [m for m in big.actor_enc.images["obs"].cnn if isinstance(m, torch.nn.Conv2d)]
    assert [(c.kernel_size[0], c.stride[0]) for c in convs] == [(8, 4), (4, 2), (3, 1)]


def test_index_grid_is_declared_by_the_harness_spec():
    from polar.harnesses.registry import make_harness_env as make_env
    from polar.rl.common.observations import declared_kinds

    assert declared_kinds(make_env("minigrid:MiniGrid-Empty-5x5-v0")) == {"image": "index_grid"}
    assert declared_kinds(make_env("minigrid:MiniGrid-Empty-5x5-v0", rgb=True)) == {"image": "image"}
    space = gym.spaces.Dict({"image": _image_space((7, 7, 3)), "direction": gym.spaces.Discrete(4)})
    p = make_policy("ppo", space, gym.spaces.Discrete(3), observation_kinds={"image": "index_grid"})
    assert p.observation_kinds == {"direction": "discrete", "image": "index_grid"} and p.actor_enc.grids


@pytest.mark.parametrize("kinds,message", [({"imagee": "image"}, "imagee: no such observation key"),
                                           ({"image": "pixels"}, "unknown kind 'pixels'"),
                                           ({"direction": "vector"}, "is 'discrete'")])
def test_bad_observation_kinds_name_the_key(kinds, message):
    space = gym.spaces.Dict({"image": _image_space((7, 7, 3)), "direction": gym.spaces.Discrete(4)})
    with pytest.raises(PolarError, match=message):
        make_policy("ppo", space, gym.spaces.Discrete(3), observation_kinds=kinds)
