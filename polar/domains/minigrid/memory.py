"""MiniGrid skills over the agent's memory (docs/memory.md): `explore` and `goto`, planned
paths over the cells the agent has seen, never the simulator's grid.

They read the memory through the harness's `"memory"` capability (`polar.agent.memory.
MemoryHarness`) and nothing else: a path is a breadth-first search over remembered cells the
agent can walk through now (empty floor, the goal, an open door); an unseen cell is never
entered. Their termination tests read the symbolic state, which under the memory is the
memory's predicates. They are Python skills (no weights); `install_memory_skills(library)`
registers them with the primitives into a library (the shipped one: `skills_memory/`).

- `explore(object, color)`: walk to the nearest cell next to an unseen one and face it,
  again and again, until an object of that type (and colour) is seen or no unseen cell can be
  walked to (`not reachable(frontier)`: a closed door is in the way).
- `goto(object, color, x, y)`: the memory's `goto`: to face the nearest remembered matching
  object (stand on it, for the goal), the shipped goto's preconditions, effects and
  termination test.
- `pickup(object, color, x, y)`: the primitive, with `object` required (`memory_pickup`).
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

from minigrid.core.constants import IDX_TO_COLOR

from polar.domains.minigrid.goto import _bound_args
from polar.domains.minigrid.memory_reader import frontier, kind, passable
from polar.domains.minigrid.missions import COLORS, OBJECT_TYPES
from polar.domains.minigrid.primitives import MINIGRID, _definition, primitive_skills
from polar.domains.minigrid.state import DIR_VECTORS
from polar.harnesses.sighting import Cell, MemoryView
from polar.skills.model import Skill, SkillError
from polar.skills.search_path import Library, open_library
from polar.skills.store import SkillLibrary


class NoWay(LookupError):
    """No remembered walk reaches what the skill is after: the call fails (the planner replans);
    not a `PolarError`, which would mean a broken setup and stop the episode."""


LEFT, RIGHT, FORWARD = 0, 1, 2  # MiniGrid's action ids, the same in every MiniGrid action space
_MODULE = "polar.skills.minigrid.memory"  # the path committed manifests name (an alias, see polar/skills/minigrid)


def memory_of(harness: Any) -> MemoryView:
    """The agent's memory, the one thing these skills read."""
    if harness is None or "memory" not in harness.capabilities():
        raise SkillError("this skill reads the agent's memory (the harness's 'memory' capability): run it under "
                         "polar.agent.memory.MemoryHarness (a planner with memory, e.g. planners/symbolic-memory.yaml)")
    return harness.capability("memory")


def path_to(memory: MemoryView, goals: set[Cell]) -> list[Cell] | None:
    """The shortest walk (cells after the agent's, in order) through passable remembered
    cells to one of `goals`; [] when the agent stands on one; None when none can be reached."""
    start = memory.pose
    if start in goals:
        return []
    parent: dict[Cell, Cell | None] = {start: None}
    queue = deque([start])
    while queue:
        c = queue.popleft()
        for dx, dy in DIR_VECTORS:
            n = (c[0] + dx, c[1] + dy)
            if n in parent or not passable(memory, n):
                continue
            parent[n] = c
            if n in goals:
                walk = [n]
                while (p := parent[walk[-1]]) is not None and p != start:
                    walk.append(p)
                return walk[::-1]
            queue.append(n)
    return None


def step_towards(memory: MemoryView, cell: Cell) -> int:
    """The action that turns the agent towards a neighbouring `cell`, or moves into it when it
    already faces it."""
    want = DIR_VECTORS.index((cell[0] - memory.pose[0], cell[1] - memory.pose[1]))
    if want == memory.heading:
        return FORWARD
    return RIGHT if (want - memory.heading) % 4 == 1 else LEFT


def _approach(memory: MemoryView, targets: list[Cell], stand_on: bool) -> int | None:
    """The next action to face one of `targets` from a neighbouring cell (to stand on it, with
    `stand_on`), by the shortest remembered walk; None when no walk reaches one."""
    if stand_on:
        walk = path_to(memory, set(targets))
        return None if walk is None else (step_towards(memory, walk[0]) if walk else None)
    beside = {(t[0] + dx, t[1] + dy): t for t in targets for dx, dy in DIR_VECTORS}
    walk = path_to(memory, {c for c in beside if c == memory.pose or passable(memory, c)})
    if walk is None:
        return None
    if walk:
        return step_towards(memory, walk[0])
    here = [t for t in targets if abs(t[0] - memory.pose[0]) + abs(t[1] - memory.pose[1]) == 1]
    return step_towards(memory, here[0])  # next to one: turn to it (facing it ends the skill)


