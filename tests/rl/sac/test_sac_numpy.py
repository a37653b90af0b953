import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.common.numpy_forward import MAX_BATCH
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.sac.sac_numpy import rollout_actions

OBS, ACT = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-2.0, 2.0, (3,), np.float32)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("n", [1, 8, MAX_BATCH + 1])
def test_the_numpy_sample_is_the_policys(activation, n):
    torch.manual_seed(0)
    policy = make_policy("sac", OBS, ACT, NetworkConfig(hidden=[32, 24], activation=activation))
    with torch.no_grad():
        policy.actor_log_std.weight.mul_(8)  # log-stds spread over their range
    obs = {"obs": torch.randn(n, 5)}
    torch.manual_seed(1)
    a = rollout_actions(policy, obs)
    torch.manual_seed(1)  # the same draws from torch's generator
    with torch.no_grad():
        expected = policy.sample(obs)[0]
    torch.testing.assert_close(a, expected, rtol=1e-5, atol=1e-6)
    with torch.no_grad():  # the optimizer's in-place steps reach the numpy path
        policy.actor_head.bias.add_(0.5)
    torch.manual_seed(1)
    moved = rollout_actions(policy, obs)
    assert (moved - a).abs().max() > 1e-3


def test_image_policies_take_sample():
    space = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    policy = make_policy("sac", space, ACT, NetworkConfig(hidden=[8], activation="relu"))
    obs = policy.prepare({"obs": np.zeros((2, 16, 16, 3), np.uint8)})
    torch.manual_seed(1)
    a = rollout_actions(policy, obs)
    torch.manual_seed(1)
    with torch.no_grad():
        torch.testing.assert_close(a, policy.sample(obs)[0])
