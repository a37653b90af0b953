"""Polar vs Stable-Baselines3, matched hyperparameters, alternating runs on the same machine.

    .venv/bin/python benchmarks/rl_vs_sb3.py [--task ppo_cartpole|sac_pendulum|dqn_cartpole|all] [--rounds 1]
                                             [--phases 3000] [--seed 0]

Both sides: one torch thread, the same hyperparameters (rl-baselines3-zoo's), training time
only (model.learn() vs Trainer.run() up to the final evaluation), and the same evaluation
(10 deterministic episodes on seeds 1000000..1000009 through the same loop). Prints one line
per run and, per task, the time ratio Polar/SB3 (goals: PPO <= 0.45, DQN <= 0.5; SAC has none of
its own: its old goal of 0.5 is retired, because benchmarks/sac_floor_bench.py shows that this
CPU's fp32 arithmetic alone allows about 0.52-0.58, and benchmarks/summary.py checks its ratio
as a regression guard against that committed floor, GUARDS)
and both final returns. DQN runs Polar's `dqn_cartpole` recipe as shipped (double DQN: one more
forward pass per update than SB3's DQN, which has no double variant) against SB3's DQN with
the same hyper-parameters (rl-baselines3-zoo's CartPole DQN and its 50k env steps). PPO also runs Polar's plain update (`ppo.analytic_grad: false`,
`ppo.fused_adam: false`: autograd, clip_grad_norm_ + optimizer.step()) and reports its time
against the fast path. SAC also
runs SB3 with subnormal floats flushed to zero, as Polar's trainer does (`flush_denormal`),
and reports Polar's time against that too, so what the flag alone gives is visible.
SAC then profiles `--phases` env steps of each side (SB3 through a copy of its `train()`
with timers; the arithmetic is SB3's) and prints milliseconds per env step and phase:
env (action, env step, buffer add), sample (replay), critic (target + critic step), actor,
alpha, polyak. Needs the `bench` extra (stable-baselines3). Writes one result per task:
benchmarks/results/rl_vs_sb3_ppo.json, rl_vs_sb3_sac.json and rl_vs_sb3_dqn.json
(benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

EVAL_SEED, EVAL_EPISODES = 1_000_000, 10

TASKS: dict[str, dict[str, Any]] = {
    "ppo_cartpole": {"env": "CartPole-v1", "steps": 100_000, "result": "rl_vs_sb3_ppo",
                     "label": "PPO CartPole-v1 100k steps", "goal": 0.45},
    "sac_pendulum": {"env": "Pendulum-v1", "steps": 20_000, "result": "rl_vs_sb3_sac",
                     "label": "SAC Pendulum-v1 20k steps", "goal": None},  # guarded against the floor: summary.py
    "dqn_cartpole": {"env": "CartPole-v1", "steps": 50_000, "result": "rl_vs_sb3_dqn",
                     "label": "DQN CartPole-v1 50k steps", "goal": 0.5},
}
# rl-baselines3-zoo's CartPole DQN; Polar's skills/recipes/dqn_cartpole.yaml holds the same values.
DQN_CARTPOLE = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
                    target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                    exploration_final_eps=0.04)


def eval_fn(act, env_id: str) -> float:
    """Mean return of `act(obs) -> action` over the fixed evaluation seeds."""
    import gymnasium as gym
    import numpy as np

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


def polar_config(task: str, seed: int, steps: int, plain: bool = False) -> Any:
    from polar.rl.config import TrainConfig

    common = dict(seed=seed, progress=False, torch_threads=1, eval_episodes=EVAL_EPISODES, eval_seed=EVAL_SEED)
    if task == "ppo_cartpole":
        return TrainConfig(harness="gym:CartPole-v1", steps=steps, **common,
                           network=dict(hidden=[64, 64], activation="tanh"),
                           ppo=dict(num_envs=8, num_steps=32, num_minibatches=1, update_epochs=20,
                                    learning_rate=1e-3, anneal_lr=True, gamma=0.98, gae_lambda=0.8,
                                    clip_coef=0.2, clip_vloss=False, ent_coef=0.0, max_grad_norm=0.5,
                                    fused_adam=not plain, analytic_grad=not plain))
    if task == "dqn_cartpole":
        return TrainConfig(algo="dqn", harness="gym:CartPole-v1", steps=steps, **common,
                           network=dict(hidden=[256, 256], activation="relu"),
                           dqn=dict(num_envs=1, fast=not plain, **DQN_CARTPOLE))
    return TrainConfig(algo="sac", harness="gym:Pendulum-v1", steps=steps, **common,
                       network=dict(hidden=[256, 256], activation="relu"),
                       sac=dict(num_envs=1, learning_starts=100, batch_size=256, policy_lr=1e-3,
                                q_lr=1e-3, alpha=1.0, autotune=True, tau=0.005, gamma=0.99,
                                policy_frequency=1, buffer_size=1_000_000, fused_adam=not plain,
                                analytic_grad=not plain))


def run_polar(task: str, seed: int, plain: bool = False, phases: int = 0) -> tuple[float, float, dict[str, float]]:
    from polar.rl.trainer import Trainer

    steps = phases or TASKS[task]["steps"]
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(polar_config(task, seed, steps, plain), d)
        trainer.timer.enabled = bool(phases)
        res = trainer.run()
        wall = res["wall_s"]  # training only: measured before the final evaluation
        policy = trainer.policy
    per_step = {PHASES_POLAR.get(k, k): 0.0 for k in trainer.timer.seconds}
    for k, v in trainer.timer.seconds.items():
        per_step[PHASES_POLAR.get(k, k)] += 1000 * v / steps
    ret = float("nan") if phases else eval_fn(lambda o: policy.act(o, deterministic=True), TASKS[task]["env"])
    return wall, ret, per_step


# Polar's timer names -> the phases both sides report.
PHASES_POLAR = {"env": "env", "replay_add": "env", "replay_sample": "sample", "target_actor": "critic",
                "critic": "critic", "actor": "actor", "alpha": "alpha", "target": "polyak"}


def run_sb3(task: str, seed: int, phases: int = 0, ftz: bool = False) -> tuple[float, float, dict[str, float]]:
    """SB3 as shipped, or (`ftz`) with subnormal floats flushed to zero as Polar's trainer does."""
    import torch
    from stable_baselines3 import DQN, PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import configure

    torch.set_flush_denormal(ftz)  # Polar's trainer leaves it on: never hand that to SB3 unasked
    timer: dict[str, float] = {}
    if task == "ppo_cartpole":
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98, gae_lambda=0.8,
                    learning_rate=lambda f: 1e-3 * f, clip_range=0.2, ent_coef=0.0, vf_coef=0.5,
                    max_grad_norm=0.5, seed=seed, device="cpu", verbose=0)
    elif task == "dqn_cartpole":
        env = make_vec_env("CartPole-v1", n_envs=1, seed=seed)
        model = DQN("MlpPolicy", env, **DQN_CARTPOLE, policy_kwargs=dict(net_arch=[256, 256]), seed=seed,
                    device="cpu", verbose=0)
    else:
        env = make_vec_env("Pendulum-v1", n_envs=1, seed=seed)
        cls = timed_sb3_sac(SAC, timer) if phases else SAC
        model = cls("MlpPolicy", env, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=100,
                    batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1,
                    ent_coef="auto", policy_kwargs=dict(net_arch=[256, 256]), seed=seed, device="cpu",
                    verbose=0)
    steps = phases or TASKS[task]["steps"]
    with tempfile.TemporaryDirectory() as logdir:  # else SB3 leaves an empty SB3-<date> folder in /tmp
        model.set_logger(configure(logdir, [""]))
        t0 = time.perf_counter()
        model.learn(steps)
        wall = time.perf_counter() - t0
    ret = float("nan") if phases else eval_fn(lambda o: model.predict(o, deterministic=True)[0], TASKS[task]["env"])
    return wall, ret, {k: 1000 * v / steps for k, v in timer.items()}


