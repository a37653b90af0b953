"""A cell is one (agent, harness, seed) of a suite: the unit the runner prepares, plays,
persists to `<out>/cells/<agent>/<harness>/seed-<s>.json` and reuses on resume.

A persisted cell carries a key: a hash of the suite fields that decide its result, the
fingerprint of the files its agent's config only names (planner profile, prompt templates,
skill library and its hooks, training recipe, checkpoint) and the fingerprint of its harness
(the spec file and a connector game's sources, see `polar.harnesses.fingerprint`). A cell
whose key no longer matches is run again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from polar.episode import EpisodeRecord
from polar.evals.agents import EvalAgent, Information, Preparation, RandomAgent, sha
from polar.evals.code_agent import CodeAgent
from polar.evals.hrl_agent import HRLAgent
from polar.evals.planner_agent import PlannerAgent, PlannerProfiles
from polar.evals.rl_agent import PureRLAgent
from polar.evals.suite import Cell, PlannerAgentConfig, Suite, SuiteAgent
from polar.harnesses.fingerprint import harness_fingerprint

CELL_FORMAT = "polar.evals.cell/1"
AGENT_CLASSES: dict[str, type[EvalAgent]] = {c.kind: c for c in (RandomAgent, PlannerAgent, PureRLAgent, HRLAgent,
                                                                  CodeAgent)}


class CellResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = CELL_FORMAT
    cell: Cell
    key: str  # cell_key: a changed config or input file invalidates the cell
    agent_kind: str
    harness_id: str
    prep: Preparation
    episodes: list[EpisodeRecord]
    wall_s: float
    finished_at: str
    # The harness's spec says its reward marks success (HarnessSpec.reward_marks_success), so a
    # success with no return contradicts it; None: a cell from before this was recorded.
    reward_marks_success: bool | None = None


def make_agent(config: SuiteAgent, suite: Suite | None = None, profiles: PlannerProfiles | None = None) -> EvalAgent:
    """The agent of a cell; a planner agent gets its profile from the run's `profiles`
    (resolved once there), else reads it when it prepares."""
    if isinstance(config, PlannerAgentConfig) and profiles is not None:
        return PlannerAgent(config, suite, profiles(config))
    return AGENT_CLASSES[config.kind](config, suite)


def agent_information(config: SuiteAgent, profiles: PlannerProfiles | None = None) -> Information:
    """What the agent reads (declared, else its kind's default) and its role in words."""
    if isinstance(config, PlannerAgentConfig) and profiles is not None:
        return PlannerAgent.information(config, profiles(config))
    return AGENT_CLASSES[config.kind].information(config)


def inputs_fingerprint(config: SuiteAgent, profiles: PlannerProfiles | None = None) -> str:
    """The fingerprint of the files an agent config names (its kind's `inputs_fingerprint`)."""
    if isinstance(config, PlannerAgentConfig) and profiles is not None:
        return PlannerAgent.inputs_fingerprint(config, profiles(config))
    return AGENT_CLASSES[config.kind].inputs_fingerprint(config)


def cell_path(out_dir: Path, cell: Cell) -> Path:
    return out_dir / "cells" / f"{cell.slug}.json"


def cell_key(suite: Suite, cell: Cell, cache: dict[str, str] | None = None,
             profiles: PlannerProfiles | None = None) -> str:
    """Suite.cell_key plus the fingerprints of the files the agent and the harness point to
    (`cache` keeps them per agent and per harness within one pass over a suite; `profiles`,
    the run's planner profiles, resolved once)."""
    cache = {} if cache is None else cache
    config = suite.agent_for(cell)  # differs per seed (a model per seed) or harness (a recipe per family)
    agent, harness = f"agent:{config.model_dump_json()}", f"harness:{cell.harness}"
    if agent not in cache:
        fingerprint = inputs_fingerprint(config, profiles)
        if getattr(config, "multitask", False):  # one policy over every harness: they all decide each cell
            tasks = json.dumps([h.model_dump(mode="json") for h in suite.trained_on(config)], sort_keys=True)
            fingerprint = sha(f"{fingerprint}|{tasks}".encode())
        cache[agent] = fingerprint
    if harness not in cache:
        cache[harness] = harness_fingerprint(suite.harness(cell.harness).id)
    return suite.cell_key(cell, f"{cache[agent]}|{cache[harness]}", config)


def load_cell(out_dir: Path, suite: Suite, cell: Cell, key: str | None = None) -> CellResult | None:
    """The persisted result of a cell if it is complete and still matches the suite."""
    p = cell_path(out_dir, cell)
    if not p.is_file():
        return None
    try:
        res = CellResult.model_validate(json.loads(p.read_text()))
    except (ValueError, OSError):
        return None  # unreadable (e.g. written by another version): run it again
    if res.key != (key or cell_key(suite, cell)) or len(res.episodes) != suite.episodes_for(cell.agent):
        return None
    return res
