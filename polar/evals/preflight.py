"""Everything a suite names is resolved before anything runs or is written.

`check_suite` resolves each reference of a suite: harness ids (and the specs they name),
planner profiles with their templates, prompt templates, skill libraries,
training recipes with the agent's overrides, and checkpoints (sandbox profiles are resolved when the suite loads). It starts no game process and
writes nothing; every problem found becomes one line `<suite file>: <field>: <what>` of one
ConfigError, so a user fixes them all in one go.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from polar.errors import ConfigError, PolarError
from polar.evals.planner_agent import PlannerProfiles
from polar.evals.suite import (
    CodeAgentConfig,
    HRLAgentConfig,
    PlannerAgentConfig,
    PureRLAgentConfig,
    Suite,
    SuiteHarness,
)
from polar.skills.catalog import SkillCatalog


def check_suite(suite: Suite, profiles: PlannerProfiles | None = None) -> None:
    """Raise ConfigError listing every reference of `suite` that does not resolve (`profiles`:
    the run's planner profiles; what is resolved here is what the cells use)."""
    from polar.harnesses.registry import check_harness_id

    problems: list[str] = []

    def check(field: str, fn: Callable[[], object]) -> bool:
        try:
            fn()
        except PolarError as err:
            problems.append(f"{field}: {err}")
            return False
        return True

    for i, entry in enumerate(suite.harnesses):
        check(f"harnesses.{i}.id", lambda entry=entry: check_harness_id(entry.id))
    for i, agent in enumerate(suite.agents):
        if isinstance(agent, PlannerAgentConfig):
            _check_planner_agent(agent, f"agents.{i}", check, PlannerProfiles() if profiles is None else profiles)
        elif isinstance(agent, PureRLAgentConfig):
            _check_rl_agent(agent, f"agents.{i}", suite, check)
        elif isinstance(agent, HRLAgentConfig):
            _check_hrl_agent(agent, f"agents.{i}", check)
        elif isinstance(agent, CodeAgentConfig):
            _check_code_agent(agent, f"agents.{i}", suite, check)
    if problems:
        raise ConfigError("\n".join(f"{suite.source}: {p}" for p in problems))


def _check_planner_agent(agent: PlannerAgentConfig, field: str,
                         check: Callable[[str, Callable[[], object]], bool], profiles: PlannerProfiles) -> None:
    from polar.prompts.templates import load_template
    from polar.skills.search_path import open_library

    if (check(f"{field}.planner", lambda: profiles(agent).as_written())
            and (agent.template is None or check(f"{field}.template", lambda: load_template(agent.template or "")))):
        check(f"{field}.overrides", lambda: profiles(agent).built())
        for seed in agent.seed_models or {}:
            check(f"{field}.seed_models.{seed}", lambda seed=seed: agent.for_seed(seed))
    if agent.skills is not None:
        root = Path(agent.skills).expanduser()
        if not root.is_dir():
            check(f"{field}.skills", lambda: _raise(f"{root}: no such skill library folder"))
        else:
            check(f"{field}.skills", lambda: open_library(root).list())


def _check_recipe(recipe: str, agent: str, field: str, check: Callable[[str, Callable[[], object]], bool]) -> bool:
    from polar.evals.training import load_recipe

    return check(field, lambda: load_recipe(recipe, agent))


def _check_rl_agent(agent: PureRLAgentConfig, field: str, suite: Suite,
                    check: Callable[[str, Callable[[], object]], bool]) -> None:
    from polar.evals.metrics import sweep_env_steps
    from polar.evals.rl_agent import multitask_config, train_config
    from polar.evals.training import deep_merge

    ok = agent.recipe is None or _check_recipe(agent.recipe, agent.name, f"{field}.recipe", check)
    labels = {e.label for e in suite.harnesses}
    for label, recipe in agent.recipes.items():
        if label not in labels:
            check(f"{field}.recipes.{label}", lambda label=label: _raise(
                f"no harness of the suite is labelled {label!r} (labels: {', '.join(sorted(labels))})"))
            ok = False
        ok = _check_recipe(recipe, agent.name, f"{field}.recipes.{label}", check) and ok
    for file, tuned in agent.tuned_by.items():
        unknown = sorted(set(tuned) - labels)
        if unknown:
            check(f"{field}.tuned_by.{file}", lambda unknown=unknown: _raise(
                f"no harness of the suite is labelled {', '.join(map(repr, unknown))} "
                f"(labels: {', '.join(sorted(labels))})"))
        check(f"{field}.tuned_by.{file}", lambda file=file: sweep_env_steps(str(suite.path_of(file)), agent.name))
    if not ok:
        return
    if agent.checkpoint is not None:
        run = Path(agent.checkpoint).expanduser()
        if not run.is_dir():
            check(f"{field}.checkpoint", lambda: _raise(f"{run}: no such run folder"))
        return
    if agent.sweep is not None:  # every grid point over the overrides, before any trial trains
        entry = SuiteHarness(id=agent.sweep.harness) if agent.sweep.harness else suite.harnesses[0]
        for k, point in enumerate(agent.sweep.points()):
            check(f"{field}.sweep.grid (point {k}: {point})", lambda point=point: train_config(
                agent, entry, agent.sweep.seed, Path("."), deep_merge(dict(agent.overrides), point)))
    if agent.multitask:
        check(f"{field}.overrides", lambda: multitask_config(agent, suite.trained_on(agent), suite.seeds[0], Path(".")))
        return
    for entry in suite.harnesses_of(agent):  # the recipe, the overrides and what each cell fixes
        if not check(f"{field}.overrides",
                     lambda entry=entry: train_config(agent, entry, suite.seeds[0], Path("."))):
            return


def _check_hrl_agent(agent: HRLAgentConfig, field: str, check: Callable[[str, Callable[[], object]], bool]) -> None:
    from polar.evals.hrl_agent import skill_library

    if agent.recipe is not None:
        _check_recipe(agent.recipe, agent.name, f"{field}.recipe", check)
    opened: list[SkillCatalog] = []  # the library, once it opens
    if check(f"{field}.skills", lambda: opened.append(skill_library(agent))) and agent.options is not None:
        for k, opt in enumerate(agent.options):
            check(f"{field}.options.{k}", lambda opt=opt: opened[0].get(opt.skill).bind(opt.args))


def _raise(message: str) -> None:
    raise ConfigError(message)


def _check_code_agent(agent: CodeAgentConfig, field: str, suite: Suite,
                      check: Callable[[str, Callable[[], object]], bool]) -> None:
    from polar.evals.code_tasks import get_task
    from polar.llm.models import resolve_model

    check(f"{field}.model", lambda: resolve_model(agent.model))
    for h in suite.harnesses_of(agent):
        check(f"{field}.tasks", lambda h=h: get_task(agent.task_for(h.label)))
