"""Crafter's skill library: the learnt `collect_<resource>` skills (one PPO policy, one manifest
per target), small scripted skills (`explore`, `face_free`, `fight_zombie`, `fight_skeleton`,
`hunt_cow`, `drink_up`, `rest`, `shelter`) and the primitives.

Every manifest declares preconditions and effects in the harness's predicates, so a generic
symbolic planner regresses Crafter's tech tree over them: `collect_stone` needs
`has(wood_pickaxe)` (Crafter's `collect.stone.require`) and `sees(stone)`, and gives
`has(stone,{n})`, `gained(stone)` and `achieved(collect_stone)`. A precondition `sees(X)` is
`explore(thing=X)`'s effect; `can_place(X)` is `face_free(name=X)`'s.

`install(library, run_dir)` registers them all from a `polar train` run of
skills/recipes/crafter_collect.yaml (each collect skill carries the run's env steps, so a
suite's cost ledger charges them to the planner that uses them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from polar.domains.crafter import collect, view
from polar.domains.crafter.memory_reader import REMEMBERED, walk_to_remembered
from polar.domains.crafter.moves import DIRS as _DIRS
from polar.domains.crafter.moves import action as _action
from polar.domains.crafter.moves import approach_act, frontier, walk_to_cells
from polar.domains.crafter.moves import explore_act as _walk_on
from polar.domains.crafter.moves import free as _free
from polar.domains.crafter.plant import plant_skills
from polar.domains.crafter.primitives import CRAFTER, primitive_skills
from polar.skills.model import Skill

_MOVES = {d: m for d, m in zip(_DIRS, ("move_left", "move_right", "move_up", "move_down"), strict=True)}

COLLECT_BUDGET = 150  # steps: the training episodes' limit
EXPLORE_BUDGET = 100
REST_BUDGET = 400  # energy refills by about one point per 30 steps asleep
SHELTER_BUDGET = 400  # dark lasts about 160 of Crafter's 300-step days; then sleep to full
# What `explore` looks for: what the world generates (a table or furnace is only where the
# player put one, so a planner places a new one rather than search for it)
EXPLORE_THINGS = ["tree", "stone", "coal", "iron", "diamond", "water", "lava", "cow", "zombie", "skeleton"]


def skill_name(target: str) -> str:
    """`collect_<resource>`, or `goto_<station>` for a table or furnace."""
    return f"{'goto' if collect.TARGETS[target].item is None else 'collect'}_{target}"


def collect_manifest(name: str) -> dict[str, Any]:
    """The manifest fields of `collect_<name>` / `goto_<station>` (all but policy and provenance)."""
    t = collect.TARGETS[name]
    params: dict[str, Any] = {"resource": {"choices": [name], "default": name,
                                           "description": f"the policy's target (this skill: {name})"}}
    pre = [f"has({tool})" for tool in t.needs]
    if t.thing != "grass":  # grass (saplings) is everywhere: no need to look for it
        pre.append(f"sees({t.thing})")
    if t.item is None:
        what = f"Walk next to a {name} in view (within the 3x3 cells around you), where tools are made."
        effects = [f"near({name})"]
    elif t.item in view.VITALS:
        verb = "drink" if t.item == "drink" else "eat"
        how = "face the water and drink" if verb == "drink" else "hit it until it is eaten"
        what = f"Go to the nearest {t.thing} in view and {how}: {t.item} rises."
        effects = [f"gained({t.item})", f"not low({t.item})", f"achieved({t.achievement})"]
    else:
        params["n"] = {"type": "int", "description": f"collect until you hold n {t.item}; omit to collect one more"}
        tools = f" Needs a {' and a '.join(t.needs)}." if t.needs else ""
        where = "Faces grass and collects until a sapling drops (1 in 10)." if t.thing == "grass" else \
            f"Goes to the nearest {t.thing} in view, faces it and collects it."
        what = f"Collect {t.item}: {where}{tools}"
        effects = [f"has({t.item},{{n}})", f"gained({t.item})", f"achieved({t.achievement})"]
    return {
        "name": skill_name(name),
        "description": what + " Learnt by PPO on the 9x7 view (polar.domains.crafter.collect).",
        "harnesses": CRAFTER,
        "parameters": params,
        "preconditions": pre,
        "effects": effects,
        "termination": {"check": "polar.domains.crafter.collect:hook_done"},
        "features": {"fn": "polar.domains.crafter.collect:hook_features"},
        "step_budget": COLLECT_BUDGET,
        "deterministic": False,  # sampled actions, as PPO trained it (a greedy policy can loop)
    }


# --- scripted skills --------------------------------------------------------------------------


def view_features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, Any]:
    """The scripted skills' input: the view's cells and the facing direction, and the agent's own
    memory (`memory`, None without one) when the agent keeps one (`polar.agent.memory`: a planner
    with `memory: true` on `crafter:` with odometry). Nothing else of the harness is read."""
    memory = harness.capability("memory") if harness is not None and "memory" in harness.capabilities() else None
    return {"semantic": np.asarray(obs["semantic"]), "facing": int(obs["facing"]), "memory": memory}


def _remembered_or(x: dict[str, Any], thing: str, in_view: bool, act: Any) -> int:
    """With `thing` in view, or no memory: `act()` as before. Else the first move of the walk
    through remembered cells to the remembered `thing` (water: the nearest; a cow: where one was
    last seen), falling back on `act()` (which explores) when none is remembered or reachable."""
    if in_view or x.get("memory") is None:
        return act()
    move = walk_to_remembered(x["memory"], thing)
    return act() if move is None else move


def _in_view(sem: np.ndarray, thing: str) -> bool:
    if thing in view.OBJECTS:
        return bool((sem[..., 1] == view.OBJECTS.index(thing)).any())
    return bool((sem[..., 0] == view.MATERIALS.index(thing)).any())


def explore_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`explore`'s policy: walk on (`moves.explore_act`); with a memory and the thing remembered
    (water where it was seen, a cow where one was seen last), walk there instead, until in view."""
    thing = str(args.get("thing", ""))
    walk = (lambda: _walk_on(x, args)) if x.get("memory") is None else (lambda: _to_frontier(x, args))
    if thing not in REMEMBERED:
        return walk()
    return _remembered_or(x, thing, _in_view(x["semantic"], thing), walk)


