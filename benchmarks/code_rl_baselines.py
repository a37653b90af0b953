"""Issue 47's RL side: env steps PPO/SAC/DQN from scratch need to reach the code-mode bars.

    nice -n 10 .venv/bin/python benchmarks/code_rl_baselines.py [--task cartpole|acrobot|pendulum|mountaincar|all]
                                                                [--seed 0 | --seeds 0-4] [--out runs/bench]

Each task trains today's recipe under skills/recipes/ (one seed) up to its step budget,
evaluates the policy every `EVAL_EVERY` env steps on 20 deterministic episodes (seeds
disjoint from training, as `polar train` evaluates) and stops at the first evaluation that
meets issue 47's bar; the figure is that evaluation's env step count (lower is better), or
the budget when the bar was not reached (`reached: false` in the details). The bars:
- CartPole-v1 (ppo_cartpole):       eval mean return >= 475
- Acrobot-v1 (ppo_acrobot):         eval mean return >= -100
- Pendulum-v1 (sac_pendulum):       eval mean return >= -200
- MountainCar-v0 (dqn_mountaincar): eval flag rate >= 0.9, the share of episodes that reach the
  flag (terminated before the 200-step limit), as the code tasks judge success; the gym
  harness's own success rule (return >= -110, Gym's reward_threshold) is stricter, so the
  curve records its `success_rate` too.

With `--seeds` (e.g. `0-4`) every task is trained once per seed and the result is
`code_rl_baselines_seeds.json` (`code_rl_baselines_seeds_<task>.json` with one `--task`): per task the median over the seeds of the env steps to the bar
(a seed that never reaches it counts as its budget, a lower bound, and the figure says how
many reached it), with every seed's figure and curve in its details. Each finished
(task, seed) run is kept as `<out>/<recipe>-s<seed>/bench.json`, so a killed run resumes with
the same command.

The step resolution is EVAL_EVERY (the crossing lies between the previous evaluation and the
reported one). The code model's side of the comparison is docs/code-mode.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402


@dataclass(frozen=True)
class Task:
    recipe: str
    env: str
    key: str  # the evaluation's metric: mean_return, or flag_rate (the share of episodes terminated)
    bar: float
    budget: int  # env steps at most (the recipe's own budget, or more where it has none)
    eval_every: int


TASKS: dict[str, Task] = {
    "cartpole": Task("ppo_cartpole", "CartPole-v1", "mean_return", 475.0, 100_000, 5_000),
    "acrobot": Task("ppo_acrobot", "Acrobot-v1", "mean_return", -100.0, 300_000, 10_000),
    "pendulum": Task("sac_pendulum", "Pendulum-v1", "mean_return", -200.0, 20_000, 1_000),
    "mountaincar": Task("dqn_mountaincar", "MountainCar-v0", "flag_rate", 0.9, 120_000, 5_000),
}
EVAL_EPISODES = 20  # as the code model's held-out evaluation (20 episodes per task)


class _Reached(Exception):
    """Raised by the evaluation hook to end training at the first evaluation over the bar."""


def flag_rate(policy: Any, env_id: str, episodes: int, seed: int) -> float:
    """The share of `episodes` deterministic episodes (seeds seed..seed+episodes-1) that end by
    termination (MountainCar: the flag reached), not by the time limit."""
    import gymnasium as gym

    env = gym.make(env_id)
    reached = 0
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=seed + i)
            terminated = truncated = False
            while not (terminated or truncated):
                obs, _, terminated, truncated, _ = env.step(policy.act(obs, deterministic=True))
            reached += bool(terminated)
    finally:
        env.close()
    return reached / episodes


def figures(details: dict[str, Any]) -> list[Figure]:
    """Per task: the env steps to the bar (the budget when not reached, flagged in `what`)."""
    if "seeds" in details:
        return seed_figures(details)
    out = []
    for name, run in details["runs"].items():
        task = TASKS[name]
        what = f"{task.recipe} {task.env}: env steps to eval {task.key} >= {task.bar:g}"
        if not run["reached"]:
            what += f" (not reached within {run['budget']:,})"
        out.append(Figure(f"{what}, seed {details['seed']}", run["env_steps"], "env steps", better="lower"))
    return out


def seed_figures(details: dict[str, Any]) -> list[Figure]:
    """Per task: the median over the seeds of the env steps to the bar, each seed's in `what`."""
    out = []
    for name, by_seed in details["runs"].items():
        task = TASKS[name]
        steps = [run["env_steps"] for run in by_seed.values()]
        reached = sum(run["reached"] for run in by_seed.values())
        each = ", ".join(f"{s}: {run['env_steps']:,}{'' if run['reached'] else ' (not reached)'}"
                         for s, run in by_seed.items())
        what = (f"{task.recipe} {task.env}: median env steps to eval {task.key} >= {task.bar:g} over "
                f"{len(steps)} seeds, {reached} reached it (per seed {each})")
        out.append(Figure(what, float(statistics.median(steps)), "env steps", better="lower"))
    return out


