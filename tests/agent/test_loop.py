"""The agent loop with the offline planner and the shipped skill library, on real MiniGrid."""

import json

import pytest

from polar.agent import Agent, AgentSettings, run_episode
from polar.harnesses import make_harness
from polar.planners.symbolic import SymbolicPlanner
from polar.skills.store import SkillLibrary

TASK = "use the key to open the door and then get to the goal"
DOORKEY = "minigrid:MiniGrid-DoorKey-8x8-v0"


@pytest.fixture(scope="module")
def library():
    return SkillLibrary()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symbolic_planner_solves_doorkey_with_shipped_skills(library, seed):
    with make_harness(DOORKEY) as h:
        rec = run_episode(TASK, h, SymbolicPlanner(), library, seed=seed)
    assert rec.success and rec.failure_cause is None
    assert rec.extra["success_source"] == "harness"
    # the record is complete: every env step is there, attributed to a decision
    assert len(rec.steps) == rec.env_steps == sum(d.env_steps for d in rec.decisions)
    assert rec.episode_return == pytest.approx(sum(s.reward for s in rec.steps))
    calls = [o.skill.split("@")[0] for d in rec.decisions for o in d.outcomes]
    assert calls == ["goto", "pickup", "goto", "unlock", "goto"]


def test_step_cap_ends_with_step_limit(library):
    with make_harness(DOORKEY) as h:
        rec = Agent(SymbolicPlanner(), library, AgentSettings(max_env_steps=4)).run(TASK, h, seed=0)
    assert not rec.success and rec.env_steps == 4
    assert rec.truncated and rec.failure_cause == "step-limit"


def test_free_form_task_is_a_planner_failure_with_no_steps(library):
    with make_harness(DOORKEY) as h:
        rec = run_episode("compose a sonnet", h, SymbolicPlanner(), library, seed=0)
    assert rec.failure_cause == "planner-parse" and "LLM planner" in rec.failure_detail
    assert rec.env_steps == 0


def test_missing_skill_is_reported(tmp_path):
    from polar.domains.minigrid.primitives import install_primitives

    lib = SkillLibrary(tmp_path)
    install_primitives(lib)  # no goto: nothing reaches the goal, the key or the door
    with make_harness(DOORKEY) as h:
        rec = run_episode(TASK, h, SymbolicPlanner(), lib, seed=0)
    assert rec.failure_cause == "planner-parse" and "no plan for at(goal)" in rec.failure_detail
    assert "pickup" in rec.failure_detail and "goto" not in rec.failure_detail  # the skills on offer


def test_keycorridor_and_a_mission_only_a_language_planner_parses(library):
    """KeyCorridorS3R3 repeats door colours (the planner names doors by cell where it must);
    BabyAI-GoToSeq's sequences of ends are refused with a pointer to an LLM planner."""
    with make_harness("minigrid:MiniGrid-KeyCorridorS3R3-v0") as h:
        rec = run_episode("pick up the purple ball", h, SymbolicPlanner(), library, seed=0)
    assert rec.success, rec.failure_detail
    with make_harness("minigrid:BabyAI-GoToSeq-v0") as h:
        obs, _ = h.reset(seed=1)
        mission = h.symbolic_state().mission
        assert mission == "go to a red door and go to a purple door" and f"Mission: {mission}" in h.render_text(obs)
        rec = run_episode(mission, h, SymbolicPlanner(), library, seed=1)
    assert rec.failure_cause == "planner-parse" and rec.env_steps == 0
    assert "sequence of ends" in rec.failure_detail and "LLM planner" in rec.failure_detail


def test_babyai_level_step_limit_is_set_per_mission(library):
    """BabyAI's generated levels (GoToSeqS5R2) set max_steps at reset, from the mission (0
    before): the spec has no fixed limit, so a one-end mission is not cut after one step."""
    with make_harness("minigrid:BabyAI-GoToSeqS5R2-v0") as h:
        assert h.spec.max_steps is None
        h.reset(seed=100002)
        mission = h.symbolic_state().mission
        assert mission == "go to the ball"
        rec = run_episode(mission, h, SymbolicPlanner(), library, seed=100002)
    assert rec.success and rec.env_steps > 1, rec.failure_detail


