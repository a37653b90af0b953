"""The Harness protocol: one interface over Gymnasium envs, grid worlds and out-of-process games.

A harness has Gymnasium semantics (`terminated` = the task ended, `truncated` = cut short,
e.g. by a step limit or a crashed game process) plus a `spec` a planner can read alone, and
optionally a symbolic state (objects and predicates) for symbolic planners and skills.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, Literal

import gymnasium as gym
from pydantic import BaseModel, ConfigDict, Field, model_validator

from polar.episode import jsonable
from polar.errors import HarnessError
from polar.harnesses.spaces import SpaceSpec, describe_space, spec_to_space

StepResult = tuple[Any, float, bool, bool, dict[str, Any]]


class SymbolicObject(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    color: str | None = None
    pos: tuple[int, int] | None = None
    state: str | None = None  # e.g. "open", "closed", "locked" for doors


class SymbolicState(BaseModel):
    """What holds now, in words a symbolic planner or a skill's termination test reads."""

    model_config = ConfigDict(extra="forbid")

    predicates: list[str] = Field(default_factory=list)  # e.g. "carrying(key,yellow)"
    goal: list[str] = Field(default_factory=list)  # goal predicates, e.g. "at(goal)"
    objects: list[SymbolicObject] = Field(default_factory=list)
    agent: dict[str, Any] = Field(default_factory=dict)  # pose, carried object
    mission: str | None = None

    def holds(self, predicate: str) -> bool:
        return predicate in self.predicates


