"""`fight(foe)`: the learnt fighting skill's foes, features and hooks.

One PPO policy serves both foes (the foe is an input), trained on
`polar.domains.crafter.fight_env:FightEnv` and registered as `fight_zombie` and
`fight_skeleton` (skills/recipes/crafter_fight/). Crafter's own rules decide a fight
(`Player._do_object`): a hit takes 1 health from the foe, 2 with a wood sword, 3 with stone,
5 with iron; a zombie has 5 health and hits back (2 health every 6 steps next to the player,
7 on a sleeper), a skeleton has 3 and shoots arrows down its tunnel. Beating one raises the
achievement count `defeat_<foe>`.

The policy reads the agent's own view only: the 9x7 cells of (material, object) ids around the
player, which way it faces, the foe, its own health and its sword's damage (from the
inventory the image shows). A call ends as the scripted skill's does: when no foe of that kind
is in view (beaten, or out of sight).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from polar.domains.crafter import view

FOES = ("zombie", "skeleton")
MAX_HEALTH = 9
MAX_DAMAGE = 5
GOAL_DIM = len(FOES) + len(view.FACING) + 2  # foe, facing, health / 9, damage / 5


def damage(inventory: dict[str, int] | np.ndarray) -> int:
    """What one hit takes from a foe with this inventory (Crafter's `Player._do_object`)."""
    if not isinstance(inventory, dict):
        inventory = dict(zip(view.ITEMS, (int(v) for v in np.asarray(inventory)), strict=True))
    return max(1, 2 * bool(inventory.get("wood_sword")), 3 * bool(inventory.get("stone_sword")),
               5 * bool(inventory.get("iron_sword")))


def observation_space() -> gym.spaces.Dict:
    return gym.spaces.Dict({
        "grid": gym.spaces.Box(0, 15, (*view.VIEW, 2), np.uint8),  # [x, y, (material, object)]
        "goal": gym.spaces.Box(0.0, 1.0, (GOAL_DIM,), np.float32),  # foe, facing, health, damage
    })


OBSERVATION_KINDS = {"grid": "index_grid", "goal": "vector"}


def features(semantic: np.ndarray, facing: int, foe: str, health: int, hit: int) -> dict[str, np.ndarray]:
    """The policy's input: the view's cells and (foe, facing, health, sword damage)."""
    if foe not in FOES:
        raise ValueError(f"fight: unknown foe {foe!r}; choose one of {', '.join(FOES)}")
    goal = np.zeros(GOAL_DIM, np.float32)
    goal[FOES.index(foe)] = 1.0
    goal[len(FOES) + int(facing)] = 1.0
    goal[-2] = min(max(health, 0), MAX_HEALTH) / MAX_HEALTH
    goal[-1] = min(hit, MAX_DAMAGE) / MAX_DAMAGE
    return {"grid": np.asarray(semantic, dtype=np.uint8), "goal": goal}


def in_view(semantic: np.ndarray, foe: str) -> np.ndarray:
    """[k, 2] view cells (x, y) where a `foe` stands."""
    return np.argwhere(np.asarray(semantic)[..., 1] == view.OBJECTS.index(foe))


# --- the manifest's hooks -------------------------------------------------------------------


def _foe(args: dict[str, Any]) -> str:
    foe = args.get("thing")
    if foe not in FOES:
        from polar.skills.model import SkillError

        raise SkillError(f"fight: thing must be one of {', '.join(FOES)}, got {foe!r}")
    return str(foe)


def hook_features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, np.ndarray]:
    """The manifest's feature hook, from a `crafter:` observation (view, facing, vitals, inventory)."""
    health = int(np.asarray(obs["vitals"])[view.VITALS.index("health")])
    return features(obs["semantic"], int(obs["facing"]), _foe(args), health, damage(obs["inventory"]))