def test_decision_budget(library):
    with make_harness(DOORKEY) as h:
        rec = Agent(SymbolicPlanner(), library, AgentSettings(max_decisions=2)).run(TASK, h, seed=0)
    assert not rec.success and rec.failure_cause == "budget" and len(rec.decisions) == 2


class _Claims:
    """A planner that claims success at once, with no step taken."""

    name = "claims"

    def reset(self) -> None:
        pass

    def decide(self, context):
        from polar.planners.decisions import Finish

        return Finish(success=True, reason="done, trust me")


def test_a_claim_of_success_is_not_success():
    with make_harness("gym:Pendulum-v1") as h:  # no success signal of any kind
        rec = run_episode("swing up", h, _Claims(), seed=0)
    assert rec.success is None and rec.extra["success_source"] == "planner-claim"
    with make_harness("gym:CartPole-v1") as h:  # the survival rule judges the claim: false
        rec = run_episode("balance", h, _Claims(), seed=0)
    assert rec.success is False and rec.extra["success_source"] == "harness-rule"
    with make_harness(DOORKEY) as h:  # the environment judges it: no terminal reward, no success
        rec = run_episode(TASK, h, _Claims(), seed=0)
    assert rec.success is False and rec.extra["success_source"] == "harness"
    with make_harness(DOORKEY) as h:  # a game that reports nothing: its goal predicates judge it
        h.spec = h.spec.model_copy(update={"reports_success": False})
        rec = run_episode(TASK, h, _Claims(), seed=0)
    assert rec.success is False and rec.extra["success_source"] == "goal-predicates"
    assert rec.failure_cause == "planner-false-claim"  # not planner-gave-up: it claimed success


class _RetriesCode:
    """A planner that writes policy code that fails, then looks at what it is shown next."""

    name = "retries"
    BROKEN = "def act(obs):\n    return 1 // 0\n"

    def __init__(self) -> None:
        self.seen: list = []

    def reset(self) -> None:
        pass

    def decide(self, context):
        from polar.planners.decisions import Finish, PolicyCode

        self.seen.append(context)
        if len(self.seen) == 1:
            return PolicyCode(source=self.BROKEN)
        return Finish(success=False, reason="seen enough")


def test_the_next_decision_sees_the_code_that_failed_and_the_observation_as_json():
    planner = _RetriesCode()
    with make_harness("gym:CartPole-v1") as h:
        rec = run_episode("balance the pole", h, planner, seed=0)
    first, second = planner.seen
    assert first.previous_code is None and second.previous_code == _RetriesCode.BROKEN
    assert rec.decisions[0].outcomes[0].success is False  # the code raised in the sandbox
    assert second.observation_json.startswith("[") and len(json.loads(second.observation_json)) == 4


class _WritesController:
    """A planner that answers with policy code: a proportional controller towards the goal."""

    name = "controller"
    SOURCE = ("def act(obs):\n"
              "    x, y, vx, vy = obs['observation']\n"
              "    gx, gy = obs['desired_goal']\n"
              "    return [3.0 * (gx - x) - 0.5 * vx, 3.0 * (gy - y) - 0.5 * vy]\n")

    def reset(self) -> None:
        pass

    def decide(self, context):
        from polar.planners.decisions import PolicyCode

        return PolicyCode(source=self.SOURCE)


def test_policy_code_returns_a_force_on_the_maze():
    """Policy code mode on continuous control: the 2-D force from act(obs), run in the
    default sandbox from the agent loop, rolls the ball to an adjacent goal in UMaze."""
    with make_harness("maze:PointMaze_UMaze-v3") as h:
        rec = run_episode("go to the goal", h, _WritesController(), seed=0)
    [decision] = rec.decisions
    assert rec.success is True and decision.outcomes[0].kind == "code" and decision.outcomes[0].success
    assert rec.env_steps < 100
