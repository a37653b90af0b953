"""The decisions a planner can make. Nothing runs before it validates against these models.

An LLM reply is parsed into `DecisionEnvelope` (a JSON object `{"decision": {...}}`); the
`kind` field selects the decision type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Decision(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: str | None = Field(default=None, description="Why this decision, in one sentence.")


class SkillCall(_Decision):
    """Run one skill from the library with arguments (validated against its parameter schema)."""

    kind: Literal["skill"] = "skill"
    skill: str = Field(description="Skill name, e.g. 'goto' or 'goto@2'.")
    args: dict[str, Any] = Field(default_factory=dict, description="Skill arguments.")


class SubTask(_Decision):
    """A sub-goal in words, refined into skill calls by the planner when it is reached."""

    kind: Literal["subtask"] = "subtask"
    description: str


class Plan(_Decision):
    """Ordered sub-goals; each is a skill call or a sub-task."""

    kind: Literal["plan"] = "plan"
    steps: list[Annotated[SkillCall | SubTask, Field(discriminator="kind")]] = Field(min_length=1)


class PolicyCode(_Decision):
    """Python source defining `act(obs)`, run step by step inside a sandbox."""

    kind: Literal["code"] = "code"
    source: str = Field(description="Python source defining the entrypoint function.")
    entrypoint: str = "act"
    max_steps: int | None = Field(default=None, ge=1, description="Env-step cap for this code.")


class Finish(_Decision):
    """Stop the episode: the task is done, or the planner gives up."""

    kind: Literal["finish"] = "finish"
    success: bool = Field(description="Whether the planner believes the task is achieved.")


Decision = Annotated[SkillCall | Plan | PolicyCode | Finish, Field(discriminator="kind")]


class DecisionEnvelope(BaseModel):
    """The JSON object a planner replies with."""

    model_config = ConfigDict(extra="forbid")

    decision: Decision


def describe_decision(d: SkillCall | Plan | PolicyCode | Finish) -> str:
    """One line for traces and history: `goto(color=yellow, object=key)`, `plan: a -> b`, ..."""
    if isinstance(d, SkillCall):
        # arguments sorted by name: the same call reads the same whichever key order the
        # planner wrote (a model under a schema and the symbolic planner order them differently)
        return f"{d.skill}(" + ", ".join(f"{k}={v}" for k, v in sorted(d.args.items())) + ")"
    if isinstance(d, Plan):
        return "plan: " + " -> ".join(
            describe_decision(s) if isinstance(s, SkillCall) else repr(s.description) for s in d.steps)
    if isinstance(d, PolicyCode):
        return f"policy code {d.entrypoint}() ({len(d.source.splitlines())} lines)"
    return f"finish(success={d.success})"
