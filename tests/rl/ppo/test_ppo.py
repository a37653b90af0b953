import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from polar.rl.common.rollout import Collector
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.ppo.collect import collect_ppo
from polar.rl.ppo.config import PPOConfig
from polar.rl.ppo.ppo import PPO


def _first_update(env_id: str, normalize: bool, seed: int = 0, **kw):
    torch.manual_seed(seed)
    env = SyncVectorEnv([lambda: gym.make(env_id, **kw)] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space,
                         NetworkConfig(hidden=[32, 32]), normalize_obs=normalize)
    ppo = PPO(policy, PPOConfig(num_minibatches=2, update_epochs=2))
    col = Collector(env, seed=seed)
    out = []
    for _ in range(2):
        out.append(ppo.update(collect_ppo(policy, col, 32)))
    return out, policy


@pytest.mark.parametrize("env_id,normalize", [("CartPole-v1", False), ("CartPole-v1", True),
                                              ("Pendulum-v1", True)])
def test_ratio_is_one_on_first_minibatch(env_id, normalize):
    # Pendulum's Gaussian actions leave the [-2, 2] bounds: the stored log-prob must be the
    # unclipped sample's; with normalisation the statistics must not move before the update.
    metrics, _ = _first_update(env_id, normalize)
    for m in metrics:  # every update, not only the first one (normaliser drift shows later)
        assert m["first_ratio_dev"] < 1e-6  # float rounding between batch sizes only
    assert metrics[0]["clipfrac"] < 0.5


def test_same_seed_gives_identical_updates():
    a, pa = _first_update("CartPole-v1", True, seed=5)
    b, pb = _first_update("CartPole-v1", True, seed=5)
    c, _ = _first_update("CartPole-v1", True, seed=6)
    assert a == b
    assert a != c
    for (ka, va), (kb, vb) in zip(pa.state_dict().items(), pb.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)


def test_continuous_actions_are_clipped_to_bounds_at_the_env():
    env = gym.make("Pendulum-v1")
    policy = make_policy("ppo", env.observation_space, env.action_space, NetworkConfig(log_std_init=2.0))
    obs = np.zeros((256, 3), np.float32)
    acts = policy.act(obs, deterministic=False)
    assert acts.shape == (256, 1)
    assert acts.min() >= -2.0 and acts.max() <= 2.0
    assert (np.abs(acts) == 2.0).any()  # std e^2: many samples hit the bounds


@pytest.mark.parametrize("env_id,minibatches", [("CartPole-v1", 1), ("Pendulum-v1", 2)])
def test_fused_adam_path_matches_the_plain_optimizer(env_id, minibatches):
    # The fast path (clipping + torch's fused Adam kernel called directly) must give
    # bit-identical weights and optimizer state to clip_grad_norm_ + optimizer.step().
    import copy

    env = SyncVectorEnv([lambda: gym.make(env_id)] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    torch.manual_seed(3)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space, NetworkConfig(hidden=[32, 32]))
    col = Collector(env, seed=3)
    batches = [collect_ppo(policy, col, 32) for _ in range(3)]
    cfg = PPOConfig(num_minibatches=minibatches, update_epochs=3, ent_coef=0.01)
    fast = PPO(copy.deepcopy(policy), cfg)
    plain = PPO(copy.deepcopy(policy), cfg.model_copy(update={"fused_adam": False}))
    assert fast._fast is not None and plain._fast is None
    for b in batches:
        torch.manual_seed(0)
        mf = fast.update(b)
        torch.manual_seed(0)
        mp = plain.update(b)
        assert mf == mp
    for (k, a), (_, c) in zip(fast.policy.state_dict().items(), plain.policy.state_dict().items(), strict=True):
        assert torch.equal(a, c), k
    sf, sp = fast.optimizer.state_dict()["state"], plain.optimizer.state_dict()["state"]
    for i in sf:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(sf[i][name], sp[i][name]), (i, name)


def _int_cartpole():
    """CartPole whose observation is an int64 Box (a user's game often reports integers)."""
    space = gym.spaces.Box(-10_000, 10_000, (4,), np.int64)
    return gym.wrappers.TransformObservation(gym.make("CartPole-v1"), lambda o: (o * 100).astype(np.int64), space)


@pytest.mark.parametrize("normalize", [False, True])
def test_integer_vector_observations_are_read_the_same_in_rollout_and_update(normalize):
    torch.manual_seed(0)
    env = SyncVectorEnv([_int_cartpole] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space,
                         NetworkConfig(hidden=[16]), normalize_obs=normalize)
    ppo, col = PPO(policy, PPOConfig(num_minibatches=2, update_epochs=2)), Collector(env, seed=0)
    for _ in range(2):
        assert ppo.update(collect_ppo(policy, col, 32))["first_ratio_dev"] < 1e-6


@pytest.mark.parametrize("target_kl,epochs_run", [(None, 4), (1e-12, 1)])
def test_target_kl_stops_the_update_after_the_epoch_that_passes_it(target_kl, epochs_run):
    env = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    torch.manual_seed(0)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space, NetworkConfig(hidden=[16]))
    ppo = PPO(policy, PPOConfig(num_minibatches=2, update_epochs=4, target_kl=target_kl))
    metrics = ppo.update(collect_ppo(policy, Collector(env, seed=0), 32))
    steps = {float(s["step"]) for s in ppo.optimizer.state.values()}
    assert steps == {2.0 * epochs_run}  # gradient steps: 2 minibatches per epoch run
    assert metrics["approx_kl"] > 0
