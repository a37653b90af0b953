"""SFT data for code mode: parametrised controller programs, never only the final answers.

For each task family a few controller *shapes* (proportional, threshold, energy pumping) with
their gains drawn from wide ranges: some draws solve the task, many do not. Paired with the
prompt the model sees (`code_tasks.task_messages`), they teach the format and the space of
sensible programs; which gains score well is left to RL from the sandbox's return
(`polar.evals.code_rl`). Programs are kept short: a 135M model writes them, and SFT on two CPU
cores runs at ~250 tokens/s.

    polar code dataset --out runs/code/data --per-task 80
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from polar.evals.code_tasks import TASKS, CodeTask, task_messages
from polar.llm.dataset import DatasetInfo, Example, write_dataset

Draw = Callable[[random.Random], str]


def _g(rng: random.Random, lo: float, hi: float) -> str:
    """A gain in [lo, hi], written with 2 significant digits (short programs, few tokens)."""
    return f"{rng.uniform(lo, hi):.2g}"


def _cartpole_pd(r: random.Random) -> str:
    return ("def act(obs):\n    x, v, a, w = obs\n"
            f"    return 1 if {_g(r, 0.2, 2)} * a + {_g(r, -0.5, 1.5)} * w > 0 else 0\n")


def _cartpole_full(r: random.Random) -> str:
    return ("def act(obs):\n    x, v, a, w = obs\n"
            f"    u = a + {_g(r, -0.2, 1)} * w + {_g(r, -0.1, 0.1)} * x + {_g(r, -0.3, 0.3)} * v\n"
            "    return 1 if u > 0 else 0\n")


def _acrobot_sign(r: random.Random) -> str:
    return ("def act(obs):\n    w1, w2 = obs[4], obs[5]\n"
            f"    return 2 if {_g(r, -1, 1)} * w1 + {_g(r, -0.5, 1.5)} * w2 > 0 else 0\n")


def _acrobot_deadband(r: random.Random) -> str:
    return ("def act(obs):\n    w2 = obs[5]\n"
            f"    if w2 > {_g(r, -0.3, 0.3)}:\n        return 2\n"
            f"    if w2 < {_g(r, -0.3, 0.3)}:\n        return 0\n    return 1\n")


def _mountaincar_velocity(r: random.Random) -> str:
    return ("def act(obs):\n    pos, vel = obs\n"
            f"    return 2 if vel > {_g(r, -0.02, 0.02)} else {r.choice([0, 0, 1])}\n")


def _mountaincar_position(r: random.Random) -> str:
    return ("def act(obs):\n    pos, vel = obs\n"
            f"    if vel > {_g(r, -0.02, 0.02)} or pos < {_g(r, -1.2, -0.2)}:\n        return 2\n"
            "    return 0\n")


def _pendulum_energy(r: random.Random) -> str:
    return ("import math\n\ndef act(obs):\n    c, s, w = obs\n    a = math.atan2(s, c)\n"
            f"    if c > {_g(r, 0.6, 0.98)}:\n        return [-{_g(r, 2, 20)} * a - {_g(r, 0.2, 4)} * w]\n"
            f"    e = 0.5 * w * w + 15 * c\n    return [{_g(r, 0.1, 3)} * (15 - e) * w]\n")


def _pendulum_pump(r: random.Random) -> str:
    return ("import math\n\ndef act(obs):\n    c, s, w = obs\n    a = math.atan2(s, c)\n"
            f"    if c > {_g(r, 0.6, 0.98)}:\n        return [-{_g(r, 2, 20)} * a - {_g(r, 0.2, 4)} * w]\n"
            "    return [2.0 if w > 0 else -2.0]\n")


def _maze_pd(r: random.Random) -> str:
    return ("def act(obs):\n    dx, dy, vx, vy = obs\n"
            f"    kp, kd = {_g(r, 0.02, 8)}, {_g(r, -3, 3)}\n"
            "    return [kp * dx - kd * vx, kp * dy - kd * vy]\n")


def _maze_bang(r: random.Random) -> str:
    return ("def act(obs):\n    dx, dy, vx, vy = obs\n"
            f"    fx = {_g(r, 0.05, 1)} if dx > {_g(r, -0.5, 1)} * vx else -{_g(r, 0.05, 1)}\n"
            f"    fy = {_g(r, 0.05, 1)} if dy > {_g(r, -0.5, 1)} * vy else -{_g(r, 0.05, 1)}\n"
            "    return [fx, fy]\n")


FAMILIES: dict[str, list[Draw]] = {
    "cartpole": [_cartpole_pd, _cartpole_full],
    "acrobot": [_acrobot_sign, _acrobot_deadband],
    "mountaincar": [_mountaincar_velocity, _mountaincar_position],
    "pendulum": [_pendulum_energy, _pendulum_pump],
    "maze": [_maze_pd, _maze_bang],
}


def draw_programs(task: str, n: int, seed: int) -> list[str]:
    """`n` distinct programs of the task's families (alternating), gains drawn with `seed`."""
    rng = random.Random(f"{task}:{seed}")
    fams = FAMILIES[task]
    out: list[str] = []
    seen: set[str] = set()
    tries = 0
    while len(out) < n and tries < 50 * n:
        p = fams[tries % len(fams)](rng)
        tries += 1
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def example(task: CodeTask, program: str, i: int, messages: list[dict[str, str]] | None = None) -> Example:
    from polar.prompts.templates import load_template

    return Example(messages=messages or task_messages(task), completion=program, template="code_task",
                   template_hash=load_template("code_task").version, source="generated:code-controllers",
                   harness_id=task.harness, seed=None, episode_id=f"gen-{task.name}-{i}", decision_index=0,
                   skill="code")


def build_dataset(out: str | Path, per_task: int = 80, seed: int = 0, val_per_task: int = 4,
                  tasks: list[str] | None = None) -> DatasetInfo:
    """A dataset folder (`polar.llm.dataset` format) of generated programs for each task."""
    splits: dict[str, list[Example]] = {"train": [], "validation": []}
    for name in tasks or list(TASKS):
        task = TASKS[name]
        msgs = task_messages(task)
        progs = draw_programs(name, per_task + val_per_task, seed)
        for i, p in enumerate(progs):
            splits["validation" if i >= per_task else "train"].append(example(task, p, i, msgs))
    info = DatasetInfo(sources=[f"polar.evals.code_programs (seed {seed}, {per_task} per task)"],
                       keep="code", val_fraction=val_per_task / max(per_task + val_per_task, 1))
    return write_dataset(out, splits, info)
