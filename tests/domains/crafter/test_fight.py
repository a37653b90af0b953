"""The fight(foe) skill's parts on real Crafter worlds: the staged start, the training env's reward
(exactly Crafter's defeat count rising, death, the foe leaving view), the features the policy
reads, the harness's `start=<foe>`, and the manifests matching the scripted skills they could
replace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("crafter")

from polar.domains.crafter import fight, view  # noqa: E402
from polar.domains.crafter.fight_env import FightEnv  # noqa: E402
from polar.domains.crafter.staging import FOE_DISTANCE, stage_foe  # noqa: E402
from polar.errors import ConfigError, HarnessError  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402
from polar.skills.model import SkillError  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
DO = 5
_MOVES = {(-1, 0): 1, (1, 0): 2, (0, -1): 3, (0, 1): 4}  # noop, left, right, up, down, do


def _foes(env, foe: str) -> list:
    return [o for o in env._world.objects if type(o).__name__.lower() == foe]


def _zombie_in_front(e: FightEnv):
    """The staged zombie moved onto the cell the player faces, the only zombie left."""
    zombie, player, world = e._staged, e.env._player, e.env._world
    for o in _foes(e.env, "zombie"):
        if o is not zombie:
            world.remove(o)
    cell = tuple(int(v) for v in player.pos + player.facing)
    if world[cell][1] is not None and world[cell][1] is not zombie:
        world.remove(world[cell][1])
    world[cell] = "grass"
    world.move(zombie, cell)
    return zombie, player, cell


def test_damage_follows_crafters_sword_rule():
    assert fight.damage({}) == 1
    assert fight.damage({"wood_sword": 1}) == 2
    assert fight.damage({"wood_sword": 1, "stone_sword": 1}) == 3
    assert fight.damage({"iron_sword": 1}) == 5
    inv = np.zeros(len(view.ITEMS), dtype=np.int64)
    inv[view.ITEMS.index("stone_sword")] = 1
    assert fight.damage(inv) == 3


def test_features_encode_foe_facing_health_and_damage():
    sem = np.zeros((*view.VIEW, 2), np.uint8)
    x = fight.features(sem, 2, "skeleton", 6, 3)
    assert x["grid"].shape == (9, 7, 2) and x["goal"].shape == (fight.GOAL_DIM,)
    assert x["goal"][fight.FOES.index("skeleton")] == 1.0 and x["goal"][fight.FOES.index("zombie")] == 0.0
    assert x["goal"][len(fight.FOES) + 2] == 1.0
    assert x["goal"][-2] == pytest.approx(6 / 9) and x["goal"][-1] == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="unknown foe 'cow'"):
        fight.features(sem, 0, "cow", 9, 1)
    with pytest.raises(SkillError, match="thing must be one of zombie, skeleton"):
        fight.hook_features({"semantic": sem, "facing": 0, "vitals": [9, 9, 9, 9],
                             "inventory": np.zeros(len(view.ITEMS))}, {"thing": "cow"})


@pytest.mark.parametrize("foe", fight.FOES)
def test_stage_foe_puts_a_new_foe_in_view_on_its_ground(foe):
    import crafter

    env = crafter.Env(seed=3)
    env.reset()
    rng = np.random.default_rng(0)
    staged = stage_foe(env, foe, rng)
    assert staged is not None and staged in env._world.objects and staged.health > 0
    offset = staged.pos - env._player.pos
    assert FOE_DISTANCE[0] <= abs(offset).sum() <= FOE_DISTANCE[1]
    cells = fight.in_view(view.local_view(env._world, tuple(env._player.pos)), foe)
    assert len(cells), "the staged foe is in the 9x7 view"
    assert 4 <= env._player.inventory["health"] <= 9
    assert sum(env._player.inventory[s] for s in ("wood_sword", "stone_sword", "iron_sword")) <= 1
    if foe == "skeleton":
        assert env._world[tuple(staged.pos)][0] == "path" and env._world[tuple(env._player.pos)][0] == "path"


def test_fight_env_rewards_the_defeat_count_rising_and_ends_there():
    e = FightEnv(foes=["zombie"], hit=0.0)
    obs, info = e.reset(seed=4)
    assert info["foe"] == "zombie" and obs["goal"][fight.FOES.index("zombie")] == 1.0
    zombie, player, _ = _zombie_in_front(e)
    zombie.health = 1  # one hit from dead
    obs, reward, terminated, truncated, info = e.step(DO)
    assert terminated and not truncated and info["success"] and not info["died"]
    assert reward == pytest.approx(1.0), "the win alone: the beaten foe vanishing is no shaping loss"
    assert player.achievements["defeat_zombie"] == 1


def test_fight_env_punishes_death_and_ends_when_the_foe_leaves_view():
    e = FightEnv(foes=["zombie"])
    e.reset(seed=5)
    e.env._player.health = 0
    _, reward, terminated, _, info = e.step(0)
    assert terminated and info["died"] and reward <= -1.0 + 0.05 * 12
    e.reset()
    e.env._world.remove(e._staged)
    for o in _foes(e.env, "zombie"):
        e.env._world.remove(o)
    _, _, terminated, truncated, info = e.step(0)
    assert terminated and not truncated and not info["success"], "no zombie in view: the call ends"


def test_fight_env_truncates_at_max_steps_and_removes_the_last_foe_at_reset():
    e = FightEnv(foes=["zombie"], max_steps=2)
    e.reset(seed=6)
    first = e._staged
    e.env._player.health = 100  # no death, whatever the zombie does
    out = [e.step(0) for _ in range(2)]
    if not out[0][2] and not out[1][2]:  # the zombie stayed in view for both steps
        assert out[1][3], "truncated after max_steps"
    e.reset()
    assert first not in e.env._world.objects


def test_fight_env_refuses_unknown_foes():
    with pytest.raises(ConfigError, match=r"unknown foes \['cow'\]"):
        FightEnv(foes=["cow"])


def test_harness_start_stages_a_foe_and_hook_features_read_its_observation():
    h = make_harness("crafter:", start="zombie")
    obs, _ = h.reset(seed=11)
    assert "sees(zombie)" in h.symbolic_state().predicates
    x = fight.hook_features(obs, {"thing": "zombie"})
    assert x["goal"][-2] == pytest.approx(int(obs["vitals"][0]) / 9)
    with pytest.raises(HarnessError, match="start must be one of"):
        make_harness("crafter:", start="dragon")


@pytest.mark.parametrize("foe", fight.FOES)
def test_learnt_manifest_serves_the_same_plans_as_the_scripted_one(foe):
    learnt = yaml.safe_load((ROOT / f"skills/recipes/crafter_fight/fight_{foe}.yaml").read_text())
    scripted = yaml.safe_load((ROOT / f"skills/recipes/crafter/fight_{foe}.yaml").read_text())
    for key in ("name", "parameters", "preconditions", "effects", "termination", "step_budget", "harnesses"):
        assert learnt[key] == scripted[key], key
    assert learnt["features"]["fn"] == "polar.domains.crafter.fight:hook_features"


def test_fight_env_pays_each_hit_its_share_of_the_foes_health():
    e = FightEnv(foes=["zombie"], hit=0.5, shaping=0.0)
    e.reset(seed=4)
    zombie, player, cell = _zombie_in_front(e)
    for s in ("wood_sword", "stone_sword", "iron_sword"):
        player.inventory[s] = 0
    zombie.health = 5
    zombie.cooldown = 99  # it does not hit back here
    _, reward, terminated, _, _ = e.step(DO)  # no sword: 1 of the zombie's 5 health
    assert not terminated and reward == pytest.approx(0.5 / 5)
    zombie.health = 1
    player.inventory["iron_sword"] = 1
    if tuple(zombie.pos) != cell:  # it stepped aside: back in front of the player
        e.env._world.move(zombie, cell)
    _, reward, terminated, _, info = e.step(DO)  # 5 damage on 1 health left: only 1 counts
    assert terminated and info["success"] and reward == pytest.approx(1.0 + 0.5 / 5)