class SuccessRule(BaseModel):
    """How success is told on a harness that does not report `info["success"]`.

    `survive`: the episode ran to the harness's own step limit without terminating (balance
    tasks: CartPole's pole stayed up); `terminated`: the environment ended the episode itself
    before its step limit (MountainCar: the flag reached, whatever the return); `min_return`: the episode ended on its own (terminated
    or truncated by the harness, not cut short by Polar or by an agent's failure) with a
    return of at least `threshold` (a return threshold is over whole episodes: on
    MountainCar, -1 per step, an episode cut after 0 or 50 steps has a return above -110).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["survive", "terminated", "min_return"]
    threshold: float | None = None

    @model_validator(mode="after")
    def _threshold(self) -> SuccessRule:
        if (self.kind == "min_return") != (self.threshold is not None):
            raise ValueError("threshold: give it for kind min_return, and only then")
        return self

    def judge(self, *, episode_return: float, terminated: bool, truncated: bool,
              info: dict[str, Any]) -> bool:
        ended_on_its_own = (terminated or truncated) and "polar_step_limit" not in info
        if self.kind == "min_return":
            return ended_on_its_own and episode_return >= float(self.threshold)  # type: ignore[arg-type]
        if self.kind == "terminated":
            return terminated and "polar_step_limit" not in info
        # truncated by the harness itself, not by a shorter cap Polar put on the episode
        return truncated and not terminated and "polar_step_limit" not in info

    def describe(self) -> str:
        if self.kind == "survive":
            return "the episode reaches the step limit without terminating"
        if self.kind == "terminated":
            return "the environment ends the episode (terminated) before the step limit"
        return f"the episode ends with a return of at least {self.threshold:g}"


class HarnessSpec(BaseModel):
    """Static metadata: a planner must be able to read a harness from this alone."""

    model_config = ConfigDict(extra="forbid")

    id: str
    description: str
    observation_space: SpaceSpec
    action_space: SpaceSpec
    action_meanings: list[str] | None = None
    reward_range: tuple[float, float] = (float("-inf"), float("inf"))
    max_steps: int | None = None
    # How success is told (`polar.harnesses.rollout.judge`): a harness that reports it
    # (`info["success"]`, or gym-style `info["is_success"]`) decides, ended or not; the success
    # rule and the goal predicates decide only where the environment reports nothing.
    reports_success: bool = False  # whether info["success"] is set at episode end
    success: SuccessRule | None = None  # how to tell success when info["success"] is absent
    # Whether the reward marks success: a successful episode's return is > 0 (MiniGrid's
    # terminal reward). Reports flag a row whose successes came with no return.
    reward_marks_success: bool = False
    # The action by which the agent declares the task done, where the environment judges
    # success only when it is taken (MiniGrid's GoToDoor / GoToObject reward `done` next to
    # the target): a planner's finish(success=true) takes it.
    done_action: str | None = None
    predicate_vocabulary: list[str] = Field(default_factory=list)  # e.g. "carrying(TYPE,COLOR)"
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _done_action_exists(self) -> HarnessSpec:
        if self.done_action is not None and self.done_action not in (self.action_meanings or []):
            raise ValueError(f"done_action: {self.done_action!r} is not one of the action meanings "
                             f"({self.action_meanings})")
        return self

    def describe(self) -> str:
        """The spec as text, exactly as planners receive it."""
        lines = [f"Harness: {self.id}", self.description.strip(), ""]
        lines.append(f"Observation space: {describe_space(self.observation_space)}")
        lines.append(f"Action space: {describe_space(self.action_space)}")
        if self.action_meanings:
            lines.append("Actions: " + ", ".join(f"{i}={m}" for i, m in enumerate(self.action_meanings)))
        lo, hi = self.reward_range
        lines.append(f"Reward range: [{lo}, {hi}]")
        if self.max_steps:
            lines.append(f"Step limit: {self.max_steps}")
        if self.success is not None and not self.reports_success:
            lines.append(f"Success: {self.success.describe()}")
        if self.predicate_vocabulary:
            lines.append("Predicates: " + ", ".join(self.predicate_vocabulary))
        if self.done_action is not None:  # last: the text of every other harness stays as it was
            lines.append(f"Done: the episode succeeds only when the agent takes {self.done_action!r} with the "
                         "task achieved; finish(success=true) takes it")
        return "\n".join(lines)


class Harness(ABC):
    """Base class of every harness. Subclasses set `spec` and implement reset/step/close."""

    spec: HarnessSpec

    @abstractmethod
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        ...

    @abstractmethod
    def step(self, action: Any) -> StepResult:
        ...

    def close(self) -> None:  # noqa: B027 - optional for harnesses holding nothing
        pass

    def symbolic_state(self) -> SymbolicState | None:
        """The symbolic state now, or None when the harness has none."""
        return None

    def render_text(self, obs: Any) -> str:
        """A text view of an observation for a planner; harnesses with richer views override."""
        return json.dumps(jsonable(obs, digits=4))

    def capability(self, name: str) -> Any:
        """Privileged simulator state a harness declares (e.g. MiniGrid's `"grid"`: the full
        grid and agent pose), for skills that need more than the observation. Raises
        HarnessError naming what this harness offers instead."""
        offered = ", ".join(sorted(self.capabilities())) or "none"
        raise HarnessError(f"harness {self.spec.id!r} has no capability {name!r} (it offers: {offered})")

    def capabilities(self) -> set[str]:
        """The names `capability()` answers."""
        return set()

    def episode_stats(self) -> dict[str, Any]:
        """What the current episode achieved beyond its return, as JSON values, for a domain's
        own scores (Crafter: the achievements unlocked); read at the episode's end and kept in
        `EpisodeRecord.extra["episode_stats"]`. Empty where a harness scores by return and
        success alone."""
        return {}

    @property
    def observation_space(self) -> gym.Space:
        return spec_to_space(self.spec.observation_space)

    @property
    def action_space(self) -> gym.Space:
        return spec_to_space(self.spec.action_space)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HarnessWrapper(Harness):
    """Delegates exactly the Harness interface (capabilities included) to `inner`; a wrapper
    overrides what it adds (recording, tracing, counting) and nothing else."""

    def __init__(self, inner: Harness) -> None:
        self.inner = inner
        self.spec = inner.spec

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        return self.inner.step(action)

    def close(self) -> None:
        self.inner.close()

    def symbolic_state(self) -> SymbolicState | None:
        return self.inner.symbolic_state()

    def render_text(self, obs: Any) -> str:
        return self.inner.render_text(obs)

    def capability(self, name: str) -> Any:
        return self.inner.capability(name)

    def capabilities(self) -> set[str]:
        return self.inner.capabilities()

    def episode_stats(self) -> dict[str, Any]:
        return self.inner.episode_stats()

    @property
    def observation_space(self) -> gym.Space:
        return self.inner.observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.inner.action_space


class HarnessEnv(gym.Env):
    """A gymnasium.Env view of a harness, for vector envs, RL and Gymnasium's env checker."""

    metadata = {"render_modes": []}

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.observation_space = harness.observation_space
        self.action_space = harness.action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return self.harness.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        return self.harness.step(action)

    def close(self) -> None:
        self.harness.close()
