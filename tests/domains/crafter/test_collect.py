"""The collect(resource) skill's parts on real Crafter worlds: the training env stages a start and
rewards exactly the count rising, the harness's `gained(ITEM)` predicate and `start` staging,
the termination hook, the manifests Crafter's rules decide, and the symbolic planner regressing
the tech tree over them."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("crafter")

from polar.agent.context import skill_info  # noqa: E402
from polar.domains.crafter import collect, view  # noqa: E402
from polar.domains.crafter.collect_env import DEFAULT_TARGETS, CollectEnv
from polar.domains.crafter.primitives import primitive_skills  # noqa: E402
from polar.domains.crafter.skills import (  # noqa: E402
    collect_manifest,
    explore_act,
    scripted_skills,
    view_features,
)
from polar.domains.crafter.staging import world_cells  # noqa: E402
from polar.errors import HarnessError  # noqa: E402
from polar.harnesses.base import SymbolicState  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402
from polar.planners.base import PlannerContext  # noqa: E402
from polar.planners.symbolic import Regression, SymbolicPlanner  # noqa: E402
from polar.skills.model import Skill  # noqa: E402
from polar.skills.runner import run_skill  # noqa: E402

DO = 5  # crafter.constants.actions.index("do")


def _face(env, material: str) -> None:
    """Make the cell the player faces `material`, with nothing on it."""
    p = env._player
    cell = (int(p.pos[0] + p.facing[0]), int(p.pos[1] + p.facing[1]))
    _, obj = env._world[cell]
    if obj is not None:
        env._world.remove(obj)
    env._world[cell] = material


def test_collect_env_rewards_the_count_rising_and_ends_there():
    e = CollectEnv(targets=["wood"], p_visible=1.0)
    obs, info = e.reset(seed=3)
    assert info["target"] == "wood" and obs["grid"].shape == (9, 7, 2)
    assert len(collect.target_cells(obs["grid"], "wood")), "p_visible=1: a tree is in view at the start"
    assert obs["goal"][collect.NAMES.index("wood")] == 1.0
    _face(e.env, "tree")
    obs, reward, terminated, truncated, info = e.step(DO)
    assert terminated and not truncated and info["success"]
    assert reward >= 1.0
    assert e.env._player.inventory["wood"] == 1


def test_collect_env_truncates_at_max_steps_without_success():
    e = CollectEnv(targets=["iron"], max_steps=3)
    e.reset(seed=5)
    assert e.env._player.inventory["stone_pickaxe"] == 1 and e.env._player.inventory["wood_pickaxe"] == 1
    out = [e.step(0) for _ in range(3)]  # noop: nothing is collected
    assert [o[3] for o in out] == [False, False, True] and not any(o[4]["success"] for o in out)


def test_collect_env_reaches_every_default_target():
    e = CollectEnv()
    for i, target in enumerate(DEFAULT_TARGETS):
        obs, info = e.reset(seed=100 + i, options={"target": target})
        assert info["target"] == target
        thing = collect.TARGETS[target].thing
        assert len(world_cells(e.env._world, thing)), target


def test_gained_predicate_holds_only_on_the_step_that_raised_the_count():
    h = make_harness("crafter:")
    h.reset(seed=0)
    assert not any(p.startswith("gained(") for p in h.symbolic_state().predicates)
    _face(h.env, "tree")
    h.step(DO)
    assert "gained(wood)" in h.symbolic_state().predicates
    h.step(0)
    assert "gained(wood)" not in h.symbolic_state().predicates


def test_harness_start_stages_the_target_and_its_tools():
    h = make_harness("crafter:", start="stone")
    obs, _ = h.reset(seed=1_500_000_000)
    assert obs["inventory"][view.ITEMS.index("wood_pickaxe")] == 1
    stone = world_cells(h.env._world, "stone")
    gap = np.abs(stone - np.asarray(h.env._player.pos)).max(axis=1).min()
    assert gap <= 8
    obs2, _ = make_harness("crafter:", start="stone").reset(seed=1_500_000_000)
    assert np.array_equal(obs["semantic"], obs2["semantic"]), "a seed names one staged start"
    with pytest.raises(HarnessError, match="start must be one of"):
        make_harness("crafter:", start="gold")


def test_termination_hook():
    def state(*preds):
        return SymbolicState(predicates=list(preds))
    stepped = {"discount": 1.0}  # a step's info; the start state's is empty
    assert collect.hook_done(state("gained(wood)"), {"resource": "wood"}, None, stepped)
    assert not collect.hook_done(state("gained(wood)"), {"resource": "wood"}, None, {}), \
        "a count the previous call raised does not end a new call before its first step"
    assert not collect.hook_done(state("has(wood)", "has(wood,1)"), {"resource": "wood"})
    assert not collect.hook_done(state("gained(wood)", "has(wood,1)"), {"resource": "wood", "n": 2})
    assert collect.hook_done(state("has(wood,2)"), {"resource": "wood", "n": 2})
    assert collect.hook_done(state("gained(drink)"), {"resource": "water"}, None, stepped)
    assert collect.hook_done(state("near(table)"), {"resource": "table"})
    with pytest.raises(Exception, match="resource must be one of"):
        collect.hook_done(state(), {"resource": "gold"})


def test_manifests_follow_crafters_rules():
    import crafter

    stone = collect_manifest("stone")
    assert [f"has({t})" for t in crafter.constants.collect["stone"]["require"]] == ["has(wood_pickaxe)"]
    assert stone["preconditions"] == ["has(wood_pickaxe)", "sees(stone)"]
    assert stone["effects"] == ["has(stone,{n})", "gained(stone)", "achieved(collect_stone)"]
    assert collect_manifest("iron")["preconditions"][0] == "has(stone_pickaxe)"
    assert collect_manifest("water")["effects"] == ["gained(drink)", "not low(drink)", "achieved(collect_drink)"]
    assert collect_manifest("table")["name"] == "goto_table"
    assert "sees" not in " ".join(collect_manifest("sapling")["preconditions"])  # grass is everywhere


def _library() -> list:
    """SkillInfos of every Crafter skill (the learnt ones as manifests, no weights needed)."""
    skills = [Skill(**collect_manifest(t), kind="policy", policy={"config": {}}) for t in DEFAULT_TARGETS]
    return [skill_info(s, "crafter:") for s in [*skills, *scripted_skills(), *primitive_skills()]]


def test_regression_plans_the_tech_tree_from_the_manifests():
    skills = _library()
    # nothing in hand, a tree in view: stone needs a pickaxe, which needs a table and wood
    r = Regression(skills, frozenset({"sees(tree)", "can_place(table)"}), [], 10)
    call = r.achieve("achieved(collect_stone)")
    assert call.skill == "collect_wood"
    assert r.achieve("achieved(make_wood_pickaxe)").skill == "collect_wood"
    # two wood, facing grass, a tree in view: the table uses both (place_table's `uses`), and the
    # pickaxe needs one more, so collect a third first; with three, place the table
    wood = lambda n: {"has(wood)", *(f"has(wood,{k})" for k in range(1, n + 1))}  # noqa: E731
    r = Regression(skills, frozenset(wood(2) | {"can_place(table)", "sees(tree)"}), [], 10)
    call = r.achieve("achieved(make_wood_pickaxe)")
    assert (call.skill, call.args) == ("collect_wood", {"n": 3})
    r = Regression(skills, frozenset(wood(3) | {"can_place(table)", "sees(tree)"}), [], 10)
    assert r.achieve("achieved(make_wood_pickaxe)").skill == "place_table"
    # the stone pickaxe needs a wood and a stone; the wood pickaxe (for the stone) uses a wood:
    # holding one, collect a second before making the wood pickaxe; holding two, make it
    r = Regression(skills, frozenset(wood(1) | {"near(table)", "sees(tree)", "sees(stone)"}), [], 10)
    call = r.achieve("achieved(make_stone_pickaxe)")
    assert (call.skill, call.args) == ("collect_wood", {"n": 2})
    r = Regression(skills, frozenset(wood(2) | {"near(table)", "sees(tree)", "sees(stone)"}), [], 10)
    assert r.achieve("achieved(make_stone_pickaxe)").skill == "make_wood_pickaxe"
    # a pickaxe and no stone in view: look for stone
    r = Regression(skills, frozenset({"has(wood_pickaxe)"}), [], 10)
    call = r.achieve("achieved(collect_stone)")
    assert (call.skill, call.args) == ("explore", {"thing": "stone"})


def test_open_goals_pass_over_ends_without_a_plan_and_calls_that_keep_failing():
    from polar.planners.base import HistoryItem
    from polar.planners.decisions import Finish

    goals = ["achieved(eat_plant)", "achieved(collect_stone)", "achieved(collect_wood)"]
    planner = SymbolicPlanner(goals=goals)
    state = SymbolicState(predicates=["has(wood_pickaxe)", "sees(tree)"])

    spec = make_harness("crafter:").spec

    def ctx(history):
        return PlannerContext(task="unlock", spec=spec, observation="", symbolic=state, skills=_library(),
                              history=history)
    # eat_plant has no skill: passed over; collect_stone needs stone in view: explore
    d = planner.decide(ctx([]))
    assert (d.skill, d.args) == ("explore", {"thing": "stone"})
    failed = [HistoryItem(decision="explore(thing=stone)", success=False, steps=100, reward=0, reason="budget")] * 3
    d = planner.decide(ctx(failed))
    assert d.skill == "collect_wood", "a call failing 3 times in a row is passed over for the next end"
    state = SymbolicState(predicates=["has(wood_pickaxe)"])
    failed += [HistoryItem(decision="explore(thing=tree)", success=False, steps=100, reward=0, reason="budget")] * 3
    d = planner.decide(ctx(failed))
    assert isinstance(d, Finish) and not d.success


def test_hunt_cow_eats_a_cow_in_view():
    """The scripted stand-in for collect_cow, from the start staged for cows (a cow in view,
    food lowered), in held-out worlds: it ends when food rises, with eat_cow unlocked."""
    from polar.skills.runner import run_skill

    hunt = next(s for s in scripted_skills() if s.name == "hunt_cow")
    h = make_harness("crafter:", start="cow")
    eaten = 0
    for i in range(4):
        obs, _ = h.reset(seed=1_500_000_000 + i)
        if "sees(cow)" not in h.symbolic_state().predicates:
            continue
        out = run_skill(hunt, h, {}, obs=obs).outcome
        assert out.success and "gained(food)" in out.predicates_after, out.reason
        assert "achieved(eat_cow)" in out.predicates_after
        eaten += 1
    h.close()
    assert eaten >= 2


def test_the_shipped_library_offers_hunt_cow_before_the_weak_collect_cow():
    """The planner takes the first of equally ready candidates in the order retrieval offers
    them: for the suite's task, hunt_cow (measured 1.00) comes before collect_cow (0.12)."""
    from pathlib import Path

    from polar.domains.crafter.harness import MISSION  # the task a suite's episodes get
    from polar.skills.search import rank
    from polar.skills.store import SkillLibrary

    h = make_harness("crafter:")
    library = SkillLibrary(Path(__file__).resolve().parents[3] / "skills_crafter")
    names = [s.name for s, _ in rank(library.list(), MISSION, h)]
    h.close()
    assert names.index("hunt_cow") < names.index("collect_cow")


