"""A planner profile's backend is the LLM planner, the symbolic planner, or one a domain
registers with its options (`Domain.planner_options`): PointMaze's `maze`."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.domains.maze import DOMAIN as MAZE
from polar.errors import ConfigError
from polar.planners.profile import backends, load_planner_profile, offline_options


def test_the_maze_backend_and_its_options_come_from_the_maze_domain(tmp_path: Path) -> None:
    assert backends() == ("llm", "symbolic", "maze")
    assert offline_options("maze") is MAZE.planner_options["maze"]
    assert offline_options("crafter-nope") is None
    profile = tmp_path / "m.yaml"
    profile.write_text("backend: maze\noptions: {lookahead: 3, skill: reach}\n")
    assert load_planner_profile(profile).options == {"lookahead": 3, "skill": "reach"}
    profile.write_text("backend: maze\noptions: {memory: true}\n")  # the symbolic planner's option, not the maze's
    with pytest.raises(ConfigError, match=r"options.memory: unknown option \(known: max_repeats, lookahead, skill\)"):
        load_planner_profile(profile)
    profile.write_text("backend: symbolic\noptions: {lookahead: 3}\n")
    with pytest.raises(ConfigError, match=r"options.lookahead: unknown option \(known: max_repeats, memory, goals, interrupt, noop_guard\)"):
        load_planner_profile(profile)
    profile.write_text("backend: maze\noptions: {lookahead: 0}\n")
    with pytest.raises(ConfigError, match=r"options.lookahead: must be an integer >= 1, got 0"):
        load_planner_profile(profile)
