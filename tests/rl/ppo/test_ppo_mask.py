"""PPO's action mask (`action_mask` in the observation): a masked action is never sampled or
taken greedily and has probability 0 in the loss; a policy without the key is unchanged."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.common.networks import NetworkConfig
from polar.rl.ppo.ppo_policy import MASKED_LOGIT, PPOPolicy

SPACE = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (3,), np.float32), "action_mask": gym.spaces.MultiBinary(5)})


def _obs(n: int, mask: list[int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"x": rng.uniform(-1, 1, (n, 3)).astype(np.float32), "action_mask": np.tile(np.array(mask, np.int8), (n, 1))}


def test_masked_actions_are_never_taken_and_have_no_probability() -> None:
    torch.manual_seed(0)
    policy = PPOPolicy(SPACE, gym.spaces.Discrete(5), NetworkConfig(hidden=[16]))
    assert policy.masked and not policy.fused  # the numpy step and the analytic gradient do not mask
    obs = policy.prepare(_obs(4000, [0, 1, 0, 1, 0]))
    actions, logp, _ = policy.step(obs)
    assert set(actions.tolist()) == {1, 3}
    assert torch.all(logp > -20)
    assert set(policy.step(obs, deterministic=True)[0].tolist()) <= {1, 3}
    lp, entropy, _ = policy.evaluate_actions(obs, torch.zeros(4000, dtype=torch.long))  # action 0: masked
    assert torch.all(lp < MASKED_LOGIT / 2) and torch.all(entropy <= np.log(2) + 1e-5)
    single = {k: v[:1] for k, v in _obs(1, [0, 0, 0, 0, 1]).items()}
    assert policy.act({k: v[0] for k, v in single.items()}, deterministic=False) == 4  # act() masks too


def test_recurrent_policy_masks_too() -> None:
    torch.manual_seed(0)
    policy = PPOPolicy(SPACE, gym.spaces.Discrete(5), NetworkConfig(hidden=[16], lstm=8))
    obs = policy.prepare(_obs(500, [1, 0, 0, 0, 0]))
    actions, _, _, memory = policy.step_recurrent(obs, policy.initial_memory(500), torch.ones(500, dtype=torch.bool))
    assert set(actions.tolist()) == {0}
    logp, _, _ = policy.evaluate_sequence(obs, torch.full((1, 500), 2), policy.initial_memory(500),
                                          torch.ones(1, 500, dtype=torch.bool))
    assert torch.all(logp < MASKED_LOGIT / 2)


def test_no_mask_key_no_masking_and_a_wrong_mask_is_refused() -> None:
    plain = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (3,), np.float32)})
    assert not PPOPolicy(plain, gym.spaces.Discrete(5), NetworkConfig(hidden=[16])).masked
    with pytest.raises(ValueError, match="action_mask"):
        PPOPolicy(SPACE, gym.spaces.Discrete(4), NetworkConfig(hidden=[16]))