@pytest.mark.parametrize("offset", [(-1, 0), (1, 1)])
def test_drink_up_drinks_until_full_next_to_water(offset):
    """Water beside the player (orthogonally or only diagonally): drink_up turns to it (a step
    aside first when diagonal) and drinks a sip a step until drink is full."""
    from polar.skills.runner import run_skill

    drink = next(s for s in scripted_skills() if s.name == "drink_up")
    h = make_harness("crafter:")
    h.reset(seed=3)
    env = h.env
    px, py = (int(v) for v in env._player.pos)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            if (dx, dy) != (0, 0):
                if (obj := env._world[(px + dx, py + dy)][1]) is not None:
                    env._world.remove(obj)
                env._world[(px + dx, py + dy)] = "grass"
    env._world[(px + offset[0], py + offset[1])] = "water"
    env._player.inventory["drink"] = 3
    obs, *_ = h.step(0)  # noop: the observation shows the staged cells
    assert "near(water)" in h.symbolic_state().predicates
    out = run_skill(drink, h, {}, obs=obs).outcome
    assert out.success and "full(drink)" in out.predicates_after, out.reason
    assert 6 <= out.steps <= 10  # six sips, and a turn (and a step aside) first
    h.close()


def test_explore_walks_until_the_thing_is_in_view():
    h = make_harness("crafter:")
    obs, _ = h.reset(seed=7)
    skill = next(s for s in scripted_skills() if s.name == "explore")
    assert view_features(obs, {})["semantic"].shape == (9, 7, 2)
    assert 0 <= explore_act(view_features(obs, {}), {}) < 17
    res = run_skill(skill, h, {"thing": "stone"}, obs=obs)
    preds = h.symbolic_state().predicates
    assert res.outcome.success == ("sees(stone)" in preds)
    assert res.outcome.steps <= skill.step_budget


