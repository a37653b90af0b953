"""MiniGrid primitives as skills: one harness action each, judged by its effect predicates.

Their preconditions and effects are what the symbolic planner regresses over (see
`polar.planners.symbolic`).

They carry no weights. `install_primitives(library)` registers any that are missing or
whose definition changed (a new version), so running it twice changes nothing.
`python -m polar.domains.minigrid.primitives [ROOT]` does that for a library folder.
"""

from __future__ import annotations

import json
import sys

from polar.domains.minigrid.missions import COLORS, PORTABLE
from polar.skills.model import Skill
from polar.skills.search_path import Library, open_library
from polar.skills.store import SkillLibrary

MINIGRID = ["minigrid:*"]


def primitive_skills() -> list[Skill]:
    """The primitives with the preconditions and effects a planner regresses over. Preconditions
    are listed in the order to achieve them: first what is needed to get there, the cell ahead
    last (reaching the key would undo facing the door)."""
    color = {"choices": list(COLORS), "description": "colour of the object; omit for any colour"}
    cell = {"x": {"type": "int", "description": "column of the object's cell (where colours repeat); "
                                                "omit with y for any"},
            "y": {"type": "int", "description": "row of the object's cell (where colours repeat); "
                                                "omit with x for any"}}
    door = "door,{color},{x},{y}"
    return [
        Skill(
            name="pickup", kind="primitive", action="pickup", harnesses=MINIGRID,
            description="Pick up the object (key, ball or box) in the cell directly in front of "
                        "the agent. One action. The agent must face the object and carry nothing. "
                        "Picking up an object in the way clears the way.",
            parameters={"object": {"choices": list(PORTABLE), "description": "type of the object; omit for any"},
                        "color": color, **cell},
            preconditions=["reachable({object},{color},{x},{y})", "not carrying(any,any)",
                           "facing({object},{color},{x},{y})"],
            effects=["carrying({object},{color})", "not in_way({object},{color},{x},{y})"],
            step_budget=1,
        ),
        Skill(
            name="drop", kind="primitive", action="drop", harnesses=MINIGRID,
            description="Drop the carried object onto the empty cell directly in front of the "
                        "agent. One action. The cell ahead must be empty (front_clear); drop_cuts "
                        "names what an object dropped there would cut the agent off from "
                        "(front_free: nothing).",
            parameters={"object": {"choices": list(PORTABLE), "description": "type of the carried object; omit for any"},
                        "color": color},
            preconditions=["carrying({object},{color})", "front_clear"],
            effects=["not carrying({object},{color})"],
            step_budget=1,
        ),
        Skill(
            name="toggle", kind="primitive", action="toggle", harnesses=MINIGRID,
            description="Open the closed (not locked) door directly in front of the agent. One "
                        "action. For a locked door use unlock.",
            parameters={"color": {"choices": list(COLORS), "description": "colour of the door; omit for any"},
                        **cell},
            preconditions=[f"closed({door})", f"reachable({door})", f"facing({door})"],
            effects=[f"open({door})", f"not in_way({door})"],
            step_budget=1,
        ),
        Skill(
            name="unlock", kind="primitive", action="toggle", harnesses=MINIGRID,
            description="Unlock and open the locked door directly in front of the agent, carrying "
                        "the key of the door's colour. One action (MiniGrid's toggle).",
            parameters={"color": {"choices": list(COLORS), "description": "colour of the door (and key); omit for any"},
                        **cell},
            preconditions=[f"locked({door})", f"reachable({door})", "carrying(key,{color})", f"facing({door})"],
            effects=[f"open({door})", f"not in_way({door})"],
            step_budget=1,
        ),
        *(Skill(
            name=side, kind="primitive", action=side, harnesses=MINIGRID,
            description=f"Turn {side} by 90 degrees in place. One action; always succeeds. Used to "
                        "face a free cell before dropping something.",
            step_budget=1,
        ) for side in ("left", "right")),
        Skill(
            name="forward", kind="primitive", action="forward", harnesses=MINIGRID,
            description="Move one cell forward (the agent stays where it is when the cell ahead "
                        "is a wall, a closed door or an object). One action. Used to step aside, "
                        "e.g. to find a place to drop something.",
            step_budget=1,
        ),
    ]


def _definition(s: Skill) -> str:
    """A skill's definition without the fields registration or time sets."""
    data = s.model_dump(mode="json", exclude={"provenance", "version", "weights_sha256"})
    return json.dumps(data, sort_keys=True)


def install_primitives(library: Library) -> list[Skill]:
    """Register the primitives missing from `library` (or changed); returns those registered."""
    current = {s.name: s for s in library.list()}
    added = []
    for s in primitive_skills():
        have = current.get(s.name)
        if have is not None and _definition(have) == _definition(s):
            continue
        added.append(library.register(s))
    return added


if __name__ == "__main__":
    lib = SkillLibrary(sys.argv[1]) if len(sys.argv) > 1 else open_library()
    for s in install_primitives(lib):
        print(f"registered {s.ref} in {lib.root}")