# ---- the skill hooks (named in the manifests) ----------------------------------------------


def explore_step(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, int]:
    """explore's features hook: the next action towards the nearest unseen cell."""
    memory = memory_of(harness)
    action = _approach(memory, sorted(frontier(memory)), stand_on=False)
    if action is None:
        raise NoWay("explore: no unseen cell can be walked to through the remembered cells")
    return {"action": action}


def goto_step(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, int]:
    """goto's features hook: the next action towards the nearest remembered matching object."""
    memory = memory_of(harness)
    obj, color, at = _bound_args(args)
    targets = [c for c, code in memory.cells.items()
               if kind(code) == obj and (color is None or IDX_TO_COLOR[int(code[1])] == color)
               and (at is None or c == at)]
    if not targets:
        raise NoWay(f"goto: no {color or 'any-colour'} {obj} in the memory (explore first)")
    action = _approach(memory, sorted(targets), stand_on=obj == "goal")
    if action is None:
        raise NoWay(f"goto: no remembered walk reaches the {color or 'any-colour'} {obj}")
    return {"action": action}


def act(features: dict[str, int], args: dict[str, Any]) -> int:
    """Both skills' policy: the action their feature hook planned."""
    return features["action"]


def memory_skills() -> list[Skill]:
    color = {"choices": list(COLORS), "description": "colour of the object; omit for any colour"}
    policy = {"loader": f"{_MODULE}:act", "config": {}}
    cell = {"x": {"type": "int", "description": "column of the object's cell (where colours repeat); omit with y"},
            "y": {"type": "int", "description": "row of the object's cell (where colours repeat); omit with x"}}
    return [
        Skill(
            name="explore", kind="python", harnesses=MINIGRID,
            description="Walk to the nearest unseen cell (over the cells the agent has seen; observes the "
                        "agent's memory, not the grid) until an object of the given type (and colour) is "
                        "seen, or no unseen cell can be reached (a closed door is in the way).",
            parameters={"object": {"choices": list(OBJECT_TYPES), "description": "what to look for"},
                        "color": color},
            preconditions=["reachable(frontier)"],
            effects=["seen({object},{color})"],
            termination={"predicates": ["seen({object},{color})", "not reachable(frontier)"], "mode": "any"},
            features={"fn": f"{_MODULE}:explore_step"}, policy=policy, step_budget=256,
        ),
        Skill(
            name="goto", kind="python", harnesses=MINIGRID,
            description="Walk to an object the agent has seen, over the cells it has seen (a planned path; "
                        "observes the agent's memory, not the grid), until it faces the object (stands on "
                        "it, for the goal). A closed door stays closed (toggle or unlock it first).",
            # `object` required, as in the shipped goto: goto_step refuses a call without one, and
            # an optional one let the served schema accept `goto(color=C)` (issue 41's loops)
            parameters={"object": {"choices": list(OBJECT_TYPES), "description": "type of the object",
                                   "required": True},
                        "color": color, **cell},
            preconditions=["reachable({object},{color},{x},{y})"],
            effects=["facing({object},{color},{x},{y})", "at({object})"],
            termination={"check": "polar.skills.minigrid.goto:hook_done"},
            features={"fn": f"{_MODULE}:goto_step"}, policy=policy, step_budget=256,
        ),
    ]


def memory_pickup() -> Skill:
    """The primitive `pickup` with `object` required, as the memory `goto@2` requires it: optional,
    the served schema let a trained planner reply `pickup(color=yellow)`, whose effect any yellow
    object meets (the door on DoorKey), and a DAgger round sent only that form (issue 41). A call
    without an object is now refused by `Skill.bind` before any action reaches the world."""
    base = next(s for s in primitive_skills() if s.name == "pickup")
    params = dict(base.parameters)
    params["object"] = params["object"].model_copy(update={"required": True, "description": "type of the object"})
    return base.model_copy(update={"parameters": params})


def install_memory_skills(library: Library) -> list[Skill]:
    """Register the primitives (the memory's `pickup` in place of the shipped one) and the memory
    skills missing from `library` (or changed); returns those registered."""
    wanted = {s.name: s for s in primitive_skills()} | {s.name: s for s in [memory_pickup(), *memory_skills()]}
    current = {s.name: s for s in library.list()}
    added = []
    for name, s in wanted.items():
        have = current.get(name)
        if have is None or _definition(have) != _definition(s):
            added.append(library.register(s))
    return added


if __name__ == "__main__":  # python -m polar.domains.minigrid.memory [ROOT]: e.g. skills_memory
    lib = SkillLibrary(sys.argv[1]) if len(sys.argv) > 1 else open_library()
    for s in install_memory_skills(lib):
        print(f"registered {s.ref} in {lib.root}")
