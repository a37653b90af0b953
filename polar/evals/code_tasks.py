"""Code-mode tasks: a model writes `act(obs)`, the sandbox plays whole episodes with it.

A task is a harness, the observation the program sees (a flat list of floats, documented in
the prompt), the action contract, and the rule that scores an episode. One sampled program is
one decision: it runs every step of an episode (`polar.evals.code_runner`).

| task | harness | obs | action | episode success |
| --- | --- | --- | --- | --- |
| cartpole | gym:CartPole-v1 (500 steps) | [x, x_dot, angle, angle_dot] | 0 / 1 | return >= 475 |
| acrobot | gym:Acrobot-v1 (500 steps) | [cos1, sin1, cos2, sin2, w1, w2] | 0 / 1 / 2 | return >= -100 |
| mountaincar | gym:MountainCar-v0 (200 steps) | [position, velocity] | 0 / 1 / 2 | reaches the flag |
| pendulum | gym:Pendulum-v1 (200 steps) | [cos_a, sin_a, w] | [torque] | return >= -200 |
| maze | maze:PointMaze_Large-v3, goal one move away (100 steps) | [dx, dy, vx, vy] | [fx, fy] | ball within 0.45 of the waypoint |

The prompt names the observation with Python identifiers (`obs = [x, x_dot, angle, angle_dot]`),
then says what each is: a 135M model conditions poorly on a task's name but copies well, so a
program's first line, `x, x_dot, angle, angle_dot = obs`, is a copy of the prompt.

The suite's thresholds (issue 47's "what must show") are on the mean over episodes; a
program that fails to load, raises or times out earns the task's `lowest_return`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from polar.errors import ConfigError
from polar.harnesses.base import Harness, HarnessWrapper, StepResult


@dataclass(frozen=True)
class CodeTask:
    """One code-mode task (see the module docstring)."""

    name: str
    harness: str
    title: str  # the env, as the prompt names it
    goal: str
    observation: str  # the obs entries' names, in order: Python identifiers a program unpacks
    meaning: str  # what each named entry is
    action: str  # the action contract
    score: str  # how an episode is scored
    observe: Callable[[Any], list[float]]  # the harness's observation -> what act(obs) gets
    max_steps: int
    lowest_return: float  # the worst return an episode can have: what a failed program earns
    threshold: float  # issue 47's bar, on `metric`'s mean over episodes
    metric: str  # "return" (mean episode return) or "success" (success rate)
    success: Callable[[float, bool], bool]  # (episode return, terminated) -> success
    harness_kwargs: dict[str, Any] = field(default_factory=dict)

    def prompt_inputs(self) -> dict[str, str]:
        return {"title": self.title, "goal": self.goal, "observation": self.observation,
                "meaning": self.meaning, "action": self.action, "score": self.score}

    @property
    def names(self) -> list[str]:
        """The observation's names, in order (`[x, x_dot]` -> `['x', 'x_dot']`)."""
        return [n.strip() for n in self.observation.strip("[]").split(",")]


def _floats(obs: Any) -> list[float]:
    return [float(v) for v in obs]


def _maze_obs(obs: Any) -> list[float]:
    """The waypoint relative to the ball, then the ball's velocity: the local controller's view
    (no map, no absolute position)."""
    x, y, vx, vy = (float(v) for v in list(obs["observation"])[:4])
    gx, gy = (float(v) for v in list(obs["desired_goal"])[:2])
    return [gx - x, gy - y, vx, vy]


# Pendulum's worst step: angle pi, speed 8, torque 2 (Gymnasium's reward formula), 200 steps.
_PENDULUM_WORST = -200 * (math.pi ** 2 + 0.1 * 8 ** 2 + 0.001 * 2 ** 2)

