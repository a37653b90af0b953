"""The no-op guard (polar.agent.noop, opt-in): on a real Crafter world by day, `shelter` ends in
success after 0 env steps (its effects already hold) and changes nothing, which is how the
trained Crafter planner looped for 150 decisions (docs/crafter.md 6d). With `noop_guard: true`
the next prompt says so, and identical no-ops in a row get the repeat note; off (the default)
the prompts say nothing, as before. The symbolic planner counts marked no-ops as failures."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("crafter")

from polar.agent import Agent, AgentSettings  # noqa: E402
from polar.agent.loop import Repeats  # noqa: E402
from polar.agent.noop import is_noop, mark_noops  # noqa: E402
from polar.domains.crafter.harness import MISSION  # noqa: E402
from polar.episode import FailureCause, Outcome  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402
from polar.planners.base import HistoryItem  # noqa: E402
from polar.planners.decisions import SkillCall  # noqa: E402
from polar.planners.profile import load_planner, load_planner_profile  # noqa: E402
from polar.planners.symbolic import SymbolicPlanner, _failing_calls  # noqa: E402
from polar.skills.store import SkillLibrary  # noqa: E402
from tests.llm_server import Reply, ScriptedLLMServer, write_profile  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHELTER = {"kind": "skill", "skill": "shelter", "args": {}}
DID_NOTHING = "shelter() did nothing: it succeeded after 0 env steps and no fact changed."
THREE = "shelter() has done nothing 3 times in a row; the same decision will do nothing again"


def _play(tmp_path: Path, **fields) -> tuple[list[str], object]:
    """Four decisions of a model that always replies shelter(), from a Crafter world's first
    (daylit) state, with the Crafter student's templates and the agent's memory."""
    with ScriptedLLMServer(default=Reply.decision(SHELTER)) as server:
        profile = write_profile(tmp_path, server, observation="memory", history_window=4, cache_dir=None,
                                templates={"system": "student_system", "user": "student_skill"}, **fields)
        planner = load_planner(profile)
        with make_harness("crafter:", odometry=True) as h:
            rec = Agent(planner, SkillLibrary(REPO / "skills_crafter_memory"),
                        AgentSettings(max_decisions=4, skills_shown=40)).run(MISSION, h, seed=7)
        return [q.messages[-1]["content"] for q in server.requests], rec


def test_a_call_that_succeeds_in_no_step_is_told_as_a_no_op(tmp_path: Path) -> None:
    prompts, rec = _play(tmp_path, noop_guard=True)
    outcomes = [o for d in rec.decisions for o in d.outcomes]
    # the call really is a success of 0 steps that changed no predicate: what the guard is for
    assert len(outcomes) == 4 and rec.env_steps == 0
    assert all(o.success and o.steps == 0 and o.predicates_before == o.predicates_after for o in outcomes)
    assert all(o.reason == "termination already holds" for o in outcomes)  # the record stays the runner's
    assert len(prompts) == 4
    assert [DID_NOTHING in p for p in prompts] == [False, True, True, True]
    assert [THREE in p for p in prompts] == [False, False, False, True]


def test_the_guard_is_off_by_default(tmp_path: Path) -> None:
    assert load_planner_profile("student-crafter", {"server": None}).noop_guard is False
    prompts, rec = _play(tmp_path)
    assert len(prompts) == 4 and rec.env_steps == 0
    assert not any("did nothing" in p or "done nothing" in p for p in prompts)


def _outcome(steps: int, before: list[str], after: list[str], success: bool = True) -> Outcome:
    return Outcome(kind="skill", skill="shelter", success=success, steps=steps, reason="",
                   cause=None if success else FailureCause.SKILL_FAILURE, predicates_before=before,
                   predicates_after=after)


def test_what_counts_as_a_no_op() -> None:
    day = ["achieved(wake_up)", "full(energy)"]
    assert is_noop([_outcome(0, day, day)])
    assert not is_noop([_outcome(1, day, day)])  # it took a step: the world moved on
    assert not is_noop([_outcome(0, day, [*day, "has(wood)"])])  # a fact changed
    assert not is_noop([_outcome(0, day, day, success=False)])  # a failure is reported as one already
    assert not is_noop([])


def test_identical_no_ops_count_as_repeated_failures() -> None:
    call, other = SkillCall(skill="shelter", args={}), SkillCall(skill="chop_wood", args={})
    r = Repeats(3)
    assert [r.feedback(call, False, "x", noop=True) for _ in range(3)][-1].startswith("x shelter() has done nothing 3")
    assert r.feedback(other, False, None) is None and r.count == 0  # a real success resets the count
    r.feedback(call, True, None)
    r.feedback(call, False, None, noop=True)
    assert "has failed or done nothing 3 times" in r.feedback(call, True, None)
    # without no-ops nothing changed: three failures get the failure note
    r = Repeats(3)
    assert "has failed 3 times in a row" in [r.feedback(call, True, None) for _ in range(3)][-1]

    # the symbolic planner: a marked no-op counts towards max_repeats; an unmarked success does not
    ok = HistoryItem(decision="shelter()", success=True, steps=0, reward=0.0, reason="termination already holds")
    assert _failing_calls([ok] * 3, 3) == set()
    assert _failing_calls(mark_noops([ok] * 3), 3) == {"shelter()"}
    planner = SymbolicPlanner(load_planner_profile("crafter-memory", {"options": {
        **load_planner_profile("crafter-memory").options, "noop_guard": True}}))  # type: ignore[union-attr]
    assert planner.noop_guard and not SymbolicPlanner(load_planner_profile("crafter-memory")).noop_guard
    assert planner._stuck(mark_noops([ok] * 3)) is not None and planner._stuck([ok] * 3) is None


def test_noop_exclude_takes_the_idle_skill_out_of_the_next_schema(tmp_path: Path) -> None:
    """On the real world: after shelter() did nothing, the next requests' schemas offer every other
    skill but not shelter (the prompt still lists it), and the record names what was left out."""
    import json

    with ScriptedLLMServer(default=Reply.decision(SHELTER)) as server:
        profile = write_profile(tmp_path, server, observation="memory", history_window=4, cache_dir=None,
                                structured_output="json_object_schema", noop_guard=True, noop_exclude=True,
                                templates={"system": "student_system", "user": "student_skill"})
        planner = load_planner(profile)
        with make_harness("crafter:", odometry=True) as h:
            Agent(planner, SkillLibrary(REPO / "skills_crafter_memory"),
                  AgentSettings(max_decisions=3, skills_shown=40)).run(MISSION, h, seed=7)
        schemas = [json.dumps(q.body["response_format"]) for q in server.requests]
    assert ['"shelter"' in s for s in schemas] == [True, False, False]
    assert all('"chop_wood"' in s for s in schemas) and "shelter" in server.requests[-1].messages[-1]["content"]
    assert [getattr(c, "excluded_skills", None) for c in planner.last_calls] == [["shelter"]]
