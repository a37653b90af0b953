"""Crafter's placing and crafting primitives: where their preconditions hold in a real Crafter
world, one action achieves their effects; where one is missing, Crafter refuses and the
runner reports the effect not achieved. Preconditions come from Crafter's own rules."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("crafter")

from polar.domains.crafter import view  # noqa: E402
from polar.domains.crafter.primitives import primitive_skills  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402
from polar.predicates import holds  # noqa: E402
from polar.skills.runner import run_skill  # noqa: E402

SKILLS = {s.name: s for s in primitive_skills()}


def _stage(seed: int, inventory: dict[str, int], stations: tuple[str, ...] = (), faced: str = "grass"):
    """A Crafter world where the player holds `inventory`, the `stations` stand beside it (left,
    above) and it faces a cell of `faced` with nothing on it; returns (harness, obs)."""
    h = make_harness("crafter:")
    h.reset(seed=seed)
    env = h.env
    p = env._player
    px, py = (int(v) for v in p.pos)
    for dx in (-1, 0, 1):  # clear the 3x3 block around the player (objects and materials)
        for dy in (-1, 0, 1):
            cell = (px + dx, py + dy)
            if (dx, dy) != (0, 0):
                _, obj = env._world[cell]
                if obj is not None:
                    env._world.remove(obj)
                env._world[cell] = "grass"
    p.facing = (1, 0)
    env._world[(px + 1, py)] = faced
    for station, cell in zip(stations, [(px - 1, py), (px, py - 1)], strict=False):
        env._world[cell] = station
    for k in p.inventory:
        if k in view.ITEMS:
            p.inventory[k] = inventory.get(k, 0)
    p.inventory["energy"] = 5  # below its maximum: sleep can start
    return h, h._observe(env.render())


CASES = {
    "place_table": ({"wood": 2}, ()),
    "place_stone": ({"stone": 1}, ()),
    "place_furnace": ({"stone": 4}, ()),
    "place_plant": ({"sapling": 1}, ()),
    "make_wood_pickaxe": ({"wood": 1}, ("table",)),
    "make_wood_sword": ({"wood": 1}, ("table",)),
    "make_stone_pickaxe": ({"wood": 1, "stone": 1}, ("table",)),
    "make_stone_sword": ({"wood": 1, "stone": 1}, ("table",)),
    "make_iron_pickaxe": ({"wood": 1, "coal": 1, "iron": 1}, ("table", "furnace")),
    "make_iron_sword": ({"wood": 1, "coal": 1, "iron": 1}, ("table", "furnace")),
    "sleep": ({}, ()),
}


def test_every_primitive_is_covered():
    assert set(SKILLS) == set(CASES)
    assert all(s.harnesses == ["crafter:*"] and s.step_budget == 1 for s in SKILLS.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_preconditions_suffice_for_the_effects(name):
    inventory, stations = CASES[name]
    h, obs = _stage(1, inventory, stations)
    skill = SKILLS[name]
    state = h.symbolic_state().predicates
    assert all(holds(p, state) for p in skill.preconditions), (skill.preconditions, state)
    result = run_skill(skill, h, obs=obs)
    assert result.outcome.success, result.outcome
    after = h.symbolic_state().predicates
    assert all(holds(e, after) for e in skill.effects)
    if name.startswith("make_"):
        assert h.env._player.inventory[name[len("make_"):]] == 1  # Crafter really made it


@pytest.mark.parametrize("name,missing", [("make_wood_pickaxe", "station"), ("make_iron_sword", "station"),
                                          ("place_table", "items"), ("make_stone_sword", "items"),
                                          ("place_furnace", "cell")])
def test_a_missing_precondition_fails_in_crafter_too(name, missing):
    inventory, stations = CASES[name]
    if missing == "items":
        inventory = {k: v - 1 for k, v in inventory.items()}
    h, obs = _stage(2, inventory, stations[:-1] if missing == "station" else stations,
                    faced="water" if missing == "cell" else "grass")
    skill = SKILLS[name]
    state = h.symbolic_state().predicates
    assert not all(holds(p, state) for p in skill.preconditions)
    result = run_skill(skill, h, obs=obs)
    assert not result.outcome.success and "not achieved" in result.outcome.reason


def test_near_is_the_3x3_block_crafter_checks():
    h, _ = _stage(3, {"wood": 1}, ("table",))
    obs = h._observe(h.env.render())
    assert holds("near(table)", h.symbolic_state().predicates)
    sem = np.asarray(obs["semantic"])
    assert view.MATERIALS[int(sem[3, 3, 0])] == "table"  # left of the player at (4, 3)
    h.env._world[tuple(int(v) for v in h.env._player.pos + np.array([-1, 0]))] = "grass"
    h.env._world[tuple(int(v) for v in h.env._player.pos + np.array([-2, 0]))] = "table"  # two cells away
    h._observe(h.env.render())
    assert not holds("near(table)", h.symbolic_state().predicates)
    assert holds("sees(table)", h.symbolic_state().predicates)


def test_the_generic_symbolic_planner_regresses_the_tech_tree_over_the_manifests():
    """Nothing Crafter-specific in the planner: from a real state holding 3 wood and a grass
    cell ahead, regressing achieved(make_wood_pickaxe) over the manifests picks place_table
    (its effect near(table) is make_wood_pickaxe's unmet precondition); played in Crafter, the
    two calls unlock both achievements."""
    from polar.agent.context import skill_info
    from polar.planners.symbolic import Regression

    h, obs = _stage(4, {"wood": 3})
    infos = [skill_info(s, "crafter:") for s in SKILLS.values()]
    goal = "achieved(make_wood_pickaxe)"
    for expected in ("place_table", "make_wood_pickaxe"):
        preds = frozenset(h.symbolic_state().predicates)
        call = Regression(infos, preds, [], max_depth=6).achieve(goal)
        assert call is not None and call.skill == expected
        result = run_skill(SKILLS[call.skill], h, obs=obs)
        assert result.outcome.success, result.outcome
        obs = result.obs
    assert holds(goal, h.symbolic_state().predicates) and holds("achieved(place_table)", h.symbolic_state().predicates)
