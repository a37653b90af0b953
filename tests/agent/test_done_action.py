"""Where the environment rewards only a declared `done` (MiniGrid GoToDoor), a planner's
finish(success=true) takes it: the symbolic planner's success is the environment's, with a
positive return on every success, and a false claim is a failure the environment says."""

from __future__ import annotations

import pytest

from polar.agent import run_episode
from polar.harnesses import make_harness
from polar.planners.decisions import Finish
from polar.planners.symbolic import SymbolicPlanner
from polar.skills.store import SkillLibrary

GOTODOOR = "minigrid:MiniGrid-GoToDoor-8x8-v0"


@pytest.fixture(scope="module")
def library():
    return SkillLibrary()


def test_the_symbolic_planner_succeeds_as_the_environment_says(library):
    recs = []
    with make_harness(GOTODOOR) as h:
        for seed in range(100000, 100005):
            h.reset(seed=seed)
            recs.append(run_episode(h.symbolic_state().mission, h, SymbolicPlanner(), library, seed=seed))
    for rec in recs:
        env_says = rec.terminated and rec.episode_return > 0  # GoToDoor's reward on success only
        assert rec.success == env_says and rec.extra["success_source"] == "harness"
        last = rec.decisions[-1]
        assert last.decision["kind"] == "finish" and last.decision["success"] is True
        assert [o.skill for o in last.outcomes] == ["done"] and last.outcomes[0].success
        assert rec.steps[-1].action == 6 and rec.steps[-1].decision == last.index  # MiniGrid's done
    assert all(r.success and r.episode_return > 0 for r in recs)


class _ClaimsAtOnce:
    name = "claims"

    def __init__(self, success: bool) -> None:
        self.success = success

    def reset(self) -> None:
        pass

    def decide(self, context):
        return Finish(success=self.success, reason="done, trust me")


def test_a_false_claim_is_the_environments_failure():
    with make_harness(GOTODOOR) as h:
        rec = run_episode("go to the red door", h, _ClaimsAtOnce(True), seed=0)
    assert rec.success is False and rec.extra["success_source"] == "harness"
    assert rec.env_steps == 1 and rec.terminated and rec.episode_return == 0.0
    assert rec.failure_cause == "task-failed"
    assert rec.decisions[0].outcomes[0].cause == "task-failed"


def test_giving_up_takes_no_action():
    with make_harness(GOTODOOR) as h:
        rec = run_episode("go to the red door", h, _ClaimsAtOnce(False), seed=0)
    assert rec.env_steps == 0 and rec.success is False and rec.failure_cause == "planner-gave-up"