def _to_frontier(x: dict[str, Any], args: dict[str, Any]) -> int:
    """With a memory, explore new ground: the first move towards the nearest remembered walkable
    cell next to a cell never seen (inside the world), so the walk does not go back over ground
    it has seen; none reachable: walk on as without a memory."""
    move = walk_to_cells(x["memory"], frontier(x["memory"]))
    return _walk_on(x, args) if move is None else move


def face_free_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """Face a neighbouring cell where `name` may be placed: step towards one (moving into a
    free cell walks onto it and faces the next; the planner's check is `can_place`)."""
    import crafter

    where = tuple(crafter.constants.place[args.get("name", "table")]["where"])
    sem = x["semantic"]
    for d in _DIRS:
        if _free(sem, d, where):
            return _action(_MOVES[d])
    return _walk_on(x, args)


def fight_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """Go for the nearest `thing` in view and hit it: next to it, face it (a move towards an
    occupied cell only turns the player) and `do`; farther, step along the longer axis towards
    it (the other where that cell is not free ground); none in view: walk on (explore)."""
    sem, facing = x["semantic"], int(x["facing"])
    cells = np.argwhere(sem[..., 1] == view.OBJECTS.index(args.get("thing", "zombie")))
    if not len(cells):
        return _walk_on(x, args)
    offsets = cells - np.array(view.CENTRE)
    dx, dy = (int(v) for v in offsets[np.abs(offsets).sum(axis=1).argmin()])
    if abs(dx) + abs(dy) == 1:
        return _action("do") if _DIRS[facing] == (dx, dy) else _action(_MOVES[(dx, dy)])
    steps = [(int(np.sign(dx)), 0), (0, int(np.sign(dy)))]
    if abs(dy) > abs(dx):
        steps.reverse()
    for d in steps:
        if d != (0, 0) and _free(sem, d):
            return _action(_MOVES[d])
    return _walk_on(x, args)


def drink_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`drink_up`'s policy: to the nearest water in view, face it (a move towards water only turns
    the player: water cannot be walked on) and drink, a sip a step; with a memory and no water in
    view, to the nearest remembered water first."""
    return _remembered_or(x, "water", _in_view(x["semantic"], "water"), lambda: approach_act(x, "water"))


def hunt_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`hunt_cow`'s policy: a cow is hit as a zombie is (`fight_act`), until it is eaten; with a
    memory and no cow in view (it wandered off), to where a cow was seen last."""
    return _remembered_or(x, "cow", _in_view(x["semantic"], "cow"), lambda: fight_act(x, {"thing": "cow"}))


def hunt_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """`hunt_cow`'s termination: food rose on a step of this call (collect_cow's own check)."""
    return collect.hook_done(state, {"resource": "cow"}, obs, info)


def gather_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`chop_wood`'s policy: to the nearest tree in view and cut it, a wood a step (a tree stays)."""
    return approach_act(x, "tree")


# What `mine_<m>` digs through on its way: stone (any pickaxe digs it; its preconditions hold one)
MINE_THROUGH = ("stone",)
MINE_TARGETS = ("stone", "coal", "iron", "diamond")  # mine_<m>: the pickaxe Crafter requires, from its rules