def timed_sb3_sac(base: Any, timer: dict[str, float]) -> Any:
    """SB3's SAC with timers: `train()` is a copy of stable_baselines3 2.x `SAC.train` (MLP,
    no gSDE, no n-step returns) with the phases timed; `collect_rollouts` is SB3's own."""
    import torch as th
    from stable_baselines3.common.utils import polyak_update
    from torch.nn import functional as F

    def add(phase: str, t0: float) -> float:
        t1 = time.perf_counter()
        timer[phase] = timer.get(phase, 0.0) + t1 - t0
        return t1

    class TimedSAC(base):  # type: ignore[misc, valid-type]
        def collect_rollouts(self, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            out = super().collect_rollouts(*args, **kwargs)
            add("env", t0)
            return out

        def train(self, gradient_steps: int, batch_size: int = 64) -> None:
            self.policy.set_training_mode(True)
            optimizers = [self.actor.optimizer, self.critic.optimizer]
            if self.ent_coef_optimizer is not None:
                optimizers += [self.ent_coef_optimizer]
            self._update_learning_rate(optimizers)
            for gradient_step in range(gradient_steps):
                t = time.perf_counter()
                replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
                t = add("sample", t)
                actions_pi, log_prob = self.actor.action_log_prob(replay_data.observations)
                log_prob = log_prob.reshape(-1, 1)
                t = add("actor", t)
                ent_coef = th.exp(self.log_ent_coef.detach())
                ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
                ent_coef_loss.item()
                ent_coef.item()
                self.ent_coef_optimizer.zero_grad()
                ent_coef_loss.backward()
                self.ent_coef_optimizer.step()
                t = add("alpha", t)
                with th.no_grad():
                    next_actions, next_log_prob = self.actor.action_log_prob(replay_data.next_observations)
                    next_q_values = th.cat(self.critic_target(replay_data.next_observations, next_actions), dim=1)
                    next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
                    next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
                    target_q_values = replay_data.rewards + (1 - replay_data.dones) * self.gamma * next_q_values
                current_q_values = self.critic(replay_data.observations, replay_data.actions)
                critic_loss = 0.5 * sum(F.mse_loss(current_q, target_q_values) for current_q in current_q_values)
                critic_loss.item()
                self.critic.optimizer.zero_grad()
                critic_loss.backward()
                self.critic.optimizer.step()
                t = add("critic", t)
                q_values_pi = th.cat(self.critic(replay_data.observations, actions_pi), dim=1)
                min_qf_pi, _ = th.min(q_values_pi, dim=1, keepdim=True)
                actor_loss = (ent_coef * log_prob - min_qf_pi).mean()
                actor_loss.item()
                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()
                t = add("actor", t)
                if gradient_step % self.target_update_interval == 0:
                    polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                    polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)
                add("polyak", t)
            self._n_updates += gradient_steps

    return TimedSAC


