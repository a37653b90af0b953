"""The agents an eval compares, behind one small interface that produces EpisodeRecords.

`prepare(harness, seed, work_dir)` does the per-cell work before evaluation (training a pure-RL
policy, loading a planner and its skill library) and reports what it cost in env steps;
`episode(harness, task, env_seed, ...)` plays one episode and returns its record;
`inputs_fingerprint(config)` hashes the files the agent's config only names (so a resumed
suite re-runs its cells when one of them changes). The planner and pure-RL agents live in
`planner_agent` and `rl_agent`; `cells.make_agent` picks the class for a config.
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from polar.episode import EpisodeRecord
from polar.evals.suite import Suite, SuiteAgent, SuiteHarness
from polar.harnesses.base import Harness
from polar.harnesses.rollout import play_episode
from polar.harnesses.spaces import sampler_seed


class CurvePoint(BaseModel):
    """One learning-curve point: success over `episodes` evaluation episodes after `env_steps`."""

    model_config = ConfigDict(extra="forbid")

    env_steps: int
    successes: int | None  # None: the harness cannot tell success (the curve shows returns only)
    episodes: int
    mean_return: float


class Preparation(BaseModel):
    """What getting an agent ready for a cell cost, and what it learned on the way."""

    model_config = ConfigDict(extra="forbid")

    train_env_steps: int = 0  # env steps charged to this agent before evaluation
    train_wall_s: float = 0.0
    curve: list[CurvePoint] = Field(default_factory=list)
    info: dict[str, Any] = Field(default_factory=dict)  # e.g. the skills and their provenance


class Information(NamedTuple):
    """What an agent reads (`observes`, its skills included), what its decision maker reads
    (`decides_from`) and its role in a comparison, in words (see docs/evals.md)."""

    observes: str
    decides_from: str
    role: str


class EvalAgent(ABC):
    kind: str
    default_observes = "view"

    def __init__(self, config: SuiteAgent, suite: Suite | None = None) -> None:
        self.config = config
        self.name = config.name
        self.suite = suite  # the suite the agent runs in (an agent trained over all its harnesses reads them)

    @classmethod
    def inputs_fingerprint(cls, config: SuiteAgent) -> str:
        """A hash of the files this agent's config points to ("" when it points to none)."""
        return ""

    @classmethod
    def information(cls, config: SuiteAgent) -> Information:
        """The agent's information label: declared in the suite, else its kind's default.
        Raises ConfigError where a declaration contradicts what the agent is."""
        observes = config.observes or cls.default_observes
        return Information(observes, config.decides_from or observes, cls.kind)

    def harness_entry(self, entry: SuiteHarness) -> SuiteHarness:
        """The harness this agent trains and plays on for a suite entry (e.g. with the kwarg
        of its full-observation variant); the entry itself by default."""
        return entry

    def prepare(self, entry: SuiteHarness, seed: int, work_dir: Path) -> Preparation:
        return Preparation()

    @abstractmethod
    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord: ...

    def close(self) -> None:  # noqa: B027 - agents holding nothing need not override
        pass

    def use_slot(self, slot: int | None) -> None:  # noqa: B027 - only an agent with a model server has slots
        """Send this agent's model requests to the server's slot `slot` (one lane of a cell's
        episodes played K at a time: polar.evals.concurrent); None: the server picks."""

    @property
    def label(self) -> str:
        """The `agent` field of its records, e.g. "random", "pure_rl:ppo"."""
        return self.kind


RANDOM_AGENT_PURPOSE = "polar.evals.random-agent"  # names its action stream (spaces.sampler_seed)


class RandomAgent(EvalAgent):
    kind = "random"
    default_observes = "none"

    @classmethod
    def information(cls, config: SuiteAgent) -> Information:
        return Information("none", "none", "floor: uniform random actions")

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        space = copy.deepcopy(harness.action_space)  # its own sampler: an adapter reseeds its space on reset
        # the same episode seed -> the same actions, from a stream the game's own RNG never shares
        space.seed(sampler_seed(env_seed, RANDOM_AGENT_PURPOSE))
        return play_episode(harness, lambda _obs: space.sample(), agent=self.label, task=task,
                            env_seed=env_seed, max_steps=max_steps, episode_id=episode_id)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def new_episode_id() -> str:
    return uuid.uuid4().hex[:12]
