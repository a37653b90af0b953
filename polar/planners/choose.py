"""Which planner runs a task when the user names none.

The symbolic planner runs when it understands the whole task: every clause (split at
commas, semicolons, "then" and "and") is a mission form it parses (go to / get to / reach X,
pick up X, open / unlock X, put X next to Y). Otherwise the local language model plans
(`planners/local.yaml`), e.g. "grab the key, unlock the door, then head for the green square":
"grab" and "head for" are not forms the symbolic planner knows.

On a harness that publishes a maze (`maze:` ids and maze YAMLs: `spec.extra["maze"]`) the
offline planner is the maze planner (`planners/maze.yaml`: a shortest path over the cells,
`reach` per waypoint), for the tasks it understands: "go to the goal" and "go to cell (r, c)".
"""

from __future__ import annotations

import re
from typing import Any

from polar.harnesses.maze_map import maze_from_spec
from polar.harnesses.missions import parse_mission
from polar.planners.maze import understands

SYMBOLIC, LOCAL_LLM, MAZE = "symbolic", "local", "maze"
_CLAUSES = re.compile(r"[,;]|\bthen\b|\band\b|\.")


def unparsed_clauses(task: str) -> list[str]:
    """The clauses of `task` that no mission form of the symbolic planner matches."""
    clauses = [c.strip() for c in _CLAUSES.split(task.lower())]
    return [c for c in clauses if c and not parse_mission(c)]


def default_planner(task: str, spec: Any = None) -> tuple[str, str]:
    """(profile name, why) for a task given without --planner, on the harness `spec` (None:
    any harness)."""
    if maze_from_spec(spec) is not None:
        if understands(task):
            return MAZE, "a maze harness: the maze planner (shortest path over the cells, reach per waypoint)"
        return LOCAL_LLM, (f"the maze planner understands 'go to the goal' and 'go to cell (r, c)', "
                           f"not {task!r}: the local language model plans")
    missing = unparsed_clauses(task)
    if not missing and parse_mission(task):
        return SYMBOLIC, "the symbolic planner parses every part of the task"
    quoted = ", ".join(repr(c) for c in missing) or repr(task)
    return LOCAL_LLM, f"the symbolic planner cannot parse {quoted}: the local language model plans"
