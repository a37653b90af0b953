"""DQN: the double-DQN target by hand, the fast path against the plain one, the epsilon
schedule, target updates, numpy and torch greedy actions, learning CartPole, and exact resume
(in process and after kill -9 through the CLI)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from polar.rl.common.batches import ReplaySample
from polar.rl.common.envs import make_vector_env
from polar.rl.common.rollout import Collector
from polar.rl.config import NetworkConfig, TrainConfig
from polar.rl.dqn import collect
from polar.rl.dqn.config import DQNConfig
from polar.rl.dqn.dqn import DQN
from polar.rl.dqn.dqn_policy import DQNPolicy
from polar.rl.policy import Policy, PolicyLoadError, load_policy
from polar.rl.trainer import Trainer

OBS = gym.spaces.Box(-1, 1, (4,), np.float32)
NET = NetworkConfig(hidden=[16, 16], activation="relu")
DQN_SMALL = dict(algo="dqn", harness="gym:CartPole-v1", steps=1200, seed=4, progress=False, eval_episodes=2,
                 network=dict(hidden=[16], activation="relu"),
                 dqn=dict(num_envs=2, learning_starts=200, batch_size=16, train_freq=20, gradient_steps=5,
                          target_update_interval=100, exploration_fraction=0.5))


def _policy(seed: int = 0) -> DQNPolicy:
    torch.manual_seed(seed)
    return DQNPolicy(OBS, gym.spaces.Discrete(3), NET)


def _sample(seed: int, n: int = 8) -> ReplaySample:
    g = torch.Generator().manual_seed(seed)
    return ReplaySample({"obs": torch.rand(n, 4, generator=g) * 2 - 1},
                        torch.randint(0, 3, (n, 1), generator=g).float(), torch.randn(n, generator=g),
                        {"obs": torch.rand(n, 4, generator=g) * 2 - 1}, (torch.rand(n, generator=g) < 0.3).float())


def test_double_dqn_loss_by_hand() -> None:
    policy = _policy()
    algo = DQN(policy, DQNConfig(gamma=0.9, fast=False))
    with torch.no_grad():  # a target network that differs from the online one
        for p in algo.target_params:
            p.add_(0.1)
    b = _sample(1)
    with torch.no_grad():
        a_next = policy.q(b.next_obs).argmax(-1)  # chosen by the online network ...
        q_next = algo.target_q(b.next_obs)[torch.arange(8), a_next]  # ... scored by the target
        y = b.rewards + 0.9 * (1 - b.terminated) * q_next
        q = policy.q(b.obs)[torch.arange(8), b.actions[:, 0].long()]
        expected = F.smooth_l1_loss(q, y)
        plain_y = b.rewards + 0.9 * (1 - b.terminated) * algo.target_q(b.next_obs).max(-1).values
    assert not torch.equal(y, plain_y)  # the test tells double from plain DQN
    assert torch.allclose(algo.update(b)["q_loss"], expected)
    plain = DQN(_policy(), DQNConfig(gamma=0.9, double=False, fast=False))
    with torch.no_grad():
        for p in plain.target_params:
            p.add_(0.1)
    assert torch.allclose(plain.update(b)["q_loss"], F.smooth_l1_loss(q, plain_y))


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("double", [True, False])
def test_written_out_gradients_match_autograd(activation: str, double: bool) -> None:
    net = NetworkConfig(hidden=[32, 16], activation=activation)
    policies = []
    for _ in range(2):
        torch.manual_seed(0)
        policies.append(DQNPolicy(OBS, gym.spaces.Discrete(3), net))
    fast, plain = (DQN(p, DQNConfig(fast=f, double=double)) for p, f in zip(policies, (True, False), strict=True))
    assert fast._grad is not None and plain._grad is None
    with torch.no_grad():
        for a, b in zip(fast.target_params, plain.target_params, strict=True):
            noise = 0.1 * torch.randn_like(a)
            a.add_(noise)
            b.add_(noise)
    b = _sample(2, n=32)
    fast_loss, _ = fast._grad(b, 0.99, double)
    obs, next_obs = policies[1].prepare(b.obs), policies[1].prepare(b.next_obs)
    with torch.no_grad():
        nq = plain.target_q(next_obs)
        nq = nq.gather(1, policies[1].q(next_obs).argmax(-1, keepdim=True))[:, 0] if double else nq.max(-1).values
        y = b.rewards + 0.99 * (1 - b.terminated) * nq
    loss = F.smooth_l1_loss(policies[1].q(obs).gather(1, b.actions.long())[:, 0], y)
    loss.backward()
    assert torch.allclose(fast_loss, loss, rtol=1e-6)
    for (name, p), q in zip(policies[0].q.named_parameters(), policies[1].q.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-7), name


def test_fast_path_follows_the_plain_updates() -> None:
    fast, plain = DQN(_policy(), DQNConfig(max_grad_norm=0.05)), DQN(_policy(), DQNConfig(fast=False, max_grad_norm=0.05))
    for i in range(6):
        b = _sample(i)
        assert torch.allclose(fast.update(b)["q_loss"], plain.update(b)["q_loss"], rtol=1e-5)
        if i == 3:
            fast.sync_target()
            plain.sync_target()
    for a, b in zip(fast.params, plain.params, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)
    assert fast.updates == plain.updates == 6


def test_epsilon_schedule() -> None:
    c = DQNConfig(learning_starts=100, exploration_fraction=0.5, exploration_initial_eps=1.0,
                  exploration_final_eps=0.1)
    assert c.epsilon(99, 1000) == 1.0  # warm-up: random actions
    assert c.epsilon(250, 1000) == pytest.approx(1.0 - 0.9 * 250 / 500)
    assert c.epsilon(500, 1000) == c.epsilon(900, 1000) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="exploration_final_eps"):
        DQNConfig(exploration_initial_eps=0.1, exploration_final_eps=0.5)


def test_target_updates_copy_or_average() -> None:
    policy = _policy()
    hard = DQN(policy, DQNConfig())
    hard.update(_sample(0))
    assert not all(torch.equal(a, b) for a, b in zip(hard.params, hard.target_params, strict=True))
    hard.sync_target()
    assert all(torch.equal(a, b) for a, b in zip(hard.params, hard.target_params, strict=True))
    soft = DQN(_policy(), DQNConfig(tau=0.5))
    before = [p.clone() for p in soft.target_params]
    soft.update(_sample(0))
    soft.sync_target(times=2)  # two averages in a row: weight 1 - 0.5^2
    for t, b, p in zip(soft.target_params, before, soft.params, strict=True):
        assert torch.allclose(t, b + 0.75 * (p - b), atol=1e-6)


def test_numpy_and_torch_greedy_collect_the_same_transitions() -> None:
    eps = np.array([1.0, 0.5, 0.0, 0.0, 0.2] * 4)
    policy = _policy(3)
    cartpole = DQNPolicy(gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2), NET)
    cartpole.load_state_dict({k: v[:2] if k.startswith("q.head") else v for k, v in policy.state_dict().items()})
    runs = []
    for numpy_act in (True, False):
        col = Collector(make_vector_env(["gym:CartPole-v1"] * 3), seed=5)
        runs.append(collect.collect(cartpole, col, np.random.default_rng(0), eps, numpy_act))
    a, b = runs
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.rewards, b.rewards)
    assert a.actions.shape == (20, 3, 1) and set(np.unique(a.actions)) <= {0.0, 1.0}
    with torch.inference_mode():
        obs = cartpole.prepare({"obs": a.obs["obs"][3]})  # eps 0: every env acted greedily
        assert np.array_equal(a.actions[3, :, 0], cartpole.q(obs).argmax(-1).numpy())


def test_policy_needs_discrete_actions_and_saves_and_loads(tmp_path) -> None:
    with pytest.raises(PolicyLoadError, match="Discrete"):
        DQNPolicy(OBS, gym.spaces.Box(-1, 1, (2,), np.float32))
    policy = _policy()
    policy.save(tmp_path)
    again = Policy.load(tmp_path)
    assert isinstance(again, DQNPolicy)
    x = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
    assert again.act(x) == policy.act(x) and isinstance(again.act(x), int)
    with torch.no_grad():
        assert again.value(x) == pytest.approx(float(policy.q(policy.prepare({"obs": x[None]})).max()))


def test_dqn_learns_cartpole(tmp_path) -> None:
    """The dqn_cartpole recipe's hyper-parameters, cut to 6k env steps."""
    cfg = TrainConfig(algo="dqn", harness="gym:CartPole-v1", steps=6000, seed=1, progress=False, eval_episodes=5,
                      network=dict(hidden=[256, 256], activation="relu"),
                      dqn=dict(learning_rate=2.3e-3, batch_size=64, learning_starts=1000, target_update_interval=10,
                               train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                               exploration_final_eps=0.04))
    res = Trainer(cfg, tmp_path).run()
    assert res["mean_return"] >= 150, res  # a random policy averages about 22


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_policy(run).to_state()[0]


