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

from pydantic import Field, field_validator, model_validator

from polar.config import StrictModel, check_safe_name, read_mapping, validate
from polar.domains.registry import domain_backends, domain_planner, domain_planner_options
from polar.errors import ConfigError, PolarError
from polar.llm.settings import BudgetLimits, LLMSettings
from polar.planners.fit import ObservationMode
from polar.workspace import against_file, resolve_asset

if TYPE_CHECKING:
    from polar.planners.base import Planner
    from polar.prompts.templates import PromptTemplate

PlannerMode = Literal["plan", "skill", "code", "auto"]


class TemplateNames(StrictModel):
    """Template names (or paths to .j2 files) per message; `user: null` means planner_<mode>."""

    system: str = "planner_system"
    user: str | None = None


class _Named(StrictModel):
    @field_validator("name", check_fields=False)
    @classmethod
    def _safe_name(cls, v: str) -> str:
        return check_safe_name(v)


class LLMProfile(LLMSettings, _Named):
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
                                         "full, predicates (symbolic state only), view (the text view only) "
                                         "or memory (the agent's memory of what it has seen, docs/memory.md).")
    schema_reason: bool = Field(default=False, description="Let the decision schema hold a short reason "
                                                            "(more tokens to generate).")
    repeat_feedback_after: int = Field(
        default=3, ge=1, description="After this many identical decisions in a row that failed, the next "
                                     "prompt's feedback says so (the agent loop adds it).")
    noop_guard: bool = Field(
        default=False, description="Tell the planner when a skill call succeeded after 0 env steps with no "
                                   "fact changed (a no-op), and count identical no-ops in a row as repeated "
                                   "failures (the agent loop, polar.agent.noop).")
    noop_exclude: bool = Field(
        default=False, description="With noop_guard: a skill whose call did nothing is left out of the reply's "
                                   "schema until a fact changes (the history's trailing no-ops were called "
                                   "from the state the planner is in now; polar.planners.base.idle_skills). The "
                                   "prompt is unchanged; when every skill would be left out, none is.")
    explore_skills: float = Field(
        default=0.0, ge=0, le=1, description="Sampling for RL (`polar llm rl`'s `explore_skills`): the chance "
        "that a decision's skill is drawn uniformly from the skills on offer whose preconditions hold, the reply's "
        "schema narrowed to it (the model still writes its arguments; the call record says `forced_skill`). "
        "A skill the model never samples can then earn reward. 0: off, every decision the model's own.")
    # The agent loop's, not the model's: the same atoms as the symbolic planner's `interrupt` option,
    # so a model trained on that planner's decisions is consulted at the same moments (docs/crafter.md 6d).
    interrupt: list[str] = Field(
        default_factory=list, description="Atoms that stop a running skill call as soon as one becomes true "
                                          "(a threat in view, a vital low), so the planner decides again.")

    @model_validator(mode="after")
    def _exclude_needs_the_guard(self) -> LLMProfile:
        if self.noop_exclude and not self.noop_guard:
            raise ValueError("noop_exclude: true needs noop_guard: true (the guard marks the no-ops it leaves out)")
        return self

    @field_validator("interrupt")
    @classmethod
    def _interrupt_atoms(cls, v: list[str]) -> list[str]:
        for atom in v:
            if not isinstance(atom, str) or not atom.strip():
                raise ValueError(f"each entry must be a predicate string, got {atom!r}")
        return v


# Options of the generic offline planner: name -> (type, what it does). A domain's own offline
# planner (`backend: maze`) declares its options with it (`Domain.planner_options`), so a new
# world's planner needs no edit here.
OFFLINE_OPTIONS: dict[str, dict[str, tuple[type, str]]] = {
    "symbolic": {"max_repeats": (int, "give up when the same skill call fails this many times in a row"),
                 "memory": (bool, "plan from the agent's memory of what it has seen (docs/memory.md), not "
                                  "the harness's state; an object not yet seen is looked for first"),
                 "goals": (list, "open-ended ends pursued instead of the task's goal, e.g. an open world's "
                                 "achievements: each turn the first unmet one with a plan whose call has not "
                                 "failed max_repeats times in a row; finish when none is left. 'END when A "
                                 "and B' pursues END only while A and B hold"),
                 "interrupt": (list, "atoms that stop a running skill call as soon as one becomes true (a threat "
                                     "in view, health low), so the planner decides again; a skill whose effects "
                                     "name the atom is not stopped by it"),
                 "noop_guard": (bool, "a call that succeeds after 0 env steps with no fact changed is a no-op, "
                                      "counted as a failure for max_repeats (polar.agent.noop)")},
}


def offline_options(backend: str) -> dict[str, tuple[type, str]] | None:
    """The options an offline planner backend takes, or None for a backend nobody registers."""
    return OFFLINE_OPTIONS.get(backend) or domain_planner_options(backend)


def backends() -> tuple[str, ...]:
    """Every profile backend: the LLM planner, the symbolic planner, then the domains' planners."""
    return ("llm", *OFFLINE_OPTIONS, *domain_backends())