def mine_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`mine_<m>`'s policy: the shortest way to beside the nearest `m` in view, digging through
    stone where that is shorter than walking around (ore sits inside stone), face it and `do`;
    with a memory and none in view, to the remembered one (coal, iron) first."""
    thing = str(args.get("resource", "coal"))
    act = lambda: approach_act(x, thing, MINE_THROUGH)  # noqa: E731
    if thing not in REMEMBERED:
        return act()
    return _remembered_or(x, thing, _in_view(x["semantic"], thing), act)


def mine_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """`mine_<m>`'s termination: collect_<m>'s own check (the count rose, or n held)."""
    return collect.hook_done(state, args, obs, info)


def mine_skills(common: dict[str, Any]) -> list[Skill]:
    """`mine_stone`, `mine_coal`, `mine_iron`, `mine_diamond`: scripted stand-ins for the learnt
    collect skills of ores (coal 0.35, iron 0.24 from their staged starts), whose preconditions
    and effects they share: the tool from Crafter's rules (`collect.<m>.require`), the ore in view."""
    out = []
    for m in MINE_TARGETS:
        needs = [f"has({tool})" for tool in collect.TARGETS[m].needs]
        out.append(Skill(
            **common, name=f"mine_{m}",
            description=f"Collect {m}: walk the shortest way to the nearest {m} in view, digging through "
                        f"stone where that is shorter, face it and mine it, until you hold n (omit n: one "
                        f"more). Needs a {' and a '.join(t[4:-1] for t in needs)}. Scripted, not learnt "
                        "(polar.domains.crafter.skills): a stand-in for the learnt collect skill.",
            parameters={"resource": {"choices": [m], "default": m, "description": f"what to mine: {m}"},
                        "n": {"type": "int", "description": f"mine until you hold n {m}; omit to mine one more"}},
            preconditions=[*needs, f"sees({m})"],
            effects=[f"has({m},{{n}})", f"gained({m})", f"achieved(collect_{m})"],
            termination={"check": "polar.domains.crafter.skills:mine_done"},
            policy={"loader": "polar.domains.crafter.skills:mine_act", "config": {}}, step_budget=80))
    return out


def go_near_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`go_near`'s policy: the shortest free way to beside the nearest `thing` (a table or furnace)."""
    return approach_act(x, str(args.get("thing", "table")))


def gather_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """`chop_wood`'s termination: collect_wood's own check (wood rose, or n held)."""
    return collect.hook_done(state, {**args, "resource": "wood"}, obs, info)


def rest_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    return _action("sleep")