def figures(details: dict[str, Any]) -> list[Figure]:
    """One task's figures from its stored summary ({task: summary}): the wall-time ratio per
    round (the goal), the per-phase profile (SAC) and the final returns, for scale."""
    task = next(k for k in details if k in TASKS)
    s = details[task]
    label, goal = TASKS[task]["label"], TASKS[task]["goal"]
    figs = [Figure(f"{label}, Polar / Stable-Baselines3 wall time, round {r}", ratio, "x", goal, "lower")
            for r, ratio in enumerate(s["time_ratio_polar_over_sb3"])]
    for r, ratio in enumerate(s.get("time_ratio_polar_over_sb3_ftz", [])):
        figs.append(Figure(f"{label}, Polar / SB3 with subnormals flushed to zero (as Polar's trainer) wall "
                           f"time, round {r}", ratio, "x", better="lower"))
    for r, ratio in enumerate(s.get("time_ratio_plain_over_fast", [])):
        figs.append(Figure(f"{label}, Polar plain update (autograd, clip_grad_norm_ + optimizer.step()) / "
                           f"fast path wall time, round {r}", ratio, "x", better="lower"))
    if "phases_ms_per_step" in s:
        ph = s["phases_ms_per_step"]
        for side, name in (("polar", "Polar"), ("sb3", "SB3")):
            figs.append(Figure(f"{label}, {name} ms per env step over the update phases "
                               f"(profile of {ph['steps']} steps)", round(sum(ph[side].values()), 2), "ms",
                               better="lower"))
    for side, name in (("polar", "Polar"), ("sb3", "SB3")):
        figs += [Figure(f"{label}, {name} eval return, round {r}", ret, "return")
                 for r, ret in enumerate(s[f"{side}_return"])]
    return figs