TASKS: dict[str, CodeTask] = {t.name: t for t in [
    CodeTask(
        name="cartpole", harness="gym:CartPole-v1", title="CartPole-v1",
        goal="Keep the pole upright by pushing the cart.",
        observation="[x, x_dot, angle, angle_dot]",
        meaning="cart position and velocity, pole angle (rad, > 0 leans right) and angular velocity",
        action="0 (push left) or 1 (push right)",
        score="+1 per step the pole stays up, at most 500.",
        observe=_floats, max_steps=500, lowest_return=0.0, threshold=475.0, metric="return",
        success=lambda ret, term: ret >= 475.0),
    CodeTask(
        name="acrobot", harness="gym:Acrobot-v1", title="Acrobot-v1",
        goal="Swing the tip of the two-link arm above the bar; only the middle joint has a motor.",
        observation="[cos1, sin1, cos2, sin2, w1, w2]",
        meaning="cos and sin of a1 (base link angle) and a2 (joint angle), w1 and w2 their angular velocities",
        action="0 (torque -1), 1 (none) or 2 (torque +1)",
        score="-1 per step until the tip is up, at most 500 steps.",
        observe=_floats, max_steps=500, lowest_return=-500.0, threshold=-100.0, metric="return",
        success=lambda ret, term: ret >= -100.0),
    CodeTask(
        name="mountaincar", harness="gym:MountainCar-v0", title="MountainCar-v0",
        goal="Drive the underpowered car up the right hill to the flag at position 0.5.",
        observation="[position, velocity]",
        meaning="the car's position (-1.2 to 0.6, the valley near -0.5) and velocity (-0.07 to 0.07)",
        action="0 (push left), 1 (no push) or 2 (push right)",
        score="-1 per step until the flag, at most 200 steps; success = reaching the flag.",
        observe=_floats, max_steps=200, lowest_return=-200.0, threshold=0.9, metric="success",
        success=lambda ret, term: term),
    CodeTask(
        name="pendulum", harness="gym:Pendulum-v1", title="Pendulum-v1",
        goal="Swing the pendulum up and hold it upright (angle 0); the motor is too weak to lift it directly.",
        observation="[cos_a, sin_a, w]",
        meaning="cos and sin of the angle a (a = 0 upright), w the angular velocity",
        action="[torque], a list of one float in [-2, 2]",
        score="-(angle^2 + 0.1 velocity^2 + 0.001 torque^2) per step, 200 steps.",
        observe=_floats, max_steps=200, lowest_return=_PENDULUM_WORST, threshold=-200.0, metric="return",
        success=lambda ret, term: ret >= -200.0),
    CodeTask(
        name="maze", harness="maze:PointMaze_Large-v3", title="PointMaze ball",
        goal="Roll the ball to a waypoint in the next cell (about 1 unit away).",
        observation="[dx, dy, vx, vy]",
        meaning="dx = waypoint x - ball x, dy = waypoint y - ball y, vx and vy the ball's velocity",
        action="[fx, fy], the force, each in [-1, 1]",
        score="success = the ball within 0.45 of the waypoint, within 100 steps.",
        observe=_maze_obs, max_steps=100, lowest_return=0.0, threshold=0.9, metric="success",
        success=lambda ret, term: term,
        harness_kwargs={"goal_distance": 1, "max_episode_steps": 100}),
]}


def get_task(name: str) -> CodeTask:
    if name not in TASKS:
        raise ConfigError(f"unknown code-mode task {name!r}; expected one of {', '.join(TASKS)}")
    return TASKS[name]


def task_messages(task: CodeTask) -> list[dict[str, str]]:
    """The chat the model answers with one program (templates `code_system`, `code_task`)."""
    from polar.prompts.templates import load_template

    return [{"role": "system", "content": load_template("code_system").render({}).strip()},
            {"role": "user", "content": load_template("code_task").render(task.prompt_inputs()).strip()}]


class CodeTaskHarness(HarnessWrapper):
    """The task's harness, its observations mapped to the flat list the program sees. `inner`:
    a harness made elsewhere (a suite's, e.g. `harnesses/code_cartpole.yaml`), else the task's
    own is made here."""

    def __init__(self, task: CodeTask, inner: Harness | None = None) -> None:
        from polar.harnesses.registry import make_harness

        super().__init__(inner if inner is not None else make_harness(task.harness, **task.harness_kwargs))
        self.task = task

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.inner.reset(seed=seed, options=options)
        return self.task.observe(obs), info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.inner.step(action)
        return self.task.observe(obs), reward, terminated, truncated, info


def make_task_harness(task: CodeTask | str) -> Harness:
    return CodeTaskHarness(task if isinstance(task, CodeTask) else get_task(task))
