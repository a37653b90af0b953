import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.common.batches import ReplaySample
from polar.rl.common.distributions import tanh_gaussian_sample
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.sac.config import SACConfig
from polar.rl.sac.sac import SAC


def test_tanh_log_prob_matches_numerical_change_of_variables():
    torch.manual_seed(0)
    mean = torch.randn(500, 3, dtype=torch.float64) * 2
    log_std = torch.randn(500, 3, dtype=torch.float64) * 0.5
    y, logp = tanh_gaussian_sample(mean, log_std)
    # Numerically: log pi(y) = log N(u) - log |dy/du| with dy/du from finite differences.
    u = torch.atanh(y.clamp(-1 + 1e-12, 1 - 1e-12))
    std = log_std.exp()
    normal = (-0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    h = 1e-6
    dydu = (torch.tanh(u + h) - torch.tanh(u - h)) / (2 * h)
    expected = normal - torch.log(dydu).sum(-1)
    ok = y.abs().max(-1).values < 0.999999  # atanh is ill-conditioned right at the bounds
    assert ok.sum() > 400
    np.testing.assert_allclose(logp[ok].numpy(), expected[ok].numpy(), rtol=1e-4, atol=1e-4)


def test_tanh_density_integrates_to_one():
    # 1-D: integrate exp(log pi(y)) over y in (-1, 1) on a fine grid.
    mean, log_std = torch.tensor([[0.7]], dtype=torch.float64), torch.tensor([[0.3]], dtype=torch.float64)
    ys = torch.linspace(-1 + 1e-9, 1 - 1e-9, 200001, dtype=torch.float64)
    u = torch.atanh(ys)[:, None]
    std = log_std.exp()
    normal = -0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    # Reuse the sampler's correction on the exact pre-squash u (deterministic path).
    _, logp = tanh_gaussian_sample(u, torch.full_like(u, 0.0), deterministic=True)
    corr = logp - (-0.5 * math.log(2 * math.pi))
    density = torch.exp(normal.squeeze(-1) + corr - 0.0)
    assert torch.trapezoid(density, ys).item() == pytest.approx(1.0, abs=1e-3)


def test_actions_rescaled_to_pendulum_bounds():
    env = gym.make("Pendulum-v1")
    policy = make_policy("sac", env.observation_space, env.action_space, NetworkConfig(activation="relu"))
    a = policy.env_action(torch.tensor([[-1.0], [0.0], [1.0]]))
    np.testing.assert_allclose(a[:, 0], [-2.0, 0.0, 2.0])
    torch.manual_seed(0)
    with torch.no_grad():
        policy.actor_log_std.bias.fill_(5.0)  # wide: samples reach close to the bounds
    acts = policy.act(np.zeros((2000, 3), np.float32), deterministic=False)
    assert acts.min() >= -2 and acts.max() <= 2 and np.abs(acts).max() > 1.5
    back = policy.unscale_action(torch.as_tensor(acts))
    assert back.abs().max() <= 1.0 + 1e-6


def test_sac_update_uses_only_terminated_and_moves_targets_slowly():
    torch.manual_seed(0)
    env = gym.make("Pendulum-v1")
    policy = make_policy("sac", env.observation_space, env.action_space, NetworkConfig(hidden=[32], activation="relu"))
    sac = SAC(policy, SACConfig(tau=0.005))
    target_before = [p.clone() for p in sac.target_q.parameters()]
    B = 64
    batch = ReplaySample({"obs": torch.randn(B, 3)}, torch.rand(B, 1) * 2 - 1, torch.ones(B),
                         {"obs": torch.randn(B, 3)}, torch.zeros(B))
    m = {k: float(v) for k, v in sac.update(batch).items()}
    assert {"q_loss", "actor_loss", "alpha", "entropy"} <= set(m)
    assert sac.target_entropy == -1.0
    for before, p, q in zip(target_before, sac.target_q.parameters(), policy.q.parameters(), strict=True):
        # Polyak: target moved by exactly tau towards the online net.
        np.testing.assert_allclose((p - before).numpy(), (0.005 * (q - before)).detach().numpy(), atol=1e-6)
    # alpha changes only through log alpha's own loss.
    assert m["alpha"] != pytest.approx(0.2, abs=0)


def test_fused_adam_path_matches_the_plain_optimizers():
    import copy

    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    policy = make_policy("sac", env.observation_space, env.action_space, NetworkConfig(hidden=[32], activation="relu"))
    fast = SAC(copy.deepcopy(policy), SACConfig(policy_frequency=1))
    plain = SAC(copy.deepcopy(policy), SACConfig(policy_frequency=1, fused_adam=False))
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        B = 32
        batch = ReplaySample({"obs": torch.randn(B, 3, generator=g)}, torch.rand(B, 1, generator=g) * 2 - 1,
                             torch.randn(B, generator=g), {"obs": torch.randn(B, 3, generator=g)}, torch.zeros(B))
        torch.manual_seed(7)
        mf = fast.update(batch)
        torch.manual_seed(7)
        mp = plain.update(batch)
        assert {k: float(v) for k, v in mf.items()} == {k: float(v) for k, v in mp.items()}
    for (k, a), (_, b) in zip(fast.policy.state_dict().items(), plain.policy.state_dict().items(), strict=True):
        assert torch.equal(a, b), k
    assert torch.equal(fast.log_alpha, plain.log_alpha)
