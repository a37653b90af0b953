"""The agent loop's events: one frozen dataclass per kind, in the order the episode ran, with
one JSON form that reads back to the same event and holds the record's own JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

from polar.agent import (
    Agent,
    AgentEvent,
    DecisionFailed,
    DecisionMade,
    EpisodeEnded,
    EpisodeStarted,
    Event,
    ExecutionFinished,
)
from polar.episode import FailureCause
from polar.harnesses import make_harness
from polar.planners.symbolic import SymbolicPlanner
from polar.skills.store import SkillLibrary

TASK = "use the key to open the door and then get to the goal"
DOORKEY = "minigrid:MiniGrid-DoorKey-8x8-v0"


def _run(task: str, seed: int = 0) -> tuple[list[AgentEvent], object]:
    events: list[AgentEvent] = []
    with make_harness(DOORKEY) as h:
        record = Agent(SymbolicPlanner(), SkillLibrary(), on_event=events.append).run(task, h, seed=seed)
    return events, record


def test_events_follow_the_episode_and_match_its_record() -> None:
    events, rec = _run(TASK)
    assert rec.success
    start, *middle, end = events
    assert start == EpisodeStarted(episode_id=rec.episode_id, task=TASK, harness=rec.harness_id, seed=0)
    assert isinstance(end, EpisodeEnded) and end.record is rec
    decisions = [e for e in middle if isinstance(e, DecisionMade)]
    outcomes = [e for e in middle if isinstance(e, ExecutionFinished)]
    assert len(decisions) + len(outcomes) == len(middle)
    # every decision as the record keeps it (the record's JSON is what the event's JSON holds)
    assert [e.to_dict()["decision"] for e in decisions] == [d.decision for d in rec.decisions]
    assert [(e.index, e.outcome) for e in outcomes] == [(d.index, o) for d in rec.decisions for o in d.outcomes]
    assert [e.call.split("(")[0] for e in outcomes] == ["goto", "pickup", "goto", "unlock", "goto"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.seed = 1  # type: ignore[misc]


def test_every_event_reads_back_from_its_json() -> None:
    events, _ = _run(TASK, seed=1)
    assert {type(e) for e in events} == {EpisodeStarted, DecisionMade, ExecutionFinished, EpisodeEnded}
    for e in events:
        text = json.dumps(e.to_dict())
        back = Event.from_dict(json.loads(text))
        assert back == e and type(back) is type(e)
        assert json.dumps(back.to_dict()) == text  # one JSON form, byte for byte
        assert type(e).from_dict(json.loads(text)) == e


def test_a_decision_the_planner_cannot_make_is_an_event_and_the_record_keeps_its_old_form() -> None:
    events, rec = _run("compose a sonnet")
    failed = [e for e in events if isinstance(e, DecisionFailed)]
    assert len(failed) == 1 and failed[0].cause == FailureCause.PLANNER_PARSE and failed[0].index == 0
    assert rec.decisions[0].decision == {"kind": "error", "error": failed[0].error}  # the record as before
    assert rec.failure_detail == failed[0].error
    assert Event.from_dict(failed[0].to_dict()) == failed[0]
    assert failed[0].to_dict()["cause"] == "planner-parse"


def test_a_bad_event_dict_names_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="kind: expected one of start, decision"):
        Event.from_dict({"kind": "nope"})
    with pytest.raises(ValueError, match="has the fields episode_id, harness, seed, task; got task"):
        Event.from_dict({"kind": "start", "task": "x"})
    start = EpisodeStarted(episode_id="e", task="t", harness="h", seed=None)
    with pytest.raises(ValueError, match="kind: expected 'decision', got 'start'"):
        DecisionMade.from_dict(start.to_dict())