def test_fight_defeats_a_zombie_next_to_the_player():
    from crafter import objects

    h = make_harness("crafter:")
    h.reset(seed=11)
    env = h.env
    p = env._player
    _face(env, "grass")
    target = (int(p.pos[0] + p.facing[0]) + int(p.facing[0]), int(p.pos[1] + p.facing[1]) + int(p.facing[1]))
    env._world[target] = "grass"
    _, obj = env._world[target]
    if obj is not None:
        env._world.remove(obj)
    env._world.add(objects.Zombie(env._world, target, p))  # two cells ahead
    obs = h._observe(env.render())
    assert "sees(zombie)" in h.symbolic_state().predicates
    skill = next(s for s in scripted_skills() if s.name == "fight_zombie")
    res = run_skill(skill, h, {}, obs=obs)
    assert res.outcome.success, res.outcome.reason
    assert h.episode_stats()["achievements"]["defeat_zombie"] == 1


def test_the_shipped_collect_wood_skill_collects_on_held_out_worlds():
    """The learnt policy in skills_crafter/, through the skill runner on the real harness, from
    staged starts in worlds training never drew: most calls end with wood collected (an
    untrained or broken policy, or a feature hook out of step with training, does not)."""
    import torch

    from polar.skills.search_path import open_library

    skill = open_library("skills_crafter").get("collect_wood")
    assert skill.kind == "policy" and skill.provenance.env_steps and skill.provenance.env_steps >= 100_000
    h = make_harness("crafter:", start="wood")
    wins = 0
    for i in range(10):
        torch.manual_seed(i)
        obs, _ = h.reset(seed=1_600_000_000 + i)
        res = run_skill(skill, h, {}, obs=obs)
        wins += res.outcome.success and "gained(wood)" in h.symbolic_state().predicates
    assert wins >= 6, f"collect_wood collected wood in {wins}/10 held-out starts"
