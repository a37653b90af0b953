"""The symbolic planner's next decision from real MiniGrid states, regressing over the
shipped library's manifests (goto, pickup, drop, toggle, unlock, left, right)."""

import numpy as np
import pytest
from minigrid.core.actions import Actions
from minigrid.core.world_object import Ball, Box, Door, Key, Wall

from polar.agent.context import skill_info
from polar.errors import PlannerError
from polar.harnesses import make_harness
from polar.planners.base import HistoryItem, PlannerContext
from polar.planners.decisions import Finish, SkillCall
from polar.planners.symbolic import SymbolicPlanner, unify
from polar.skills.store import SkillLibrary

TASK = "use the key to open the door and then get to the goal"
SKILLS = [skill_info(s) for s in SkillLibrary().list()]


def _ctx(h, task=TASK, history=(), skills=SKILLS):
    return PlannerContext(task=task, spec=h.spec, observation="", symbolic=h.symbolic_state(),
                          history=list(history), skills=skills)


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


def test_carrying_key_goes_to_door_then_unlocks(doorkey):
    u = doorkey.capability("grid")
    u.agent_pos, u.agent_dir = np.array((2, 2)), 3
    doorkey.step(Actions.pickup)
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert (d.skill, d.args) == ("goto", {"object": "door", "color": "yellow"})
    u.agent_pos, u.agent_dir = np.array((2, 1)), 0  # west of the door at (3,1), facing east
    d = SymbolicPlanner().decide(_ctx(doorkey))
    assert (d.skill, d.args) == ("unlock", {"color": "yellow"})  # toggle needs a closed door
    assert "on the way to at(goal)" in d.reason
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
    d = SymbolicPlanner().decide(_ctx(h, "pick up the blue key"))
    assert (d.skill, d.args) == ("drop", {"object": "key", "color": "red"})  # bound from carrying(...)


def test_a_colour_only_object_is_bound_to_one_in_the_state():
    """BabyAI-PickupDist's "pick up a green object": the type comes from an object in the room."""
    h = make_harness("minigrid:MiniGrid-Empty-6x6-v0")
    h.reset(seed=0)
    u = h.capability("grid")
    u.grid.set(4, 4, Box("green"))
    u.grid.set(1, 4, Ball("red"))
    d = SymbolicPlanner().decide(_ctx(h, "pick up a green object"))
    assert (d.skill, d.args) == ("goto", {"object": "box", "color": "green"})


def test_never_drops_where_it_cuts_off_what_the_plan_needs():
    """A corridor: the agent carries a ball, faces the only way to the blue key; dropping the
    ball there would cut it off, so it turns first (the drop_cuts predicate names the key)."""
    h = make_harness("minigrid:MiniGrid-Empty-8x8-v0")
    h.reset(seed=0)
    u = h.capability("grid")
    for x in range(1, 7):
        for y in (1, 3):
            u.grid.set(x, y, Wall())  # a corridor along y=2, open at x=1 to the room below
    u.grid.set(1, 3, None)
    u.agent_pos, u.agent_dir = np.array((1, 2)), 0  # at the corridor's mouth, facing east
    u.grid.set(2, 2, Ball("red"))
    h.step(Actions.pickup)
    u.grid.set(6, 2, Key("blue"))
    state = h.symbolic_state()
    assert "front_clear" in state.predicates and "drop_cuts(key,blue)" in state.predicates
    assert "front_free" not in state.predicates
    history = []
    for _ in range(4):  # facing east (cut), north (wall), west (wall): turn; facing south: drop
        d = SymbolicPlanner().decide(_ctx(h, "pick up the blue key", history=history))
        if d.skill != "left":
            break
        history.append(HistoryItem(decision="left()", success=True, steps=1, reward=0.0, reason="action taken"))
        h.step(Actions.left)
    assert (d.skill, h.symbolic_state().agent["dir"]) == ("drop", "south")


