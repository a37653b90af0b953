"""Planner profiles (`planners/*.yaml`): a strict model per backend and `load_planner`.

    backend: llm            # or symbolic
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
from polar.planners.fit import ObservationMode
from polar.workspace import asset_dirs, find_asset

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
    history_window: int = Field(default=12, ge=0, description="How many recent outcomes the prompt shows "
                                                               "(fewer when the prompt would not fit the context).")
    observation: ObservationMode = Field(default="full", description="What the prompt shows of the state: "
                                         "full, predicates (symbolic state only) or view (the text view only).")
    schema_reason: bool = Field(default=False, description="Let the decision schema hold a short reason "
                                                            "(more tokens to generate).")


class SymbolicProfile(StrictModel):
    """The offline planner's profile; its options are read by polar.planners.symbolic."""

    backend: Literal["symbolic"]
    name: str = "symbolic"
    description: str = ""
    options: dict[str, Any] = Field(default_factory=dict)


PlannerProfile = LLMProfile | SymbolicProfile
_BY_BACKEND: dict[str, type[LLMProfile] | type[SymbolicProfile]] = {"llm": LLMProfile, "symbolic": SymbolicProfile}


def resolve_profile_path(path_or_name: str | Path) -> Path:
    p = Path(path_or_name)
    if p.is_file():
        return p
    name = str(path_or_name)
    found = find_asset("planners", name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
    if found is not None:
        return found
    known = sorted({q.stem for d in asset_dirs("planners") for q in d.glob("*.yaml")})
    raise ConfigError(f"planner profile {name!r} not found (a path, or one of: {', '.join(known) or 'none'})")


def load_profile(path_or_name: str | Path, overrides: dict[str, Any] | None = None) -> PlannerProfile:
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
    profile = load_profile(path_or_name, overrides)
    if isinstance(profile, SymbolicProfile):
        from polar.planners.symbolic import SymbolicPlanner  # the lead's module; imported lazily

        return SymbolicPlanner(profile)
    from polar.planners.llm import LLMPlanner

    return LLMPlanner(profile)