def scripted_skills() -> list[Skill]:
    import crafter

    common = {"kind": "python", "harnesses": CRAFTER,
              "features": {"fn": "polar.domains.crafter.skills:view_features"}}
    return [
        Skill(**common, name="explore",
              description="Walk through the world (straight on over free ground, turning where blocked, "
                          "never into lava or water) until the thing is in view. Scripted, not learnt.",
              parameters={"thing": {"choices": EXPLORE_THINGS, "required": True,
                                    "description": "what to look for"}},
              effects=["sees({thing})"], termination={"predicates": ["sees({thing})"]},
              policy={"loader": "polar.domains.crafter.skills:explore_act", "config": {}}, step_budget=EXPLORE_BUDGET),
        Skill(**common, name="face_free",
              description="Face a neighbouring cell where NAME can be placed (free grass, sand or path). "
                          "Scripted, not learnt.",
              parameters={"name": {"choices": list(crafter.constants.place), "required": True,
                                   "description": "what is to be placed"}},
              effects=["can_place({name})"], termination={"predicates": ["can_place({name})"]},
              policy={"loader": "polar.domains.crafter.skills:face_free_act", "config": {}}, step_budget=20),
        *(Skill(**common, name=f"fight_{foe}",
                description=f"Go for the nearest {foe} in view and hit it until it is gone from view "
                            f"(defeated, or out of sight). Without a sword a {foe} takes several hits. "
                            "Scripted, not learnt.",
                parameters={"thing": {"choices": [foe], "default": foe, "description": f"what to fight: {foe}"}},
                preconditions=[f"sees({foe})"],
                effects=[f"not sees({foe})", f"not near({foe})", f"achieved(defeat_{foe})"],
                termination={"predicates": [f"not sees({foe})"]},
                policy={"loader": "polar.domains.crafter.skills:fight_act", "config": {}}, step_budget=60)
          for foe in ("zombie", "skeleton")),
        Skill(**common, name="drink_up",
              description="Drink until you are full: walk to the nearest water you can see, face it and "
                          "drink, a sip a step. Scripted, not learnt.",
              preconditions=["sees(water)"], effects=["full(drink)", "not low(drink)", "achieved(collect_drink)"],
              termination={"predicates": ["full(drink)"]},
              policy={"loader": "polar.domains.crafter.skills:drink_act", "config": {}}, step_budget=60),
        Skill(**common, name="hunt_cow",
              description="Eat a cow to keep food up: go for the nearest cow in view and hit it until "
                          "it is eaten (food rises by 6). Scripted, not learnt (polar.domains.crafter.skills): "
                          "the stand-in for the learnt collect_cow while that one is weak (a cow moves and "
                          "takes three hits).",
              preconditions=["sees(cow)"], effects=["gained(food)", "not low(food)", "achieved(eat_cow)"],
              termination={"check": "polar.domains.crafter.skills:hunt_done"},
              policy={"loader": "polar.domains.crafter.skills:hunt_act", "config": {}}, step_budget=60),
        Skill(kind="python", harnesses=CRAFTER, name="shelter",
              description="Wall yourself in for the night and sleep: dig a two-cell tunnel into stone (or use a "
                          "corridor between trees, water or stone), close both ends with stone, sleep until it "
                          "is no longer dark and energy is full, then dig the door open. Needs a wood pickaxe. Scripted, "
                          "not learnt (polar.domains.crafter.shelter).",
              preconditions=["has(wood_pickaxe)", "sees(stone)"],
              # not achieved(wake_up) nor full(energy): by day with energy full its termination holds
              # at once, and a planner would call it for them again and again, to no effect
              effects=["not dark", "not night", "not low(energy)"],
              termination={"predicates": ["not dark", "full(energy)", "not asleep", "not sheltered"]},
              features={"fn": "polar.domains.crafter.shelter:features"},
              policy={"loader": "polar.domains.crafter.shelter:act", "config": {}}, step_budget=SHELTER_BUDGET),
        Skill(**common, name="chop_wood",
              description="Collect wood: walk the shortest way to the nearest tree in view, face it and cut "
                          "it, a wood a step, until you hold n (omit n: one more). Scripted, not learnt "
                          "(polar.domains.crafter.skills): the stand-in for the learnt collect_wood while that "
                          "one is slow (about 40 steps a wood in the planner's episodes).",
              parameters={"n": {"type": "int", "description": "collect until you hold n wood; omit to collect one more"}},
              preconditions=["sees(tree)"], effects=["has(wood,{n})", "gained(wood)", "achieved(collect_wood)"],
              termination={"check": "polar.domains.crafter.skills:gather_done"},
              policy={"loader": "polar.domains.crafter.skills:gather_act", "config": {}}, step_budget=60),
        Skill(**common, name="go_near",
              description="Walk to the nearest table or furnace you can see until you are next to it, where "
                          "you can make tools. Scripted stand-in for the learnt goto_table and goto_furnace.",
              parameters={"thing": {"choices": ["table", "furnace"], "required": True,
                                    "description": "the station to go to"}},
              preconditions=["sees({thing})"], effects=["near({thing})"],
              termination={"predicates": ["near({thing})"]},
              policy={"loader": "polar.domains.crafter.skills:go_near_act", "config": {}}, step_budget=40),
        *mine_skills(common),
        *plant_skills(common),
        Skill(**common, name="rest",
              description="Sleep until energy is full (the player then wakes: achievement wake_up). "
                          "Zombies hit a sleeper harder. Scripted, not learnt.",
              preconditions=["not full(energy)"], effects=["full(energy)", "not low(energy)", "achieved(wake_up)"],
              termination={"predicates": ["full(energy)"]},
              policy={"loader": "polar.domains.crafter.skills:rest_act", "config": {}}, step_budget=REST_BUDGET),
    ]


def write_manifests(out: str | Path, targets: list[str] | None = None) -> list[Path]:
    """Write every manifest as YAML under `out`: `collect_<target>.yaml` for
    `polar skills register RUN --manifest ...`, the scripted skills' and the primitives' for
    `polar skills add ...` (skills/recipes/crafter/ holds the committed copies)."""
    import yaml

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    from polar.domains.crafter.collect_env import DEFAULT_TARGETS

    for name in targets or list(DEFAULT_TARGETS):
        path = folder / f"{skill_name(name)}.yaml"
        path.write_text(f"# Generated by `python -m polar.domains.crafter.skills {out}` from Crafter's rules.\n"
                        + yaml.safe_dump(collect_manifest(name), sort_keys=False))
        written.append(path)
    for skill in [*scripted_skills(), *primitive_skills()]:
        data = skill.model_dump(mode="json", exclude_defaults=True, exclude={"version", "provenance"})
        data["kind"] = skill.kind
        path = folder / f"{skill.name}.yaml"
        path.write_text(f"# Generated by `python -m polar.domains.crafter.skills {out}`.\n"
                        + yaml.safe_dump(data, sort_keys=False))
        written.append(path)
    return written


if __name__ == "__main__":
    import sys

    for p in write_manifests(sys.argv[1] if len(sys.argv) > 1 else "skills/recipes/crafter"):
        print(p)
