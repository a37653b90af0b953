"""The episode record: everything a run did. Every eval figure is computed from these."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FailureCause = Literal[
    "planner-parse", "skill-failure", "sandbox-error", "harness-error", "budget", "step-limit",
    "planner-gave-up", "task-failed",
]


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
    outcomes: list[dict[str, Any]] = Field(default_factory=list)  # one per executed call (JSON)
    env_steps: int = 0
    planner_s: float = 0.0  # time inside the planner, model latency included
    llm_calls: list[LLMCallRecord] = Field(default_factory=list)
    # The PlannerContext this decision was made from (its harness spec left out: the episode
    # keeps that once, in extra["harness_spec"]), when the agent records it
    # (AgentConfig.record_context): what a dataset renders with a student's template.
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
    success: bool
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
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(self.model_dump_json(indent=1))
        tmp.replace(p)

    @classmethod
    def load(cls, path: str | Path) -> EpisodeRecord:
        return cls.model_validate(json.loads(Path(path).read_text()))