def test_resume_matches_uninterrupted_run(tmp_path) -> None:
    full = Trainer(TrainConfig(**DQN_SMALL), tmp_path / "full")
    res_full = full.run()
    part = Trainer(TrainConfig(**DQN_SMALL), tmp_path / "part")
    part.run(max_updates=20)  # past the warm-up, mid-exploration
    part.checkpoint()
    assert part.updates > 0
    resumed = Trainer.resume(tmp_path / "part")
    assert resumed.env_steps == part.env_steps and resumed.algo.replay.size == part.algo.replay.size
    res = resumed.run()
    wa, wb = _weights(tmp_path / "full"), _weights(tmp_path / "part")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert res["mean_return"] == res_full["mean_return"] and res["updates"] == res_full["updates"]
    strip = ("wall_s", "sps", "eval/wall_s")
    rows = [{k: v for k, v in json.loads(x).items() if k not in strip}
            for run in ("full", "part") for x in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
    assert rows[: len(rows) // 2] == rows[len(rows) // 2:]
    assert any("q_loss" in r and "epsilon" in r for r in rows)


def test_cli_kill9_then_resume_continues_exactly(tmp_path) -> None:
    exe = Path(sys.executable).parent / "polar"
    cfg = tmp_path / "dqn.yaml"
    cfg.write_text("checkpoint_every: 500\neval_episodes: 2\nnetwork: {hidden: [16], activation: relu}\n"
                   "dqn: {learning_starts: 300, batch_size: 16, train_freq: 50, gradient_steps: 25, "
                   "target_update_interval: 100}\n")
    args = ["train", str(cfg), "--algo", "dqn", "--harness", "gym:CartPole-v1", "--steps", "4000", "--seed", "2",
            "--no-progress"]
    full = subprocess.run([str(exe), *args, "--out", str(tmp_path / "full")], capture_output=True, text=True,
                          timeout=300)
    assert full.returncode == 0, full.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen([str(exe), *args, "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    latest = out / "checkpoints" / "latest"
    deadline = time.time() + 200
    while time.time() < deadline and not latest.exists() and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # mid-run, possibly mid-checkpoint
    proc.wait()
    assert latest.exists() and not (out / "eval.json").exists(), "killed too late or never checkpointed"
    assert (out / "checkpoints" / latest.read_text() / "replay.npz").exists()
    r = subprocess.run([str(exe), "train", "--resume", str(out), "--no-progress"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "replay buffer restored" in r.stderr
    wa, wb = _weights(tmp_path / "full"), _weights(out)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert json.loads((out / "eval.json").read_text())["mean_return"] == \
        json.loads((tmp_path / "full" / "eval.json").read_text())["mean_return"]
