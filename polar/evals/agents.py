"""The agents an eval compares, behind one small interface that produces EpisodeRecords.

`prepare(harness, seed, work_dir)` does the per-cell work before evaluation (training a pure-RL
policy, loading a planner and its skill library) and reports what it cost in env steps;
`episode(harness, task, env_seed, ...)` plays one episode and returns its record.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from polar.episode import EpisodeRecord, StepRecord
from polar.errors import PolarError
from polar.evals.suite import (
    AgentConfig,
    HarnessEntry,
    PlannerAgentConfig,
    PureRLAgentConfig,
    RandomAgentConfig,
)
from polar.harnesses.base import Harness


class CurvePoint(BaseModel):
    """One learning-curve point: success over `episodes` evaluation episodes after `env_steps`."""

    model_config = ConfigDict(extra="forbid")

    env_steps: int
    successes: int
    episodes: int
    mean_return: float


class Preparation(BaseModel):
    """What getting an agent ready for a cell cost, and what it learned on the way."""

    model_config = ConfigDict(extra="forbid")

    train_env_steps: int = 0  # env steps charged to this agent before evaluation
    train_wall_s: float = 0.0
    curve: list[CurvePoint] = Field(default_factory=list)
    info: dict[str, Any] = Field(default_factory=dict)  # e.g. the skills and their provenance


class EvalAgent(ABC):
    kind: str

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.name = config.name

    def prepare(self, entry: HarnessEntry, seed: int, work_dir: Path) -> Preparation:
        return Preparation()

    @abstractmethod
    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord: ...

    def close(self) -> None:  # noqa: B027 - agents holding nothing need not override
        pass

    @property
    def label(self) -> str:
        """The `agent` field of its records, e.g. "random", "pure_rl:ppo"."""
        return self.kind


def episode_success(info: dict[str, Any], terminated: bool, last_reward: float) -> bool:
    """A harness that reports `info["success"]` decides; otherwise a terminal positive reward
    counts (MiniGrid's convention: reaching the goal is the only positive reward)."""
    if "success" in info:
        return bool(info["success"])
    return bool(terminated and last_reward > 0)


def run_policy_episode(
    harness: Harness,
    act: Callable[[Any], Any],
    *,
    agent: str,
    task: str,
    env_seed: int,
    max_steps: int | None,
    episode_id: str,
    record_steps: bool = False,
) -> EpisodeRecord:
    """Play one episode with a per-step policy (random, pure RL). A crash inside the harness
    ends the episode as `harness-error`; running out of steps is `step-limit`."""
    start = time.perf_counter()
    ret, t, terminated, truncated = 0.0, 0, False, False
    info: dict[str, Any] = {}
    last_reward = 0.0
    cause: str | None = None
    detail: str | None = None
    steps: list[StepRecord] = []
    try:
        obs, info = harness.reset(seed=env_seed)
        while True:
            if max_steps is not None and t >= max_steps:
                truncated = True
                break
            action = act(obs)
            obs, reward, terminated, truncated, info = harness.step(action)
            last_reward = float(reward)
            ret += last_reward
            if record_steps:
                steps.append(StepRecord(t=t, action=_plain(action), reward=last_reward,
                                        terminated=bool(terminated), truncated=bool(truncated), decision=0))
            t += 1
            if terminated or truncated:
                break
    except PolarError as err:
        cause, detail = "harness-error", f"{type(err).__name__}: {err}"[:500]
    except Exception as err:  # a harness bug is the harness's failure, not the agent's
        cause, detail = "harness-error", f"{type(err).__name__}: {err}"[:500]
    success = cause is None and episode_success(info, bool(terminated), last_reward)
    if not success and cause is None:
        if truncated:
            cause, detail = "step-limit", f"episode cut at {t} steps"
        else:
            cause, detail = "task-failed", f"episode terminated after {t} steps without success"
    return EpisodeRecord(
        episode_id=episode_id, agent=agent, harness_id=harness.spec.id, task=task, seed=env_seed,
        success=success, episode_return=ret, env_steps=t, terminated=bool(terminated),
        truncated=bool(truncated), failure_cause=cause, failure_detail=detail, steps=steps,
        wall_s=time.perf_counter() - start,
    )


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


class RandomAgent(EvalAgent):
    kind = "random"

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        space = harness.action_space
        space.seed(env_seed)  # same seed -> same action sequence
        return run_policy_episode(harness, lambda _obs: space.sample(), agent=self.label, task=task,
                                  env_seed=env_seed, max_steps=max_steps, episode_id=episode_id)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def inputs_fingerprint(config: AgentConfig) -> str:
    """A hash of the files an agent config points to: the planner profile and the skill
    library's contents, the training recipe, the checkpoint's weights. Editing one of them
    makes a resumed suite re-run that agent's cells instead of reusing stale results."""
    parts: list[str] = []
    if isinstance(config, PlannerAgentConfig):
        from polar.planners.profile import resolve_profile_path
        from polar.skills.store import SkillLibrary

        parts.append(_sha(resolve_profile_path(config.planner).read_bytes()))
        try:
            lib = SkillLibrary(Path(config.skills).expanduser() if config.skills else None)
            parts += [f"{s.ref}:{s.weights_sha256}:{_sha(s.manifest_json().encode())}" for s in lib.list()]
        except PolarError as err:  # no library yet: the agent itself will report it
            parts.append(f"no-library:{type(err).__name__}")
    elif isinstance(config, PureRLAgentConfig):
        if config.recipe:
            from polar.evals.rl_agent import resolve_recipe

            parts.append(_sha(resolve_recipe(config).read_bytes()))
        if config.checkpoint:
            run = Path(config.checkpoint).expanduser()
            weights = sorted(run.glob("policy*.safetensors")) + sorted(run.glob("policy/*.safetensors"))
            parts += [_sha(w.read_bytes()) for w in weights]
    return _sha("|".join(parts).encode()) if parts else ""


def new_episode_id() -> str:
    return uuid.uuid4().hex[:12]


def make_agent(config: AgentConfig) -> EvalAgent:
    if isinstance(config, RandomAgentConfig):
        return RandomAgent(config)
    if isinstance(config, PureRLAgentConfig):
        from polar.evals.rl_agent import PureRLAgent

        return PureRLAgent(config)
    if isinstance(config, PlannerAgentConfig):
        from polar.evals.planner_agent import PlannerAgent

        return PlannerAgent(config)
    raise TypeError(f"unknown agent config {type(config).__name__}")
