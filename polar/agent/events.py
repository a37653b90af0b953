"""What the agent loop reports while an episode runs: one small frozen dataclass per event.

    Agent(planner, library, on_event=show).run(task, harness)
      EpisodeStarted -> (DecisionMade -> ExecutionFinished*)* ... [DecisionFailed] -> EpisodeEnded

A live trace (`polar task`) matches on the class instead of on a string kind with a dict
payload. `to_dict()` / `Event.from_dict()` give each event one JSON form (`{"kind": ..., its
fields}`), with the decision, outcome and record in exactly the JSON the episode record holds
them in, so an event stream can be written and read back. `DecisionFailed.as_decision()` is
the `{"kind": "error", ...}` entry an episode record keeps for a decision the planner could
not make (the record's format is unchanged).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from polar.episode import EpisodeRecord, FailureCause, Outcome
from polar.planners.decisions import Decision, DecisionEnvelope


class Event:
    """The base of every event: its `kind` and its one JSON form."""

    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON data: `{"kind": <its kind>, <field>: <value>, ...}`."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):  # type: ignore[arg-type]  # every subclass is a dataclass
            value = getattr(self, f.name)
            out[f.name] = value.model_dump(mode="json") if hasattr(value, "model_dump") else \
                value.value if isinstance(value, FailureCause) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentEvent:
        """The event `to_dict` wrote (`Event.from_dict`: any kind; `DecisionMade.from_dict`: only
        that kind); raises ValueError
        naming an unknown kind or a missing or unknown field."""
        event = _from_dict(data)
        if cls is not Event and not isinstance(event, cls):
            raise ValueError(f"kind: expected {cls.kind!r}, got {data.get('kind')!r}")
        return event


@dataclass(frozen=True)
class EpisodeStarted(Event):
    kind: ClassVar[str] = "start"
    episode_id: str
    task: str
    harness: str  # the harness's spec id
    seed: int | None


@dataclass(frozen=True)
class DecisionMade(Event):
    """A validated decision, before it runs (`index`: its place in the episode's decisions)."""

    kind: ClassVar[str] = "decision"
    index: int
    decision: Decision


@dataclass(frozen=True)
class DecisionFailed(Event):
    """The planner gave no decision (a reply that never validated, an unreachable model, a spent
    budget, no skills on offer); the episode ends with `cause`."""

    kind: ClassVar[str] = "decision-failed"
    index: int
    error: str
    cause: FailureCause

    def as_decision(self) -> dict[str, Any]:
        """The entry an episode record keeps in place of the decision."""
        return {"kind": "error", "error": self.error}


@dataclass(frozen=True)
class ExecutionFinished(Event):
    """One executed call of a decision (a skill, a primitive, policy code, the done action)
    and its outcome; a plan gives one per step it ran."""

    kind: ClassVar[str] = "outcome"
    index: int  # the decision it belongs to
    call: str  # what ran, as the trace shows it: `goto(object=key)`, "code", "done"
    outcome: Outcome


@dataclass(frozen=True)
class EpisodeEnded(Event):
    kind: ClassVar[str] = "end"
    record: EpisodeRecord


AgentEvent = EpisodeStarted | DecisionMade | DecisionFailed | ExecutionFinished | EpisodeEnded
EventHook = Callable[[AgentEvent], None]
EVENT_TYPES: dict[str, type[AgentEvent]] = {
    c.kind: c for c in (EpisodeStarted, DecisionMade, DecisionFailed, ExecutionFinished, EpisodeEnded)}


def _from_dict(data: dict[str, Any]) -> AgentEvent:
    kind = data.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"kind: expected one of {', '.join(EVENT_TYPES)}, got {kind!r}")
    values = {k: v for k, v in data.items() if k != "kind"}
    expected = {f.name for f in fields(cls)}
    if set(values) != expected:
        raise ValueError(f"a {kind!r} event has the fields {', '.join(sorted(expected))}; "
                         f"got {', '.join(sorted(values)) or 'none'}")
    if cls is DecisionMade:
        values["decision"] = DecisionEnvelope.model_validate({"decision": values["decision"]}).decision
    elif cls is DecisionFailed:
        values["cause"] = FailureCause(values["cause"])
    elif cls is ExecutionFinished:
        values["outcome"] = Outcome.model_validate(values["outcome"])
    elif cls is EpisodeEnded:
        values["record"] = EpisodeRecord.model_validate(values["record"])
    return cls(**values)