def side_vs(task: str, name: str, runs: list[tuple[float, float]], num: list[tuple[float, float]],
            den: list[tuple[float, float]], ratio_key: str, label: str) -> dict[str, list[float]]:
    """An extra side's wall times and returns, and the wall-time ratio num / den per round."""
    ratio = [a[0] / b[0] for a, b in zip(num, den, strict=True)]
    print(f"{task}: {label} = {statistics.median(ratio):.3f} ({[round(x, 3) for x in ratio]}); "
          f"{name} returns {[round(x[1], 1) for x in runs]}")
    return {f"{name}_wall_s": [round(x[0], 2) for x in runs], f"{name}_return": [round(x[1], 1) for x in runs],
            ratio_key: [round(x, 3) for x in ratio]}


def main(argv: list[str] | None = None) -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=[*TASKS, "all"], default="all")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phases", type=int, default=3000, help="SAC: env steps of the per-phase profile (0: none)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    tasks = list(TASKS) if args.task == "all" else [args.task]
    results: dict[str, dict[str, list[tuple[float, float]]]] = {
        t: {"polar": [], "sb3": [], "polar_plain": [], "sb3_ftz": []} for t in tasks}
    for r in range(args.rounds):
        for task in tasks:
            # Alternate who goes first so machine-load drift hits both sides alike.
            order: list[tuple[str, Any]] = [("polar", run_polar), ("sb3", run_sb3)]
            if task == "ppo_cartpole":
                order.insert(1, ("polar_plain", lambda t, s: run_polar(t, s, plain=True)))
            elif task == "sac_pendulum":  # what flushing subnormals alone gives SB3, for a reviewer who asks
                order.append(("sb3_ftz", lambda t, s: run_sb3(t, s, ftz=True)))
            if r % 2:
                order.reverse()
            for name, fn in order:
                wall, ret, _ = fn(task, args.seed + r)
                torch.set_num_threads(1)
                results[task][name].append((wall, ret))
                print(f"round {r} {task:13s} {name:11s} wall {wall:7.1f} s  eval return {ret:8.1f}", flush=True)
    summary: dict[str, Any] = {}
    for task in tasks:
        p, s, plain, ftz = (results[task][k] for k in ("polar", "sb3", "polar_plain", "sb3_ftz"))
        ratios = [a[0] / b[0] for a, b in zip(p, s, strict=True)]
        summary[task] = {
            "polar_wall_s": [round(x[0], 2) for x in p], "sb3_wall_s": [round(x[0], 2) for x in s],
            "polar_return": [round(x[1], 1) for x in p], "sb3_return": [round(x[1], 1) for x in s],
            "time_ratio_polar_over_sb3": [round(x, 3) for x in ratios],
        }
        print(f"{task}: time ratio Polar/SB3 = {statistics.median(ratios):.3f} (median of {len(ratios)}; "
              f"{[round(x, 3) for x in ratios]}); returns Polar {[round(x[1], 1) for x in p]} vs SB3 "
              f"{[round(x[1], 1) for x in s]}")
        if ftz:
            summary[task] |= side_vs(task, "sb3_ftz", ftz, p, ftz, "time_ratio_polar_over_sb3_ftz",
                                     "Polar / SB3 with subnormals flushed")
        if plain:
            summary[task] |= side_vs(task, "polar_plain", plain, plain, p, "time_ratio_plain_over_fast",
                                     "Polar plain path / fast path")
    if "sac_pendulum" in tasks and args.phases:
        _, _, polar_ph = run_polar("sac_pendulum", args.seed, phases=args.phases)
        _, _, sb3_ph = run_sb3("sac_pendulum", args.seed, phases=args.phases)
        print(f"sac_pendulum per-phase ms per env step over {args.phases} steps (Polar | SB3):")
        for k in ("env", "sample", "critic", "actor", "alpha", "polyak"):
            print(f"  {k:7s} {polar_ph.get(k, 0.0):6.3f} | {sb3_ph.get(k, 0.0):6.3f}")
        print(f"  {'total':7s} {sum(polar_ph.values()):6.3f} | {sum(sb3_ph.values()):6.3f}")
        summary["sac_pendulum"]["phases_ms_per_step"] = {"steps": args.phases, "polar": polar_ph, "sb3": sb3_ph}
    for task in tasks:
        # The command that reproduces this task's run alone.
        argv_task = ["--task", task, "--rounds", str(args.rounds), "--seed", str(args.seed)]
        if task == "sac_pendulum":
            argv_task += ["--phases", str(args.phases)]
        details = {task: summary[task]}
        write_result(TASKS[task]["result"], script_command("rl_vs_sb3.py", argv_task), figures(details), details)


if __name__ == "__main__":
    main()
