"""MiniGrid primitives as skills: one harness action each, judged by its effect predicates.

They carry no weights. `install_primitives(library)` registers any that are missing or
whose definition changed (a new version), so running it twice changes nothing.
`python -m polar.skills.minigrid.primitives [ROOT]` does that for a library folder.
"""

from __future__ import annotations

import json
import sys

from polar.harnesses.missions import COLORS, PORTABLE
from polar.skills.model import Skill
from polar.skills.search_path import Library, open_library
from polar.skills.store import SkillLibrary

MINIGRID = ["minigrid:*"]


def primitive_skills() -> list[Skill]:
    color = {"choices": list(COLORS), "description": "colour of the object; omit for any colour"}
    return [
        Skill(
            name="pickup", kind="primitive", action="pickup", harnesses=MINIGRID,
            description="Pick up the object (key, ball or box) in the cell directly in front of "
                        "the agent. One action. The agent must face the object and carry nothing.",
            parameters={"object": {"choices": list(PORTABLE), "description": "type of the object; omit for any"},
                        "color": color},
            preconditions=["facing({object},{color})", "not carrying(any,any)"],
            effects=["carrying({object},{color})"],
            step_budget=1,
        ),
        Skill(
            name="drop", kind="primitive", action="drop", harnesses=MINIGRID,
            description="Drop the carried object onto the empty cell directly in front of the "
                        "agent. One action. The cell ahead must be empty.",
            parameters={"object": {"choices": list(PORTABLE), "description": "type of the carried object; omit for any"},
                        "color": color},
            preconditions=["carrying({object},{color})"],
            effects=["not carrying({object},{color})"],
            step_budget=1,
        ),
        Skill(
            name="toggle", kind="primitive", action="toggle", harnesses=MINIGRID,
            description="Open the door directly in front of the agent (toggle it). One action. "
                        "A locked door opens only while carrying a key of the same colour.",
            parameters={"color": {"choices": list(COLORS), "description": "colour of the door; omit for any"}},
            preconditions=["facing(door,{color})"],
            effects=["open(door,{color})"],
            step_budget=1,
        ),
        *(Skill(
            name=side, kind="primitive", action=side, harnesses=MINIGRID,
            description=f"Turn {side} by 90 degrees in place. One action; always succeeds. Used to "
                        "face a free cell before dropping something.",
            step_budget=1,
        ) for side in ("left", "right")),
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
