"""The episode record: everything a run did. Every eval figure is computed from these.

An episode holds its decisions; each decision holds the `Outcome`s of what executing it did
(one per skill call, primitive or policy-code run); every failure carries a `FailureCause`.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from polar.files import atomic_write

INTERRUPTED = "interrupted"  # how an interrupted skill call's reason starts (polar.skills.runner)
NOOP = "no-op"  # how a no-op's reason starts in the planner's history (the no-op guard, polar.agent.noop)


class FailureCause(StrEnum):
    """Why an execution or an episode failed. The values are what records and reports show."""

    PLANNER_PARSE = "planner-parse"  # the planner produced no valid decision
    LLM_ERROR = "llm-error"  # the model could not be reached (429s, refused connection, timeout)
    SKILL_FAILURE = "skill-failure"  # a skill, primitive or policy code did not achieve its aim
    SKILL_ERROR = "skill-error"  # a skill raised (its policy or a hook), or cannot read this harness
    SANDBOX_ERROR = "sandbox-error"  # policy code broke a sandbox limit or crashed
    HARNESS_ERROR = "harness-error"  # the harness (game, simulator) failed
    BUDGET = "budget"  # a decision, call, token or dollar budget ran out
    STEP_LIMIT = "step-limit"  # the episode was cut at its step limit without success
    PLANNER_GAVE_UP = "planner-gave-up"  # the planner finished without reaching the goal
    PLANNER_FALSE_CLAIM = "planner-false-claim"  # the planner finished claiming success; the goal does not hold
    NO_SKILLS = "no-skills"  # the planner needs skills and none was on offer for the harness
    TASK_FAILED = "task-failed"  # the episode ended without success
    INTERRUPTED = "interrupted"  # a skill call stopped by the agent's interrupt condition (polar.skills.runner)


class Outcome(BaseModel):
    """What one executor (a skill, a primitive, sandboxed policy code) did. Every executor
    returns one; the planner reads `success`, `reason` and `cause` back when it replans."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["skill", "primitive", "code"]
    success: bool
    reason: str  # one line for the planner: "termination holds", "stopped by SandboxTimeout: ..."
    steps: int = 0
    reward: float = 0.0  # summed over the steps it took
    cause: FailureCause | None = None  # None exactly when it succeeded
    harness_error: str | None = None  # the harness's own failure, when that ended it
    terminated: bool = False  # the episode ended during this execution
    truncated: bool = False
    wall_s: float = 0.0
    # skills and primitives
    skill: str | None = None  # name@version
    args: dict[str, Any] = Field(default_factory=dict)
    predicates_before: list[str] = Field(default_factory=list)
    predicates_after: list[str] = Field(default_factory=list)
    affordance: float | None = None  # policy skills: V(start state)
    # policy code
    stopped_by: Literal["terminated", "truncated", "step_limit", "error"] | None = None
    error_type: str | None = None  # the sandbox error's type ("SandboxViolation"), or what a skill raised

    @model_validator(mode="after")
    def _cause_iff_failed(self) -> Outcome:
        if self.success == (self.cause is not None):
            raise ValueError("an outcome has a failure cause exactly when it did not succeed")
        return self


def jsonable(x: Any, digits: int | None = None) -> Any:
    """Numpy arrays and scalars -> lists and Python numbers, through dicts, lists and tuples,
    so records and prompts hold plain JSON. `digits` rounds float arrays (for prompts).
    (Data handed to sandboxed code goes through the stricter `polar.sandboxes.base.to_plain`.)"""
    if isinstance(x, np.ndarray):
        if digits is not None and x.dtype.kind == "f":
            return np.round(x.astype(np.float64), digits).tolist()
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return {k: jsonable(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v, digits) for v in x]
    return x


class LLMCallRecord(BaseModel):
    """One model call as the episode sees it (the LLM client keeps the full request/reply)."""

    model_config = ConfigDict(extra="allow")

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    template: str | None = None
    template_hash: str | None = None
    call_id: str | None = None


class DecisionRecord(BaseModel):
    """One planner decision and what executing it produced."""

    model_config = ConfigDict(extra="forbid")

    index: int
    decision: dict[str, Any]  # the validated decision, as JSON
    outcomes: list[Outcome] = Field(default_factory=list)  # one per executed call
    env_steps: int = 0
    planner_s: float = 0.0  # time inside the planner, model latency included
    llm_calls: list[LLMCallRecord] = Field(default_factory=list)
    # The PlannerContext this decision was made from (its harness spec left out: the episode
    # keeps that once, in extra["harness_spec"]), when the agent records it
    # (AgentSettings.record_context): what a dataset renders with a student's template.
    context: dict[str, Any] | None = None


class StepRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    t: int
    action: Any
    reward: float
    terminated: bool
    truncated: bool
    decision: int  # index of the decision that produced this action


class EpisodeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episode_id: str
    agent: str  # e.g. "planner:symbolic", "pure_rl:ppo", "random"
    harness_id: str
    task: str
    seed: int | None
    success: bool | None  # None: the harness gives no way to tell (reports show returns only)
    episode_return: float
    env_steps: int
    terminated: bool
    truncated: bool
    failure_cause: FailureCause | None = None
    failure_detail: str | None = None
    decisions: list[DecisionRecord] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict)

    def save(self, path: str | Path) -> None:
        atomic_write(path, self.model_dump_json(indent=1))

    @classmethod
    def load(cls, path: str | Path) -> EpisodeRecord:
        return cls.model_validate(json.loads(Path(path).read_text()))
