"""SFT data for code mode: parametrised controller programs, never only the final answers.

For each task one controller *shape* (proportional, threshold, energy pumping) with its gains
drawn from ranges wide enough that many draws fail: paired with the prompt the model sees
(`code_tasks.task_messages`), they teach the format and the space of sensible programs; which
gains score well is left to RL from the sandbox's return (`polar.evals.code_rl`).

Every program has the same layout, written for a 135M model that copies better than it
conditions on a task's name: `def act(obs):`, then the prompt's observation names unpacked in
the prompt's order (`x, x_dot, angle, angle_dot = obs`, a copy of the prompt's `obs = [...]`
line), then one or two lines over those names only, then the action. Programs are short (SFT
on two CPU cores runs at ~100 tokens/s).

    polar code dataset --out runs/code/data --per-task 150
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


def _head(task: str) -> str:
    """`def act(obs):` and the unpacking of the task's observation names, as the prompt lists them."""
    return f"def act(obs):\n    {', '.join(TASKS[task].names)} = obs\n"


# The ranges were set so that, on seeds 0-2, roughly a third to three quarters of the draws
# solve every episode (docs/code-mode.md has the measured shares); MountainCar's, since run 4,
# solve from every start.
def _cartpole(r: random.Random) -> str:
    return (_head("cartpole") + f"    u = {_g(r, 0.2, 2)} * angle + {_g(r, 0, 1)} * angle_dot"
            f" + {_g(r, -0.1, 0.2)} * x + {_g(r, -0.1, 0.5)} * x_dot\n    return 1 if u > 0 else 0\n")


def _acrobot(r: random.Random) -> str:
    return _head("acrobot") + f"    u = {_g(r, -1.5, 0.2)} * w1 + {_g(r, -0.6, 1)} * w2\n    return 2 if u > 0 else 0\n"


def _mountaincar(r: random.Random) -> str:
    # Push in the direction of motion, measured against a line through the valley's floor
    # (position -p, the floor is at -0.52): push right when velocity > k * (position + p) / 100.
    # Runs 4 and 5's family (docs/code-mode.md): every (k, p) in these ranges reaches the flag from
    # every start within the 200 steps (a grid of 201 starts over [-0.6, -0.4]), so the data
    # pins the threshold's scale. Run 3's `velocity + k1 * position + k0` with k1, k0 drawn in
    # +-0.02 / +-0.01 did so for 20% of its draws (from 75% of the starts), and its models wrote k1 ten times
    # too large; the offset k0 = k1 * p is what must track k1, hence one factor.
    # Run 5: velocity scaled by 100, so that k is written as 1-6 like the other tasks' gains
    # (code-sft@4, trained on `velocity - 0.032 * (...)`, wrote 0.12-0.42: "0.0" is rare in the data).
    return (_head("mountaincar") + f"    u = 100 * velocity - {_g(r, 1, 6)} * (position + {_g(r, 0.45, 0.6)})\n"
            "    return 2 if u > 0 else 0\n")


def _pendulum(r: random.Random) -> str:
    # PD near the top (sin_a ~ the angle there), energy pumping below: E = w^2/2 + 15 cos_a
    # in the env's units, 15 upright at rest.
    return (_head("pendulum") + f"    if cos_a > {_g(r, 0.3, 0.98)}:\n"
            f"        return [-{_g(r, 1, 20)} * sin_a - {_g(r, 0.1, 4)} * w]\n"
            f"    return [{_g(r, -1, 3)} * (15 - 0.5 * w * w - 15 * cos_a) * w]\n")


def _maze(r: random.Random) -> str:
    return (_head("maze") + f"    kp, kd = {_g(r, -1, 8)}, {_g(r, -2, 3)}\n"
            "    return [kp * dx - kd * vx, kp * dy - kd * vy]\n")


FAMILIES: dict[str, list[Draw]] = {
    "cartpole": [_cartpole],
    "acrobot": [_acrobot],
    "mountaincar": [_mountaincar],
    "pendulum": [_pendulum],
    "maze": [_maze],
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
