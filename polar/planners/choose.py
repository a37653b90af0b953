"""Which planner runs a task when the user names none.

The symbolic planner runs when it understands the whole task: every clause (split at
commas, semicolons, "then" and "and") is a mission form it parses (go to / get to / reach X,
pick up X, open / unlock X, put X next to Y). Otherwise the local language model plans
(`planners/local.yaml`), e.g. "grab the key, unlock the door, then head for the green square":
"grab" and "head for" are not forms the symbolic planner knows.
"""

from __future__ import annotations

import re

from polar.harnesses.missions import parse_mission

SYMBOLIC, LOCAL_LLM = "symbolic", "local"
_CLAUSES = re.compile(r"[,;]|\bthen\b|\band\b|\.")


def unparsed_clauses(task: str) -> list[str]:
    """The clauses of `task` that no mission form of the symbolic planner matches."""
    clauses = [c.strip() for c in _CLAUSES.split(task.lower())]
    return [c for c in clauses if c and not parse_mission(c)]


def default_planner(task: str) -> tuple[str, str]:
    """(profile name, why) for a task given without --planner."""
    missing = unparsed_clauses(task)
    if not missing and parse_mission(task):
        return SYMBOLIC, "the symbolic planner parses every part of the task"
    quoted = ", ".join(repr(c) for c in missing) or repr(task)
    return LOCAL_LLM, f"the symbolic planner cannot parse {quoted}: the local language model plans"
