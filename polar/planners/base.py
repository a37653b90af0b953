"""The Planner protocol and the context a planner decides from."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from polar.episode import NOOP
from polar.harnesses.base import HarnessSpec, SymbolicState
from polar.planners.decisions import Decision


class SkillInfo(BaseModel):
    """What a planner sees of a skill: enough to judge whether it fits and how to call it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: int | None = None
    kind: str = "policy"  # policy | primitive
    description: str
    parameters: dict[str, list[str] | str] = Field(default_factory=dict)  # name -> choices/type
    optional: list[str] = Field(default_factory=list)  # parameters a call may leave out (= any)
    preconditions: list[str] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    uses: list[str] = Field(default_factory=list)  # counted atoms a call uses up (`has(wood,2)`)
    success_rate: float | None = None
    success_ci: tuple[float, float] | None = None
    success_n: int | None = None  # episodes the measured success rests on
    affordance: float | None = None  # value estimate at the current state, when known


class HistoryItem(BaseModel):
    """One executed decision and what came of it, as the planner reads it back."""

    model_config = ConfigDict(extra="forbid")

    decision: str  # a short rendering, e.g. "goto(color=yellow, object=key)"
    success: bool
    steps: int
    reward: float
    reason: str  # the outcome's cause, e.g. "termination holds", "step budget (100) exhausted"


def idle_skills(history: list[HistoryItem]) -> set[str]:
    """The skills of the history's trailing no-ops (marked by the agent loop's no-op guard,
    `polar.agent.noop`). A no-op takes no env step and changes no fact, so each of them was called
    from the state the planner is in now, and would do nothing again (a profile's `noop_exclude`
    leaves them out of the reply's schema)."""
    idle: set[str] = set()
    for h in reversed(history):
        if not h.reason.startswith(NOOP):
            break
        idle.add(h.decision.split("(", 1)[0].strip())
    return idle


class PlannerContext(BaseModel):
    """Everything a planner decides from; templates render exactly these fields."""

    model_config = ConfigDict(extra="forbid")

    task: str
    spec: HarnessSpec
    observation: str  # the rendered observation (harness.render_text)
    symbolic: SymbolicState | None = None
    history: list[HistoryItem] = Field(default_factory=list)
    skills: list[SkillInfo] = Field(default_factory=list)
    step: int = 0  # env steps so far in this episode
    steps_left: int | None = None
    episode_id: str = ""
    feedback: str | None = None  # e.g. the last failure's cause, for replanning
    observation_json: str | None = None  # the observation as policy code's act(obs) receives it
    previous_code: str | None = None  # the source of the latest policy code that failed
    last_failed: bool = False  # the previous decision's execution failed (its prompt is not replayed)
    extra: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Planner(Protocol):
    """`decide` returns a validated Decision; it raises PlannerError when it cannot."""

    name: str

    def decide(self, context: PlannerContext) -> Decision: ...

    def reset(self) -> None:
        """Forget per-episode state (called at the start of each episode)."""
        ...
