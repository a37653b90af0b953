"""Polar vs Stable-Baselines3, matched hyperparameters, alternating runs on the same machine.

    .venv/bin/python benchmarks/rl_vs_sb3.py [--task ppo_cartpole|sac_pendulum|all] [--rounds 1]

Both sides: one torch thread, the same hyperparameters (rl-baselines3-zoo's), training time
only (model.learn() vs Trainer.run() up to the final evaluation), and the same evaluation
(10 deterministic episodes on seeds 1000000..1000009 through the same loop). Prints one line
per run and, per task, the time ratio Polar/SB3 (goal: <= 0.5) and both final returns.
Needs the `bench` extra (stable-baselines3).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch

EVAL_SEED, EVAL_EPISODES = 1_000_000, 10

TASKS: dict[str, dict[str, Any]] = {
    "ppo_cartpole": {"env": "CartPole-v1", "steps": 100_000},
    "sac_pendulum": {"env": "Pendulum-v1", "steps": 20_000},
}


def eval_fn(act, env_id: str) -> float:
    """Mean return of `act(obs) -> action` over the fixed evaluation seeds."""
    env = gym.make(env_id)
    rets = []
    for i in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=EVAL_SEED + i)
        done, total = False, 0.0
        while not done:
            obs, r, term, trunc, _ = env.step(act(obs))
            total += float(r)
            done = term or trunc
        rets.append(total)
    return float(np.mean(rets))


def run_polar(task: str, seed: int) -> tuple[float, float]:
    from polar.rl.config import TrainConfig
    from polar.rl.trainer import Trainer

    common = dict(seed=seed, progress=False, torch_threads=1, eval_episodes=EVAL_EPISODES, eval_seed=EVAL_SEED)
    if task == "ppo_cartpole":
        cfg = TrainConfig(harness="gym:CartPole-v1", steps=TASKS[task]["steps"], **common,
                          network=dict(hidden=[64, 64], activation="tanh"),
                          ppo=dict(num_envs=8, num_steps=32, num_minibatches=1, update_epochs=20,
                                   learning_rate=1e-3, anneal_lr=True, gamma=0.98, gae_lambda=0.8,
                                   clip_coef=0.2, clip_vloss=False, ent_coef=0.0, max_grad_norm=0.5))
    else:
        cfg = TrainConfig(algo="sac", harness="gym:Pendulum-v1", steps=TASKS[task]["steps"], **common,
                          network=dict(hidden=[256, 256], activation="relu"),
                          sac=dict(num_envs=1, learning_starts=100, batch_size=256, policy_lr=1e-3,
                                   q_lr=1e-3, alpha=1.0, autotune=True, tau=0.005, gamma=0.99,
                                   policy_frequency=1, buffer_size=1_000_000))
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(cfg, d)
        res = trainer.run()
        wall = res["wall_s"]  # training only: measured before the final evaluation
        policy = trainer.policy
    ret = eval_fn(lambda o: policy.act(o, deterministic=True), TASKS[task]["env"])
    return wall, ret


def run_sb3(task: str, seed: int) -> tuple[float, float]:
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    if task == "ppo_cartpole":
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98, gae_lambda=0.8,
                    learning_rate=lambda f: 1e-3 * f, clip_range=0.2, ent_coef=0.0, vf_coef=0.5,
                    max_grad_norm=0.5, seed=seed, device="cpu", verbose=0)
    else:
        env = make_vec_env("Pendulum-v1", n_envs=1, seed=seed)
        model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=100,
                    batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1,
                    ent_coef="auto", policy_kwargs=dict(net_arch=[256, 256]), seed=seed, device="cpu",
                    verbose=0)
    t0 = time.perf_counter()
    model.learn(TASKS[task]["steps"])
    wall = time.perf_counter() - t0
    ret = eval_fn(lambda o: model.predict(o, deterministic=True)[0], TASKS[task]["env"])
    return wall, ret


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=[*TASKS, "all"], default="all")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    tasks = list(TASKS) if args.task == "all" else [args.task]
    results: dict[str, dict[str, list[tuple[float, float]]]] = {t: {"polar": [], "sb3": []} for t in tasks}
    for r in range(args.rounds):
        for task in tasks:
            # Alternate who goes first so machine-load drift hits both sides alike.
            order = [("polar", run_polar), ("sb3", run_sb3)]
            if r % 2:
                order.reverse()
            for name, fn in order:
                wall, ret = fn(task, args.seed + r)
                torch.set_num_threads(1)
                results[task][name].append((wall, ret))
                print(f"round {r} {task:13s} {name:5s} wall {wall:7.1f} s  eval return {ret:8.1f}", flush=True)
    summary = {}
    for task in tasks:
        p, s = results[task]["polar"], results[task]["sb3"]
        ratios = [a[0] / b[0] for a, b in zip(p, s, strict=True)]
        summary[task] = {
            "polar_wall_s": [round(x[0], 2) for x in p], "sb3_wall_s": [round(x[0], 2) for x in s],
            "polar_return": [round(x[1], 1) for x in p], "sb3_return": [round(x[1], 1) for x in s],
            "time_ratio_polar_over_sb3": [round(x, 3) for x in ratios],
        }
        print(f"{task}: time ratio Polar/SB3 = {statistics.median(ratios):.3f} (median of {len(ratios)}); "
              f"returns Polar {[round(x[1], 1) for x in p]} vs SB3 {[round(x[1], 1) for x in s]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