def cached_run(name: str, seed: int, out: Path) -> dict[str, Any]:
    """`run_task`, kept as `<out>/<recipe>-s<seed>/bench.json` so that a killed sweep resumes."""
    path = out / f"{TASKS[name].recipe}-s{seed}" / "bench.json"
    if path.is_file():
        return json.loads(path.read_text())
    run = run_task(name, seed, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1) + "\n")
    return run


def run_task(name: str, seed: int, out: Path) -> dict[str, Any]:
    """Train `name`'s recipe with an evaluation hook; the first env step at the bar, or None."""
    from polar.config import load_yaml
    from polar.rl.config import TrainConfig
    from polar.rl.trainer import Trainer
    from polar.workspace import find_asset

    task = TASKS[name]
    recipe = find_asset("skills", f"recipes/{task.recipe}.yaml")
    if recipe is None:
        raise SystemExit(f"no recipe skills/recipes/{task.recipe}.yaml")
    # eval_every 0: the trainer evaluates only at the end; the hook evaluates on our cadence.
    cfg = load_yaml(recipe, TrainConfig).model_copy(update={
        "seed": seed, "progress": False, "steps": task.budget, "eval_every": 0,
        "eval_episodes": EVAL_EPISODES, "torch_threads": 1})
    trainer = Trainer(cfg, out / f"{task.recipe}-s{seed}", overwrite=True)
    curve: list[dict[str, Any]] = []
    next_eval = [task.eval_every]

    def hook(t: Trainer) -> None:
        if t.env_steps < next_eval[0]:
            return
        next_eval[0] += task.eval_every
        point = _point(t, t.evaluate(), round(t.wall_s, 1))
        curve.append(point)
        print(f"  {name} {point}", flush=True)
        if point[task.key] >= task.bar:
            raise _Reached

    def _point(t: Trainer, ev: dict[str, Any], wall_s: float) -> dict[str, Any]:
        point = {"env_steps": t.env_steps, "wall_s": wall_s, "mean_return": ev["mean_return"]}
        if "success_rate" in ev:
            point["success_rate"] = ev["success_rate"]
        if task.key == "flag_rate":
            point["flag_rate"] = flag_rate(t.policy, task.env, EVAL_EPISODES, cfg.eval_seed)
        return point

    trainer.hooks.append(hook)
    reached = False
    try:
        final = trainer.run()
    except _Reached:
        reached = True
        final = {}
    else:  # the end of the budget: the trainer's final evaluation counts too
        curve.append(_point(trainer, final, final["wall_s"]))
        reached = curve[-1][task.key] >= task.bar
    steps = curve[-1]["env_steps"] if reached else task.budget
    return {"recipe": f"skills/recipes/{task.recipe}.yaml", "env": task.env, "key": task.key, "bar": task.bar,
            "budget": task.budget, "eval_every": task.eval_every, "eval_episodes": EVAL_EPISODES,
            "reached": bool(reached), "env_steps": int(steps), "wall_s": curve[-1]["wall_s"], "curve": curve}


def parse_seeds(text: str) -> list[int]:
    """`0-4` or `0,2,5` -> the seeds, in order."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise SystemExit(f"--seeds: {text!r} is not a list of seeds or a range like 0-4")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"--seeds: {text!r} repeats a seed")
    return seeds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="env steps PPO/SAC/DQN need to reach issue 47's code-mode bars")
    ap.add_argument("--task", choices=[*TASKS, "all"], default="all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", help="several seeds (0-4, or 0,1,2): writes code_rl_baselines_seeds.json")
    ap.add_argument("--out", default="runs/bench")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    names = list(TASKS) if args.task == "all" else [args.task]
    if args.seeds:
        seeds = parse_seeds(args.seeds)
        by_task: dict[str, dict[str, Any]] = {}
        for name in names:
            for seed in seeds:
                r = by_task.setdefault(name, {})[str(seed)] = cached_run(name, seed, Path(args.out))
                print(f"{name} seed {seed}: {'reached' if r['reached'] else 'not reached'} at {r['env_steps']} env steps "
                      f"({r['wall_s']} s)", flush=True)
        details = {"seeds": seeds, "runs": by_task}
        write_result("code_rl_baselines_seeds" + ("" if args.task == "all" else f"_{args.task}"),
                     script_command("code_rl_baselines.py", ["--task", args.task, "--seeds", args.seeds]),
                     figures(details), details)
        return 0
    runs = {}
    for name in names:
        runs[name] = run_task(name, args.seed, Path(args.out))
        r = runs[name]
        print(f"{name}: {'reached' if r['reached'] else 'not reached'} at {r['env_steps']} env steps "
              f"({r['wall_s']} s)", flush=True)
    details = {"seed": args.seed, "runs": runs}
    write_result("code_rl_baselines", script_command("code_rl_baselines.py", ["--task", args.task, "--seed", str(args.seed)]),
                 figures(details), details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
