"""`gym:<EnvId>`: any registered Gymnasium environment as a harness; `gym:package.module:Callable`
builds an env class or factory directly (no registration)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from polar.errors import HarnessError
from polar.harnesses.base import Harness, HarnessSpec, StepResult, SuccessRule
from polar.harnesses.spaces import HARNESS_SAMPLER, sampler_seed, space_to_spec


def _first_paragraph(doc: str | None, limit: int = 600) -> str:
    if not doc:
        return ""
    text = inspect.cleandoc(doc)
    for block in text.split("\n\n"):
        block = " ".join(line.strip() for line in block.splitlines() if line.strip())
        if block and not block.startswith(("#", "|", "..")) and len(block) > 20:
            return block[:limit]
    return text[:limit]


# Balance tasks: success is keeping the system up until the time limit.
SURVIVAL_TASKS = frozenset({"CartPole", "InvertedPendulum", "InvertedDoublePendulum"})


def default_success_rule(env: gym.Env) -> SuccessRule | None:
    """Survival for balance tasks; else the registered `reward_threshold` as a per-episode
    return to reach; else None (success unknown: reports show returns only)."""
    spec = env.spec
    if spec is None:
        return None
    if spec.name in SURVIVAL_TASKS and spec.max_episode_steps:
        return SuccessRule(kind="survive")
    if spec.reward_threshold is not None:
        return SuccessRule(kind="min_return", threshold=float(spec.reward_threshold))
    return None


def entry_point_spec(env_id: str) -> EnvSpec | None:
    """For `package.module:Callable` (an env class or factory rather than a registered id), a
    spec that builds it directly, so no module needs to call `gym.register` when imported."""
    module, sep, name = env_id.partition(":")
    if not sep or not module or not name.isidentifier():
        return None
    try:
        target = getattr(importlib.import_module(module), name, None)
    except ImportError as err:
        raise HarnessError(f"gym:{env_id}: cannot import {module!r}: {err}") from None
    if not callable(target):
        return None  # `module:EnvId`: a module that registers EnvId when imported
    return EnvSpec(id=name, entry_point=env_id, disable_env_checker=True)


def make_gym_env(env_id: str, **kwargs: Any) -> gym.Env:
    try:
        return gym.make(entry_point_spec(env_id) or env_id, **kwargs)
    except gym.error.Error as err:
        raise HarnessError(f"gym:{env_id}: {err}") from None
    except TypeError as err:
        raise HarnessError(f"gym:{env_id}: bad keyword arguments: {err}") from None


def _declared_kinds(env: gym.Env) -> dict[str, Any]:
    """An env's `metadata["observation_kinds"]` (how a policy reads each observation key)."""
    kinds = (env.metadata or {}).get("observation_kinds")
    return {"observation_kinds": dict(kinds)} if kinds else {}


class GymHarness(Harness):
    """Wraps a gymnasium env; adds a spec a planner can read."""

    def __init__(self, env_id: str, description: str | None = None, **kwargs: Any) -> None:
        self.env = make_gym_env(env_id, **kwargs)
        self._seeded = False
        meanings = None
        get_meanings = getattr(self.env.unwrapped, "get_action_meanings", None)
        if callable(get_meanings):
            meanings = list(get_meanings())
        max_steps = self.env.spec.max_episode_steps if self.env.spec else None
        self.spec = HarnessSpec(
            id=f"gym:{env_id}",
            description=description or _first_paragraph(type(self.env.unwrapped).__doc__)
            or f"Gymnasium environment {env_id}.",
            observation_space=space_to_spec(self.env.observation_space),
            action_space=space_to_spec(self.env.action_space),
            action_meanings=meanings,
            max_steps=max_steps,
            success=default_success_rule(self.env),
            extra=({"kwargs": kwargs} if kwargs else {}) | _declared_kinds(self.env),
        )

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None and not self._seeded:
            self.env.action_space.seed(sampler_seed(seed, HARNESS_SAMPLER))  # not the game's stream
            self._seeded = True
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()

    @property
    def observation_space(self) -> gym.Space:
        return self.env.observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.env.action_space
