"""`collect(resource)`: the goal-conditioned gathering skill's targets, features and hooks.

One PPO policy serves every target (the resource is an input), trained on
`polar.domains.crafter.collect_env:CollectEnv` and registered once per resource as
`collect_<resource>` with that resource's preconditions and effects (skills/recipes/
crafter_collect_manifests.py writes them), so a symbolic planner regresses the tech tree over
the manifests alone.

What a target is comes from Crafter's own rules (`crafter.constants.collect`): the material
the player faces and presses `do` on, what it must hold (a wood pickaxe for stone and coal, a
stone pickaxe for iron...) and what rises in its inventory. Two targets are not materials: a
cow is an object hit until it is eaten (food rises) and water raises drink. `table` and
`furnace` are places to go to (`near`), the precondition of making tools.

The policy reads the agent's own view only: the 9x7 cells of (material, object) ids around
the player, which way it faces and the target. A call ends when the target's count rises
(`gained(ITEM)`, a predicate of the harness), when the player holds `n` of it where `n` is
given, or, for `table` and `furnace`, when one is within the 3x3 cells around the player.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from polar.domains.crafter import view


@dataclass(frozen=True)
class Target:
    name: str  # the skill's resource parameter
    thing: str  # what the view shows: a material (tree, stone, ...) or an object (cow)
    item: str | None  # the inventory or vital count that rises (None: a place to go to)
    needs: dict[str, int] = field(default_factory=dict)  # tools Crafter requires to collect it
    achievement: str | None = None  # the achievement unlocked the first time


def _targets() -> dict[str, Target]:
    import crafter

    rules = crafter.constants.collect
    out: dict[str, Target] = {}
    for name, material in (("wood", "tree"), ("stone", "stone"), ("coal", "coal"), ("iron", "iron"),
                           ("diamond", "diamond"), ("sapling", "grass"), ("water", "water")):
        rule = rules[material]
        (item,) = rule["receive"]
        out[name] = Target(name, material, item, dict(rule["require"]), f"collect_{item}")
    out["cow"] = Target("cow", "cow", "food", {}, "eat_cow")  # hit until eaten: Player._do_object
    out["table"] = Target("table", "table", None)
    out["furnace"] = Target("furnace", "furnace", None)
    return out


TARGETS: dict[str, Target] = _targets()
NAMES: tuple[str, ...] = tuple(TARGETS)
GOAL_DIM = len(NAMES) + len(view.FACING)


def observation_space() -> gym.spaces.Dict:
    return gym.spaces.Dict({
        # [x, y, (material, object)] ids, the player at view.CENTRE
        "grid": gym.spaces.Box(0, 15, (*view.VIEW, 2), np.uint8),
        # target one-hot, then facing one-hot
        "goal": gym.spaces.Box(0.0, 1.0, (GOAL_DIM,), np.float32),
    })


OBSERVATION_KINDS = {"grid": "index_grid", "goal": "vector"}


def features(semantic: np.ndarray, facing: int, target: str) -> dict[str, np.ndarray]:
    """The policy's input: the view's cells, the target and the facing direction."""
    if target not in TARGETS:
        raise ValueError(f"collect: unknown resource {target!r}; choose one of {', '.join(NAMES)}")
    goal = np.zeros(GOAL_DIM, np.float32)
    goal[NAMES.index(target)] = 1.0
    goal[len(NAMES) + int(facing)] = 1.0
    return {"grid": np.asarray(semantic, dtype=np.uint8), "goal": goal}


def target_cells(semantic: np.ndarray, target: str) -> np.ndarray:
    """[k, 2] view cells (x, y) holding the target."""
    thing = TARGETS[target].thing
    if thing in view.OBJECTS:
        return np.argwhere(semantic[..., 1] == view.OBJECTS.index(thing))
    return np.argwhere(semantic[..., 0] == view.MATERIALS.index(thing))


def near(semantic: np.ndarray, thing: str) -> bool:
    """`thing` within the 3x3 cells around the player (where Crafter looks for a station)."""
    cx, cy = view.CENTRE
    block = semantic[cx - 1:cx + 2, cy - 1:cy + 2]
    if thing in view.OBJECTS:
        return bool((block[..., 1] == view.OBJECTS.index(thing)).any())
    return bool((block[..., 0] == view.MATERIALS.index(thing)).any())


# --- the manifest's hooks -------------------------------------------------------------------


def _target(args: dict[str, Any]) -> str:
    name = args.get("resource")
    if name not in TARGETS:
        from polar.skills.model import SkillError

        raise SkillError(f"collect: resource must be one of {', '.join(NAMES)}, got {name!r}")
    return str(name)


def hook_features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, np.ndarray]:
    """The manifest's feature hook: the view, facing and target from a `crafter:` observation."""
    return features(obs["semantic"], int(obs["facing"]), _target(args))


def hook_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """The manifest's termination check: the target's count rose this step (`gained(ITEM)`),
    or with `n`, the player holds n of it (`has(ITEM,n)`); for a station, `near(STATION)`."""
    if state is None:
        return False
    target = TARGETS[_target(args)]
    preds = set(state.predicates)
    if target.item is None:
        return f"near({target.thing})" in preds
    n = args.get("n")
    if n is not None and target.item in view.ITEMS:
        return f"has({target.item},{int(n)})" in preds
    # `gained` is about the last step: before this call's first step (its info is still empty,
    # polar.harnesses.rollout) a count the previous call raised does not end this one
    return bool(info) and f"gained({target.item})" in preds
