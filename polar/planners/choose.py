"""Which planner runs a task when the user names none.

The symbolic planner runs when it understands the whole task: every clause (split at
commas, semicolons, "then" and "and") is a mission form it parses (go to / get to / reach X,
pick up X, open / unlock X, put X next to Y) and no word is left over
(the mission language's `unparsed_words`, polar.domains.registry.mission_language), or the task restates the goal the harness
itself carries (its symbolic state's `goal`: the task is the harness's mission, parses to the
same goal, or refers to "the mission"), e.g. "turn on the lamp" on a game whose mission it is.

Otherwise a language model plans: Polar's trained planner (`planners/polar-planner.yaml`,
SmolLM2-135M + the LoRA adapters shipped in `planners/models/polar-planner/`), e.g. for "grab
the key, unlock the door, then head for the green square". The base model
(`planners/local.yaml`, the same SmolLM2 untrained) plans only where the trained one cannot
run here (its adapters or base weights missing, or what merging them on first use needs), and
the reason says why.

A domain may choose first (its `choose_planner` hint, polar.domains.registry): on a harness that
publishes a maze (`maze:` ids and maze YAMLs: `spec.extra["maze"]`) the offline planner is the
maze planner (`planners/maze.yaml`: a shortest path over the cells, `reach` per waypoint), for
the tasks it understands: "go to the goal" and "go to cell (r, c)".
"""

from __future__ import annotations

import re
from typing import Any

from polar.domains.registry import domain_choices, mission_language
from polar.errors import ConfigError
from polar.planners.symbolic import restated_goal

SYMBOLIC, TRAINED, LOCAL_LLM, MAZE = "symbolic", "polar-planner", "local", "maze"
_CLAUSES = re.compile(r"[,;]|\bthen\b|\band\b|\.")


def unparsed_clauses(task: str) -> list[str]:
    """The clauses of `task` that no mission form of the symbolic planner matches."""
    clauses = [c.strip() for c in _CLAUSES.split(task.lower())]
    return [c for c in clauses if c and not mission_language().parse_mission(c)]


def trained_planner_problem(profile: str = TRAINED) -> str | None:
    """Why Polar's trained planner cannot run here, or None when it can: its profile, its
    model (a shipped one: every adapter's files, the base weights and, until the merged GGUF
    is in the cache, what merging needs; see polar.llm.adapters.unavailable)."""
    from pathlib import Path

    from polar.llm.adapters import unavailable
    from polar.llm.models import resolve_model
    from polar.planners.profile import LLMProfile, load_planner_profile

    try:
        p = load_planner_profile(profile)
        if not isinstance(p, LLMProfile) or p.server is None:
            return f"planners/{profile}.yaml names no local model"
        entry = resolve_model(p.server.model)
    except ConfigError as err:
        return str(err)
    if entry.source.startswith("shipped:"):
        return unavailable(entry)
    return None if Path(entry.path).exists() else f"its weights are missing: {entry.path}"


def language_model(why_not_offline: str) -> tuple[str, str]:
    """The trained planner, or the base model where the trained one cannot run (and why)."""
    problem = trained_planner_problem()
    if problem is None:
        return TRAINED, f"{why_not_offline}: Polar's trained planner plans"
    return LOCAL_LLM, (f"{why_not_offline}; Polar's trained planner cannot run here ({problem}): "
                       "the base language model plans")


def default_planner(task: str, spec: Any = None, state: Any = None) -> tuple[str, str]:
    """(profile name, why) for a task given without --planner, on the harness `spec` (None:
    any harness) whose symbolic state after reset is `state` (None: unknown or none)."""
    for choose in domain_choices():
        if (chosen := choose(task, spec)) is not None:  # (profile, why), or (None, why the LLM plans)
            profile, why = chosen
            return (profile, why) if profile is not None else language_model(why)
    if (why := restated_goal(task, state, spec)) is not None:
        return SYMBOLIC, f"{why}: the symbolic planner plans for its goal {', '.join(state.goal)}"
    missions = mission_language()
    words = missions.unparsed_words(task)
    if not words and missions.parse_mission(task):
        return SYMBOLIC, "the symbolic planner parses every part of the task"
    missing = unparsed_clauses(task) or ([" ".join(words)] if words else [task])
    return language_model(f"the symbolic planner cannot parse {', '.join(repr(c) for c in missing)}")
