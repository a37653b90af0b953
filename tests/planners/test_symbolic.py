"""The symbolic planner's next decision from real MiniGrid states."""

import numpy as np
import pytest
from minigrid.core.actions import Actions
from minigrid.core.world_object import Key

from polar.errors import PlannerError
from polar.harnesses import make_harness
from polar.planners.base import HistoryItem, PlannerContext
from polar.planners.decisions import Finish, SkillCall
from polar.planners.symbolic import SymbolicPlanner

TASK = "use the key to open the door and then get to the goal"


def _ctx(h, task=TASK, history=()):
    return PlannerContext(task=task, spec=h.spec, observation="", symbolic=h.symbolic_state(),
                          history=list(history))


@pytest.fixture
def doorkey():
    h = make_harness("minigrid:MiniGrid-DoorKey-8x8-v0")
    h.reset(seed=1)
    yield h
    h.close()


def test_first_step_fetches_the_key(doorkey):
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert d == SkillCall(skill="goto", args={"object": "key", "color": "yellow"}, reason=d.reason)


def test_facing_key_picks_it_up(doorkey):
    u = doorkey.capability("grid")
    u.agent_pos, u.agent_dir = np.array((2, 2)), 3  # below the key at (2,1), facing north
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert (d.skill, d.args) == ("pickup", {"object": "key", "color": "yellow"})


def test_carrying_key_goes_to_door_then_toggles(doorkey):
    u = doorkey.capability("grid")
    u.agent_pos, u.agent_dir = np.array((2, 2)), 3
    doorkey.step(Actions.pickup)
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert (d.skill, d.args) == ("goto", {"object": "door", "color": "yellow"})
    u.agent_pos, u.agent_dir = np.array((2, 1)), 0  # west of the door at (3,1), facing east
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert (d.skill, d.args) == ("toggle", {"color": "yellow"})
    doorkey.step(Actions.toggle)
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert (d.skill, d.args) == ("goto", {"object": "goal"})


def test_goal_reached_finishes(doorkey):
    u = doorkey.capability("grid")
    u.grid.set(1, 5, u.grid.get(6, 6))  # put a goal square under the agent's path
    u.agent_pos = np.array((1, 5))
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert isinstance(d, Finish) and d.success


def test_pickup_task_drops_what_it_carries_first():
    h = make_harness("minigrid:MiniGrid-Empty-6x6-v0")
    h.reset(seed=0)
    u = h.capability("grid")
    u.agent_pos, u.agent_dir = np.array((2, 2)), 0
    u.grid.set(3, 2, Key("red"))
    h.step(Actions.pickup)
    u.grid.set(4, 4, Key("blue"))
    planner = SymbolicPlanner()
    calls = [planner.decide(_ctx(h, "pick up the blue key")) for _ in range(2)]
    assert [c.skill for c in calls] == ["left", "left"]  # turn around before dropping
    assert planner.decide(_ctx(h, "pick up the blue key")).skill == "drop"


def test_free_form_task_needs_an_llm(doorkey):
    with pytest.raises(PlannerError, match="LLM planner"):
        SymbolicPlanner().decide(_ctx(doorkey, task="write me a poem about doors"))


def test_gives_up_after_repeated_failures(doorkey):
    fail = HistoryItem(decision="goto(color=yellow, object=key)", success=False, steps=64,
                       reward=0.0, reason="step budget (64) exhausted")
    d = SymbolicPlanner().decide(_ctx(doorkey, history=[fail] * 3))
    assert isinstance(d, Finish) and not d.success and "3 times" in d.reason
