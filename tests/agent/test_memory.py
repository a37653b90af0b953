"""The agent's own memory (docs/memory.md): built from the view and the pose alone, it matches
the true grid on every cell seen and knows nothing elsewhere; the memory skills and the
memory planner work with the simulator's grid (and its symbolic state) out of reach."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from polar.agent.loop import Agent, AgentSettings
from polar.agent.memory import MemoryHarness
from polar.domains.minigrid.harness import MiniGridHarness
from polar.errors import HarnessError
from polar.harnesses.base import HarnessWrapper
from polar.harnesses.registry import make_harness
from polar.planners.profile import load_planner
from polar.skills.model import SkillError
from polar.skills.runner import run_skill
from polar.skills.search_path import open_library
from polar.workspace import shipped_roots

DOORKEY = "minigrid:MiniGrid-DoorKey-8x8-v0"
LEFT, RIGHT, FORWARD, PICKUP = 0, 1, 2, 3


class NoSimulatorState(HarnessWrapper):
    """The harness with its hidden state out of reach: `capability("grid")` and
    `symbolic_state()` raise, so a test fails if anything the agent runs reads them."""

    def capabilities(self) -> set[str]:
        return self.inner.capabilities() - {"grid"}

    def capability(self, name: str) -> Any:
        if name == "grid":
            raise AssertionError("the simulator's grid was read")
        return self.inner.capability(name)

    def symbolic_state(self) -> Any:
        raise AssertionError("the simulator's symbolic state was read")


def _memory_library() -> Any:
    root = next(r / "skills_memory" for r in shipped_roots() if (r / "skills_memory").is_dir())
    return open_library(root)


def _visible(env: Any) -> set[tuple[int, int]]:
    """The world cells MiniGrid's own view code marks visible now (the test's oracle)."""
    _, vis = env.gen_obs_grid()
    out = set()
    for x in range(env.width):
        for y in range(env.height):
            rel = env.relative_coords(x, y)
            if rel is not None and vis[rel[0], rel[1]]:
                out.add((x, y))
    return out


def _true_code(env: Any, cell: tuple[int, int]) -> tuple[int, ...]:
    obj = env.grid.get(*cell)
    return (1, 0, 0) if obj is None else tuple(int(v) for v in obj.encode())


@pytest.mark.parametrize("env_id,seed", [("MiniGrid-DoorKey-8x8-v0", 3), ("MiniGrid-KeyCorridorS3R3-v0", 1)])
def test_memory_from_a_scripted_walk_matches_the_grid_where_seen_and_is_unknown_elsewhere(env_id, seed):
    h = MemoryHarness(MiniGridHarness(env_id, odometry=True))
    env = h.inner.env.unwrapped
    h.reset(seed=seed)
    seen = _visible(env)
    walk = [FORWARD, FORWARD, LEFT, FORWARD, FORWARD, RIGHT, RIGHT, FORWARD, FORWARD, FORWARD, LEFT, PICKUP,
            FORWARD, RIGHT, FORWARD, FORWARD, RIGHT, FORWARD]
    for action in walk:
        h.step(action)
        seen |= _visible(env) | {tuple(int(v) for v in env.agent_pos)}
    memory = h.memory
    inside = {c for c in memory.cells if 0 <= c[0] < env.width and 0 <= c[1] < env.height}
    assert inside == seen  # every cell seen is remembered, no other (occluded cells stay unknown)
    assert len(seen) < env.width * env.height  # the walk left some of the world unseen
    for cell in inside:  # nothing changed the world during the walk but a pickup, seen happen
        assert memory.cells[cell] == _true_code(env, cell), cell
    assert memory.pose == tuple(int(v) for v in env.agent_pos) and memory.heading == env.agent_dir
    assert memory.step == len(walk)
    carried = None if env.carrying is None else tuple(int(v) for v in env.carrying.encode())
    assert memory.carrying == carried


def test_the_memory_keeps_the_last_seen_state_and_when():
    h = MemoryHarness(MiniGridHarness("MiniGrid-DoorKey-8x8-v0", odometry=True))
    obs, _ = h.reset(seed=1)  # the key at (2,1) ahead of the agent, the locked door at (3,1)
    assert "seen(key,yellow)" in h.symbolic_state().predicates
    assert h.memory.seen_at[(2, 1)] == 0
    for action in (RIGHT, RIGHT):  # look away: the key is not in view, still remembered
        h.step(action)
    assert (2, 1) not in h.reader.read(h.inner._obs(h.inner.env.unwrapped.gen_obs())).cells
    assert h.memory.seen_at[(2, 1)] == 0 and "seen(key,yellow)" in h.symbolic_state().predicates
    assert "Seen: yellow key at (2,1), seen at step 0" in h.render_text(obs)


def test_memory_predicates_name_the_frontier_and_what_is_in_its_way():
    h = MemoryHarness(MiniGridHarness("MiniGrid-DoorKey-8x8-v0", odometry=True))
    h.reset(seed=1)
    preds = set(h.symbolic_state().predicates)
    assert {"locked(door,yellow)", "reachable(key,yellow)", "reachable(frontier)"} <= preds
    assert not any("goal" in p for p in preds)  # the goal is behind the door: not seen, not known


def test_the_memory_hides_the_grid_and_needs_odometry():
    with pytest.raises(HarnessError, match="odometry"):
        MemoryHarness(make_harness(DOORKEY))
    h = MemoryHarness(make_harness(DOORKEY, odometry=True))
    assert h.capabilities() == {"memory"}
    with pytest.raises(HarnessError, match="hidden state is not read"):
        h.capability("grid")


def test_odometry_is_part_of_the_declared_observation():
    h = make_harness(DOORKEY, odometry=True)
    obs, _ = h.reset(seed=0)
    assert h.observation_space.contains(obs)
    assert obs["agent_dir"] == obs["direction"] and "agent_pos" in obs and "odometry" in h.spec.description
    assert "agent_pos" not in make_harness(DOORKEY).reset(seed=0)[0]


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_memory_skills_solve_doorkey_with_the_grid_capability_removed(seed):
    lib = _memory_library()
    h = MemoryHarness(NoSimulatorState(make_harness(DOORKEY, odometry=True)))
    obs, _ = h.reset(seed=seed)
    calls = [("explore", {"object": "key", "color": "yellow"}), ("goto", {"object": "key", "color": "yellow"}),
             ("pickup", {"object": "key", "color": "yellow"}), ("goto", {"object": "door", "color": "yellow"}),
             ("unlock", {"color": "yellow"}), ("explore", {"object": "goal"}), ("goto", {"object": "goal"})]
    for name, args in calls:
        res = run_skill(lib.get(name), h, args, obs=obs)
        obs = res.obs
        assert res.outcome.success, (name, res.outcome.reason)
        assert "grid" not in (res.outcome.reason or "")
    assert res.outcome.terminated and res.outcome.reward > 0  # stood on the goal: the episode is won


def test_memory_goto_refuses_what_it_has_not_seen_and_needs_the_memory():
    lib = _memory_library()
    h = MemoryHarness(make_harness(DOORKEY, odometry=True))
    obs, _ = h.reset(seed=1)
    res = run_skill(lib.get("goto"), h, {"object": "goal"}, obs=obs)
    assert not res.outcome.success and "NoWay: goto: no any-colour goal in the memory" in res.outcome.reason
    plain = make_harness(DOORKEY, odometry=True)  # no memory: a broken setup, said so
    obs, _ = plain.reset(seed=1)
    with pytest.raises(SkillError, match="'memory' capability"):
        run_skill(lib.get("explore"), plain, {"object": "goal"}, obs=obs)


def test_memory_skill_manifests_say_they_observe_the_memory():
    lib = _memory_library()
    for name in ("explore", "goto"):
        skill = lib.get(name)
        assert "memory" in skill.description and "not the grid" in skill.description
        assert skill.features is not None and skill.features.fn.startswith("polar.skills.minigrid.memory:")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symbolic_memory_planner_solves_doorkey_8x8_from_its_own_view(seed):
    planner = load_planner("symbolic-memory")
    assert planner.memory
    harness = NoSimulatorState(make_harness(DOORKEY, odometry=True))
    mission = harness.reset(seed=100_000 + seed)[0]["mission"]
    rec = Agent(planner, _memory_library(), AgentSettings(record_steps=False)).run(mission, harness, seed=100_000 + seed)
    assert rec.success, (rec.failure_cause, rec.failure_detail)
    skills = [d.decision.get("skill") for d in rec.decisions]
    assert "explore" in skills and skills[-1] == "goto"


def test_memory_option_is_a_boolean():
    from polar.errors import ConfigError

    with pytest.raises(ConfigError, match="options.memory: must be true or false"):
        load_planner("symbolic", {"options": {"memory": "yes"}})


def test_reader_places_the_view_by_the_pose():
    h = MiniGridHarness("MiniGrid-DoorKey-8x8-v0", odometry=True)
    obs, _ = h.reset(seed=1)
    sight = h.capability("memory_reader").read(obs)
    env = h.env.unwrapped
    assert sight.pose == tuple(int(v) for v in env.agent_pos)
    for cell, code in sight.cells.items():
        if 0 <= cell[0] < env.width and 0 <= cell[1] < env.height:
            assert code == _true_code(env, cell)
    shown = int(np.sum(np.any(obs["image"] != 0, axis=-1))) - 1  # the view's cells but the agent's own
    assert len(sight.cells) == shown and sight.carrying is None


def test_memory_mode_prompt_shows_the_remembered_map_and_its_predicates():
    from polar.agent.context import live_context
    from polar.planners.fit import apply_observation_mode
    from polar.planners.profile import load_planner_profile

    assert load_planner_profile("openai", {"observation": "memory"}).observation == "memory"
    ctx = live_context(MemoryHarness(NoSimulatorState(make_harness(DOORKEY, odometry=True))), 1, _memory_library())
    assert ctx.observation.startswith("Memory of what you have seen") and "??" in ctx.observation
    assert {"seen(key,yellow)", "reachable(frontier)"} <= set(ctx.symbolic.predicates)
    variables = apply_observation_mode({"observation": ctx.observation, "predicates": ctx.symbolic.predicates},
                                       ctx.symbolic, "memory")
    assert variables["observation"] == ctx.observation and variables["observation_mode"] == "memory"
    assert {s.name for s in ctx.skills} >= {"explore", "goto"}


def test_the_memory_goto_requires_its_object_so_the_served_schema_never_leaves_it_out():
    """goto over the memory refuses a call without an object, like the shipped goto; its manifest
    says so, so the decision schema a planner is served requires `object` in every form of the
    call (optional, it let a trained planner reply `goto(color=blue)` 28 times in 15 episodes)."""
    from polar.agent.context import skill_info
    from polar.planners.schema import decision_schema

    goto = _memory_library().get("goto")
    assert goto.parameters["object"].required
    info = skill_info(goto)
    assert "object" not in info.optional
    schema = decision_schema([info], "skill")
    call = schema["properties"]["decision"]["anyOf"][0]
    forms = call["properties"]["args"].get("anyOf", [call["properties"]["args"]])
    assert forms and all("object" in f["required"] for f in forms)


class CountingSteps(HarnessWrapper):
    """Counts the actions that reach the world."""

    steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        return self.inner.step(action)


def test_the_memory_pickup_requires_its_object_and_a_call_without_one_never_reaches_the_world():
    """pickup in skills_memory requires `object` (optional, a DAgger round's model replied
    `pickup(color=yellow)`, which the yellow door in front of it satisfies as an effect): the served
    schema requires it in every form, and a call without it is refused naming the field before any
    action is sent; the shipped library holds what `memory_pickup` defines."""
    from polar.agent.context import skill_info
    from polar.domains.minigrid.memory import memory_pickup
    from polar.domains.minigrid.primitives import _definition
    from polar.planners.schema import decision_schema
    from polar.skills.model import SkillArgumentError

    lib = _memory_library()
    pickup = lib.get("pickup")
    assert pickup.parameters["object"].required and pickup.version >= 2
    assert _definition(pickup) == _definition(memory_pickup())
    schema = decision_schema([skill_info(pickup)], "skill")
    call = schema["properties"]["decision"]["anyOf"][0]
    forms = call["properties"]["args"].get("anyOf", [call["properties"]["args"]])
    assert forms and all("object" in f["required"] for f in forms)

    counting = CountingSteps(MiniGridHarness("MiniGrid-DoorKey-8x8-v0", odometry=True))
    h = MemoryHarness(counting)
    obs, _ = h.reset(seed=0)
    with pytest.raises(SkillArgumentError, match="'object' is required"):
        run_skill(pickup, h, {"color": "yellow"}, obs=obs)
    assert counting.steps == 0
    run_skill(pickup, h, {"object": "key", "color": "yellow"}, obs=obs)  # with its object, it acts
    assert counting.steps == 1
