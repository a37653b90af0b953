"""Crafter's predicates, read from one observation (the view) and the agent's own achievements.

Crafter's rules (its data.yaml, `crafter.constants`) decide what some predicates mean:
`near(THING)` is the 3x3 cells around the player, where Crafter looks for a table or furnace
when making a tool (`Player._make`: `world.nearby(pos, 1)`); `can_place(NAME)` holds when the
faced cell is one Crafter lets NAME be placed on (`Player._place`: its material is in
`place[NAME].where` and no object stands there), whatever the inventory holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polar.domains.crafter import view

LOW_VITAL = 3  # at or below: the vital is low
NIGHT, DARK = 0.5, 0.7  # daylight below: night (steps 148-272 of each 300); dark (130-290)
MAX_VITAL = 9
PREDICATE_VOCABULARY = [
    "achieved(ACHIEVEMENT)", "has(ITEM)", "has(ITEM,N)", "sees(THING)", "near(THING)", "facing(THING)",
    "can_place(NAME)", "low(VITAL)", "full(VITAL)", "below(VITAL,N)", "night", "dark", "asleep", "sheltered", "gained(ITEM)",
]


def _place_rules() -> dict[str, list[str]]:
    import crafter

    return {name: list(rule["where"]) for name, rule in crafter.constants.place.items()}


def near_things(semantic: np.ndarray) -> set[str]:
    """Materials and objects (the player aside) of the 3x3 cells centred on the player."""
    cx, cy = view.CENTRE
    block = semantic[cx - 1:cx + 2, cy - 1:cy + 2]
    found = {view.MATERIALS[int(m)] for m in block[..., 0].ravel()}
    found |= {view.OBJECTS[int(o)] for o in block[..., 1].ravel()}
    return found - {"none", "player"}


def gained_items(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """Items and vitals whose count rose from observation `before` to `after` (none at a reset):
    what a collecting skill's termination reads (`gained(wood)`, `gained(drink)`)."""
    if before is None:
        return []
    names = (*view.ITEMS, *view.VITALS)
    old = np.concatenate([np.asarray(before["inventory"]), np.asarray(before["vitals"])])
    new = np.concatenate([np.asarray(after["inventory"]), np.asarray(after["vitals"])])
    return [name for name, a, b in zip(names, old, new, strict=True) if b > a]


def view_predicates(obs: dict[str, Any], achievements: dict[str, int], gained: list[str] | tuple = ()) -> list[str]:
    """Every predicate that holds in the observation `obs`, given the episode's achievements and
    the counts the last step raised (`gained`)."""
    sem = np.asarray(obs["semantic"])
    preds = {f"achieved({k})" for k, n in achievements.items() if n > 0}
    preds |= {f"gained({k})" for k in gained}
    for item, n in zip(view.ITEMS, np.asarray(obs["inventory"]), strict=True):
        if n > 0:  # has(wood) and has(wood,1..n): a recipe's "uses 2 wood" is has(wood,2)
            preds |= {f"has({item})", *(f"has({item},{k})" for k in range(1, int(n) + 1))}
    preds |= {f"sees({k})" for k in view.visible_things(sem)}
    preds |= {f"near({k})" for k in near_things(sem)}
    for vital, v in zip(view.VITALS, np.asarray(obs["vitals"]), strict=True):
        if v <= LOW_VITAL:
            preds.add(f"low({vital})")
        if v >= MAX_VITAL:
            preds.add(f"full({vital})")
        # below(drink,7): drink is under 7, for a profile's own thresholds (drink ahead of need)
        preds |= {f"below({vital},{k})" for k in range(int(v) + 1, MAX_VITAL + 1)}
    mat, obj = view.facing_cell(sem, int(obs["facing"]))
    preds.add(f"facing({obj if obj != 'none' else mat})")
    if obj == "none":
        preds |= {f"can_place({name})" for name, where in _place_rules().items() if mat in where}
    daylight = float(np.asarray(obs["daylight"]).reshape(-1)[0])
    if daylight < NIGHT:
        preds.add("night")
    if daylight < DARK:  # dusk to early morning: Crafter spawns zombies from daylight 0.83 down
        preds.add("dark")
    if int(obs["sleeping"]):
        preds.add("asleep")
    if view.enclosed(sem):  # walled in: no zombie can walk up (view.enclosed)
        preds.add("sheltered")
    return sorted(preds)