class SymbolicProfile(_Named):
    """An offline planner's profile; its options are read by polar.planners.symbolic (or, for
    `backend: maze`, by polar.domains.maze.planner)."""

    backend: str  # "symbolic", or a domain's own planner ("maze": polar.domains.maze)
    name: str = "symbolic"
    description: str = ""
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_options(self) -> SymbolicProfile:
        known = offline_options(self.backend)
        if known is None:  # reached only by building the model directly: load_planner_profile checks first
            raise ValueError(f"backend: expected one of {', '.join(backends()[1:])}, got {self.backend!r}")
        for key, value in self.options.items():
            if key not in known:
                raise ValueError(f"options.{key}: unknown option (known: {', '.join(known)})")
            kind = known[key][0]
            if kind is int and (type(value) is not int or value < 1):
                raise ValueError(f"options.{key}: must be an integer >= 1, got {value!r}")
            if kind is bool and type(value) is not bool:
                raise ValueError(f"options.{key}: must be true or false, got {value!r}")
            if kind is list and (type(value) is not list or not value
                                 or not all(type(v) is str and v.strip() for v in value)):
                raise ValueError(f"options.{key}: must be a non-empty list of predicate strings, got {value!r}")
            if kind is str and (type(value) is not str or not value):
                raise ValueError(f"options.{key}: must be a non-empty string, got {value!r}")
        return self


PlannerProfile = LLMProfile | SymbolicProfile


def resolve_templates(profile: LLMProfile) -> tuple[PromptTemplate, PromptTemplate]:
    """The profile's system and user templates, loaded and checked against its mode.
    Raises ConfigError naming the field (`templates.user: ...`)."""
    from polar.prompts.templates import load_template

    loaded = []
    for field, name in (("system", profile.templates.system),
                        ("user", profile.templates.user or f"planner_{profile.mode}")):
        try:
            loaded.append(load_template(name))
        except PolarError as err:
            raise ConfigError(f"templates.{field}: {err}") from None
    user = loaded[1]
    if user.mode not in (profile.mode, "any"):
        raise ConfigError(f"templates.user: template {user.name!r} is for mode {user.mode!r}, "
                          f"but profile {profile.name!r} has mode {profile.mode!r}")
    return loaded[0], loaded[1]


def resolve_profile_path(path_or_name: str | Path) -> Path:
    return resolve_asset("planners", path_or_name, what="planner profile")


def _paths_against(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The profile's template and model paths resolved against the profile's own folder (its
    `cache_dir` and `record_path` are where runs write, under the current workspace)."""
    templates = data.get("templates")
    if isinstance(templates, dict):
        data["templates"] = {k: against_file(v, path, f"templates.{k}", "template") for k, v in templates.items()}
    server = data.get("server")
    if isinstance(server, dict) and "model" in server:
        data["server"] = {**server, "model": against_file(server["model"], path, "server.model", "model")}
    return data


def read_profile(path_or_name: str | Path) -> tuple[Path, dict[str, Any]]:
    """A profile file found and parsed (its template and model paths made absolute), not yet
    validated: what `profile_from` validates, once or with several sets of overrides."""
    path = resolve_profile_path(path_or_name)
    return path, _paths_against(read_mapping(path), path)


def profile_from(path: Path, data: dict[str, Any], overrides: dict[str, Any] | None = None) -> PlannerProfile:
    """Validate a parsed profile (`read_profile`); `overrides` replace top-level keys first."""
    data = {**data, **(overrides or {})}
    backend = data.get("backend")
    if backend not in backends():
        raise ConfigError(f"{path}: backend: expected one of {', '.join(backends())}, got {backend!r}")
    data.setdefault("name", path.stem)
    profile = validate(LLMProfile if backend == "llm" else SymbolicProfile, data, str(path))
    if isinstance(profile, LLMProfile):
        try:
            resolve_templates(profile)  # a dangling template fails here, not at the first call
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
    return profile


def load_planner_profile(path_or_name: str | Path, overrides: dict[str, Any] | None = None) -> PlannerProfile:
    """Read and validate a profile; `overrides` replace top-level keys before validation."""
    return profile_from(*read_profile(path_or_name), overrides)


def load_planner(profile: str | Path | PlannerProfile, overrides: dict[str, Any] | None = None) -> Planner:
    """The planner a profile describes: a path or name (read and validated here, with
    `overrides`), or a profile a caller already resolved (built as it is)."""
    if isinstance(profile, str | Path):
        profile = load_planner_profile(profile, overrides)
    elif overrides:
        raise ConfigError("load_planner: overrides apply to a profile read here, not to a resolved one")
    if isinstance(profile, SymbolicProfile) and (planner := domain_planner(profile.backend)) is not None:
        return planner(profile)  # a domain's own planner (`backend: maze`)
    if isinstance(profile, SymbolicProfile):
        from polar.planners.symbolic import SymbolicPlanner  # the lead's module; imported lazily

        return SymbolicPlanner(profile)
    from polar.planners.llm import LLMPlanner

    return LLMPlanner(profile)
