"""Planner profiles (`planners/*.yaml`): a strict model per backend and `load_planner`.

    backend: llm            # or symbolic, or maze
    model: openai/gpt-4o-mini
    mode: skill             # plan | skill | code | auto
    budgets: {max_calls: 40}

Unknown keys are errors naming the file and the field. A profile is found by path, or by
name in the `planners` asset folders (`load_planner("openai")` -> planners/openai.yaml).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from polar.config import StrictModel, read_yaml, validate
from polar.errors import ConfigError
from polar.llm.settings import BudgetLimits, LLMSettings
from polar.workspace import resolve_asset

if TYPE_CHECKING:
    from polar.planners.base import Planner

PlannerMode = Literal["plan", "skill", "code", "auto"]


class TemplateNames(StrictModel):
    """Template names (or paths to .j2 files) per message; `user: null` means planner_<mode>."""

    system: str = "planner_system"
    user: str | None = None


class LLMProfile(LLMSettings):
    backend: Literal["llm"] = "llm"
    name: str = "llm"
    description: str = ""
    mode: PlannerMode = "skill"
    templates: TemplateNames = TemplateNames()
    repair_rounds: int = Field(default=2, ge=0, le=5, description="Replies sent back with their validation error.")
    budgets: BudgetLimits = BudgetLimits()
    cache_dir: str | None = Field(default=".polar/llm-cache", description="Replay cache folder; null disables it.")
    record_path: str | None = Field(default=".polar/llm-calls.jsonl", description="JSONL call record; null disables it.")
    history_window: int = Field(default=12, ge=0, description="How many recent outcomes the prompt shows.")


class SymbolicProfile(StrictModel):
    """An offline planner's profile; its options are read by polar.planners.symbolic (or, for
    `backend: maze`, by polar.planners.maze)."""

    backend: Literal["symbolic", "maze"]
    name: str = "symbolic"
    description: str = ""
    options: dict[str, Any] = Field(default_factory=dict)


PlannerProfile = LLMProfile | SymbolicProfile
_BY_BACKEND: dict[str, type[LLMProfile] | type[SymbolicProfile]] = {
    "llm": LLMProfile, "symbolic": SymbolicProfile, "maze": SymbolicProfile}


def resolve_profile_path(path_or_name: str | Path) -> Path:
    return resolve_asset("planners", path_or_name, what="planner profile")


def load_planner_profile(path_or_name: str | Path, overrides: dict[str, Any] | None = None) -> PlannerProfile:
    """Read and validate a profile; `overrides` replace top-level keys before validation."""
    path = resolve_profile_path(path_or_name)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a planner profile must be a mapping of keys to values")
    data = {**data, **(overrides or {})}
    backend = data.get("backend")
    if backend not in _BY_BACKEND:
        raise ConfigError(f"{path}: backend: expected one of {', '.join(_BY_BACKEND)}, got {backend!r}")
    data.setdefault("name", path.stem)
    return validate(_BY_BACKEND[backend], data, str(path))


def load_planner(path_or_name: str | Path, overrides: dict[str, Any] | None = None) -> Planner:
    profile = load_planner_profile(path_or_name, overrides)
    if isinstance(profile, SymbolicProfile) and profile.backend == "maze":
        from polar.planners.maze import MazePlanner

        return MazePlanner(profile)
    if isinstance(profile, SymbolicProfile):
        from polar.planners.symbolic import SymbolicPlanner  # the lead's module; imported lazily

        return SymbolicPlanner(profile)
    from polar.planners.llm import LLMPlanner

    return LLMPlanner(profile)