def test_repeated_door_colours_are_told_apart_by_position():
    """Two green doors: the locked one (with the ball behind it) is named by its cell."""
    h = make_harness("minigrid:MiniGrid-Empty-8x8-v0")
    h.reset(seed=0)
    u = h.capability("grid")
    for y in range(1, 7):
        u.grid.set(4, y, Wall())
    u.grid.set(4, 2, Door("green", is_locked=True))
    u.grid.set(4, 5, Door("green"))  # closed, not locked
    u.grid.set(3, 5, Wall())  # the closed door is walled in: it leads nowhere useful
    u.grid.set(5, 5, Wall())
    u.grid.set(6, 2, Ball("purple"))
    u.agent_pos, u.agent_dir = np.array((2, 2)), 0  # facing east, (3,2) ahead, the door at (4,2)
    u.grid.set(1, 1, Key("green"))
    u.carrying = None
    state = h.symbolic_state()
    assert {"locked(door,green,4,2)", "closed(door,green,4,5)", "locked(door,green)",
            "behind(ball,purple,door,green,4,2)", "in_way(door,green,4,2)"} <= set(state.predicates)
    assert "locked(key,green,1,1)" not in state.predicates  # the key's colour does not repeat
    u.carrying = Key("green")
    u.grid.set(1, 1, None)
    u.agent_pos = np.array((3, 2))
    d = SymbolicPlanner().decide(_ctx(h, "pick up the purple ball"))
    assert (d.skill, d.args) == ("unlock", {"color": "green", "x": 4, "y": 2})
    u.agent_pos = np.array((2, 3))
    d = SymbolicPlanner().decide(_ctx(h, "pick up the purple ball"))
    assert (d.skill, d.args) == ("goto", {"object": "door", "color": "green", "x": 4, "y": 2})


def test_unify_binds_placeholders_from_an_atom():
    assert unify("carrying({object},{color})", "carrying(box,purple)") == {"object": "box", "color": "purple"}
    assert unify("facing({object},{color},{x},{y})", "facing(door,green)") == {"object": "door", "color": "green"}
    assert unify("not carrying({object},{color})", "not carrying(any,any)") == {}
    assert unify("open(door,{color})", "open(key,red)") is None
    assert unify("carrying({object},{color})", "not carrying(key,red)") is None
    assert unify("at({object})", "at(goal,3,4)") is None  # the effect says less than the atom


def test_a_users_skill_whose_effect_is_the_goal_is_planned_over(doorkey):
    """No code knows `fetch`: it is chosen because its declared effect is the goal atom and
    its preconditions hold."""
    fetch = SKILLS[0].model_copy(update={
        "name": "fetch", "parameters": {"color": ["yellow", "red"]}, "optional": ["color"],
        "preconditions": ["reachable(key,{color})"], "effects": ["carrying(key,{color})"]})
    d = SymbolicPlanner().decide(_ctx(doorkey, "pick up the yellow key", skills=[fetch, *SKILLS]))
    assert (d.skill, d.args) == ("fetch", {"color": "yellow"})
    # without it, the same goal goes through the shipped skills
    d = SymbolicPlanner().decide(_ctx(doorkey, "pick up the yellow key"))
    assert (d.skill, d.args) == ("goto", {"object": "key", "color": "yellow"})


def test_without_skills_it_says_so(doorkey):
    with pytest.raises(PlannerError, match="none were given"):
        SymbolicPlanner().decide(_ctx(doorkey, skills=[]))


def test_no_plan_names_the_goal_and_the_skills(doorkey):
    no_goto = [s for s in SKILLS if s.name != "goto"]
    with pytest.raises(PlannerError, match=r"no plan for at\(goal\).*pickup"):
        SymbolicPlanner().decide(_ctx(doorkey, skills=no_goto))


def test_free_form_task_needs_an_llm(doorkey):
    with pytest.raises(PlannerError, match="LLM planner"):
        SymbolicPlanner().decide(_ctx(doorkey, task="write me a poem about doors"))


def test_gives_up_after_repeated_failures(doorkey):
    fail = HistoryItem(decision="goto(color=yellow, object=key)", success=False, steps=64,
                       reward=0.0, reason="step budget (64) exhausted")
    d = SymbolicPlanner().decide(_ctx(doorkey, history=[fail] * 3))
    assert isinstance(d, Finish) and not d.success and "3 times" in d.reason
