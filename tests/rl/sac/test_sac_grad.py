import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.common.batches import ReplaySample
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.sac.config import SACConfig
from polar.rl.sac.sac import SAC
from polar.rl.sac.sac_grad import SACGrad, supported

OBS, ACT = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-2.0, 2.0, (3,), np.float32)


def _policy(activation: str, seed: int = 0):
    torch.manual_seed(seed)
    policy = make_policy("sac", OBS, ACT, NetworkConfig(hidden=[48, 40], activation=activation))
    with torch.no_grad():  # log-stds spread over their range: the squash's gradient is not ~0
        policy.actor_log_std.weight.mul_(8)
    return policy


def _grads(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.clone() for name, p in module.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_the_written_out_critic_and_actor_gradients_are_autograds(activation):
    policy = _policy(activation)
    assert supported(policy)
    fast = SACGrad(policy, copy.deepcopy(policy.q))
    g = torch.Generator().manual_seed(1)
    x, actions = torch.randn(128, 5, generator=g), torch.rand(128, 3, generator=g) * 2 - 1
    target, alpha = torch.randn(128, generator=g), torch.tensor(0.3)

    loss, q = fast.critic(x, actions, target)
    written = _grads(policy)
    assert set(written) == {n for n, _ in policy.q.named_parameters(prefix="q")}
    policy.zero_grad(set_to_none=True)
    q_plain = policy.q({"obs": x}, actions)
    plain = 0.5 * (q_plain - target).pow(2).mean(1).sum()
    plain.backward()
    torch.testing.assert_close(q, q_plain.detach())
    torch.testing.assert_close(loss, plain.detach())
    for name, grad in _grads(policy).items():
        assert grad.abs().max() > 0, name
        torch.testing.assert_close(written[name], grad, rtol=1e-4, atol=1e-6, msg=name)

    policy.zero_grad(set_to_none=True)
    torch.manual_seed(5)
    loss, logp = fast.actor(x, alpha)
    written = _grads(policy)
    assert set(written) == {n for n, _ in policy.named_parameters() if n.startswith("actor_")}  # critics frozen
    policy.zero_grad(set_to_none=True)
    torch.manual_seed(5)  # the same noise: the sample is reparameterised on the same draws
    a_pi, logp_plain = policy.sample({"obs": x})
    q_pi = policy.q({"obs": x}, a_pi)
    picked = q_pi.argmin(0).float().mean()
    assert 0.1 < picked < 0.9  # both critics are the minimum somewhere
    plain = (alpha * logp_plain - q_pi.min(0).values).mean()
    plain.backward()
    torch.testing.assert_close(logp, logp_plain.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss, plain.detach(), rtol=1e-5, atol=1e-6)
    for name, p in policy.named_parameters():
        if name.startswith("actor_"):
            assert p.grad.abs().max() > 0, name
            torch.testing.assert_close(written[name], p.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_the_sample_and_the_target_critics_are_the_policys():
    policy = _policy("relu")
    target_q = copy.deepcopy(policy.q)
    with torch.no_grad():
        for p in target_q.parameters():
            p.add_(0.1)
    fast = SACGrad(policy, target_q)
    x = torch.randn(64, 5)
    torch.manual_seed(3)
    y, logp = fast.sample(x)
    torch.manual_seed(3)
    with torch.no_grad():
        y_plain, logp_plain = policy.sample({"obs": x})
        torch.testing.assert_close(fast.target_q(x, y), target_q({"obs": x}, y))
    torch.testing.assert_close(y, y_plain)
    torch.testing.assert_close(logp, logp_plain, rtol=1e-5, atol=1e-5)


def _batch(g: torch.Generator, n: int = 64) -> ReplaySample:
    return ReplaySample({"obs": torch.randn(n, 5, generator=g)}, torch.rand(n, 3, generator=g) * 2 - 1,
                        torch.randn(n, generator=g), {"obs": torch.randn(n, 5, generator=g)},
                        (torch.rand(n, generator=g) < 0.1).float())


@pytest.mark.parametrize("policy_frequency", [1, 2])
def test_a_run_with_the_written_out_gradients_follows_the_autograd_run(policy_frequency):
    policy = _policy("relu", seed=2)
    cfg = SACConfig(policy_frequency=policy_frequency, policy_lr=3e-3, q_lr=3e-3)
    fast, plain = SAC(copy.deepcopy(policy), cfg), SAC(copy.deepcopy(policy), cfg.model_copy(update={"analytic_grad": False}))
    assert fast._grad is not None and plain._grad is None
    g = torch.Generator().manual_seed(0)
    for _ in range(6):
        batch = _batch(g)
        torch.manual_seed(0)
        mf = fast.update(batch)
        torch.manual_seed(0)
        mp = plain.update(batch)
        assert mf.keys() == mp.keys()
        for k in mf:
            assert float(mf[k]) == pytest.approx(float(mp[k]), rel=1e-3, abs=1e-5), k
    pairs = [*zip(fast.policy.state_dict().items(), plain.policy.state_dict().items(), strict=True),
             *zip(fast.target_q.state_dict().items(), plain.target_q.state_dict().items(), strict=True)]
    for (k, a), (_, c) in pairs:
        torch.testing.assert_close(a, c, rtol=1e-4, atol=1e-5, msg=k)
    torch.testing.assert_close(fast.log_alpha, plain.log_alpha)
    moved = sum(float((a - c).abs().sum()) for a, c in zip(fast.policy.state_dict().values(), policy.state_dict().values(), strict=True))
    assert moved > 1.0  # the runs learned something, and the same thing


def test_image_observations_take_autograd():
    space = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    policy = make_policy("sac", space, ACT, NetworkConfig(hidden=[8], activation="relu"))
    assert not supported(policy) and SAC(policy, SACConfig())._grad is None
