import copy

import gymnasium as gym
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from polar.rl.common.rollout import Collector
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.ppo.collect import collect_ppo
from polar.rl.ppo.config import PPOConfig
from polar.rl.ppo.ppo import PPO, ppo_loss
from polar.rl.ppo.ppo_grad import PPOGrad, supported


def _rollout(env_id: str, activation: str, seed: int = 0):
    env = SyncVectorEnv([lambda: gym.make(env_id)] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    torch.manual_seed(seed)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space,
                         NetworkConfig(hidden=[32, 32], activation=activation), normalize_obs=True)
    col = Collector(env, seed=seed)
    return policy, [collect_ppo(policy, col, 64) for _ in range(3)]


@pytest.mark.parametrize("env_id,activation", [("CartPole-v1", "tanh"), ("CartPole-v1", "relu"),
                                               ("Pendulum-v1", "tanh")])
@pytest.mark.parametrize("clip_vloss,ent_coef", [(False, 0.0), (True, 0.1)])
def test_the_written_out_gradient_is_autograds(env_id, activation, clip_vloss, ent_coef):
    policy, batches = _rollout(env_id, activation)
    assert supported(policy)
    cfg = PPOConfig(clip_vloss=clip_vloss, ent_coef=ent_coef, clip_coef=0.1)
    data = PPO(policy, cfg).samples(batches[0])
    with torch.no_grad():  # a trained actor's confidence: the entropy's gradient is not ~0
        policy.actor_head.weight.mul_(100)
    # As if another policy had collected: ratios leave the clip range, values the value clip's.
    old_logp, old_values = data.logp + 0.15 * torch.randn_like(data.logp), data.values + 0.2 * torch.randn_like(data.values)
    adv = (data.advantages - data.advantages.mean()) / data.advantages.std()
    args = (data.obs, data.actions, old_logp, old_values, adv, data.returns)

    terms = PPOGrad(policy, cfg)(policy.actor_enc(data.obs), *args[1:])
    written = {name: p.grad.clone() for name, p in policy.named_parameters()}
    for p in policy.parameters():
        p.grad = None
    logp, entropy, value = policy.evaluate_actions(data.obs, data.actions)
    loss, *plain_terms = ppo_loss(cfg, logp, entropy, value, *args[2:], torch.mean)
    loss.backward()

    clipped = ((terms.ratio - 1).abs() > cfg.clip_coef).float().mean()
    assert 0.1 < clipped < 0.9  # both branches of the clipped objective are exercised
    for a, b in zip(terms, plain_terms, strict=True):
        torch.testing.assert_close(a, b.detach(), rtol=1e-5, atol=1e-6)
    for name, p in policy.named_parameters():
        assert p.grad.abs().max() > 0, name  # every parameter is reached (log_std: when Gaussian)
        torch.testing.assert_close(written[name], p.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_run_with_the_written_out_gradient_follows_the_autograd_run():
    policy, batches = _rollout("CartPole-v1", "tanh", seed=4)
    cfg = PPOConfig(num_minibatches=2, update_epochs=4, ent_coef=0.01)
    fast, plain = PPO(copy.deepcopy(policy), cfg), PPO(copy.deepcopy(policy), cfg.model_copy(update={"analytic_grad": False}))
    assert fast._grad is not None and plain._grad is None
    for b in batches:
        torch.manual_seed(0)
        mf = fast.update(b)
        torch.manual_seed(0)
        mp = plain.update(b)
        assert mf.keys() == mp.keys()
        for k in mf:
            assert mf[k] == pytest.approx(mp[k], rel=1e-3, abs=1e-5), k
    for (k, a), (_, c) in zip(fast.policy.state_dict().items(), plain.policy.state_dict().items(), strict=True):
        torch.testing.assert_close(a, c, rtol=1e-4, atol=1e-5, msg=k)
    moved = sum(float((a - c).abs().sum()) for a, c in zip(fast.policy.state_dict().values(), policy.state_dict().values(), strict=True))
    assert moved > 1.0  # the runs learned something, and the same thing


@pytest.mark.parametrize("net", [dict(shared=True), dict(lstm=16)])
def test_other_policies_take_autograd(net):
    env = gym.make("CartPole-v1")
    policy = make_policy("ppo", env.observation_space, env.action_space, NetworkConfig(hidden=[8], **net))
    assert not supported(policy) and PPO(policy, PPOConfig())._grad is None
