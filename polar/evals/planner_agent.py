"""The planner agent: a planner profile over the skill library, run by the agent loop
(`polar.agent.Agent`), optionally executing policy code in a sandbox.

Its training cost is the pretraining of the skills it can call on the harness: every skill in
the library it would be offered there (`Skill.usable_on`: the skill accepts the harness's id
and fits its observation and action spaces) is charged its provenance env steps, once per
agent (charge key `skill:<name>@<version>`), however many cells and episodes use it. A skill
it could not call there (a CartPole policy on a grid game) costs that cell nothing. A model Polar
trained is charged the env steps that made its training data (`provenance.env_steps` of the
shipped or registered model: the teacher's episodes and the sampling rounds), once, as
training on the tasks (charge key `model:<name>`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polar.agent import Agent, AgentSettings
from polar.episode import EpisodeRecord
from polar.errors import ConfigError, PolarError
from polar.evals.agents import EvalAgent, Information, Preparation, sha
from polar.evals.suite import PlannerAgentConfig, SuiteHarness
from polar.harnesses.base import Harness, HarnessSpec
from polar.planners.profile import (
    LLMProfile,
    PlannerProfile,
    load_planner,
    profile_from,
    read_profile,
    resolve_profile_path,
    resolve_templates,
)
from polar.skills.catalog import SkillCatalog
from polar.skills.search_path import open_library


def profile_overrides(cfg: PlannerAgentConfig, backend: str) -> dict[str, Any]:
    """Suite fields that change the profile: the template variant and the LLM budgets."""
    over: dict[str, Any] = dict(cfg.overrides)
    if backend != "llm":
        if cfg.template is not None:
            raise ConfigError(f"agent {cfg.name}: template: the {backend} planner uses no prompt template")
        return over
    if cfg.template is not None:
        over["templates"] = {**over.get("templates", {}), "user": cfg.template}
    b = cfg.budget
    limits = {k: v for k, v in {"max_calls": b.llm_calls, "max_tokens": b.tokens,
                                 "max_cost_usd": b.usd}.items() if v is not None}
    if limits:
        over["budgets"] = {**over.get("budgets", {}), **limits}
    return over


@dataclass(frozen=True)
class ResolvedProfile:
    """A planner agent's profile, read once and handed to everything a cell asks of it: its
    key (`inputs_fingerprint`), its information label and its preparation. `base` is the file
    as written (what the agent is: backend, mode, options); `profile` is it with the suite's
    overrides (what the planner is built from). Where one does not validate it is None and
    `error` says why: the cell key still has to differ, and preparing raises that error."""

    path: Path
    digest: str  # of the file's bytes
    base: PlannerProfile | None
    profile: PlannerProfile | None
    error: PolarError | None = None

    def built(self) -> PlannerProfile:
        """The profile with the suite's overrides; raises what stopped it from validating."""
        if self.profile is None:
            raise self.error or ConfigError(f"{self.path}: the profile did not validate")
        return self.profile

    def as_written(self) -> PlannerProfile:
        if self.base is None:
            raise self.error or ConfigError(f"{self.path}: the profile did not validate")
        return self.base


def resolve_profile(config: PlannerAgentConfig) -> ResolvedProfile:
    """Read `config.planner` once and validate it as written and with the suite's overrides.
    Raises only when the profile cannot be found."""
    path = resolve_profile_path(config.planner)
    digest = sha(path.read_bytes())
    try:
        path, data = read_profile(path)
        base = profile_from(path, data)
    except PolarError as err:
        return ResolvedProfile(path, digest, None, None, err)
    try:
        return ResolvedProfile(path, digest, base, profile_from(path, data, profile_overrides(config, base.backend) or None))
    except PolarError as err:
        return ResolvedProfile(path, digest, base, None, err)


@dataclass
class PlannerProfiles:
    """The planner profiles of one run (`polar compare`), each resolved once and passed down
    to the cells, their keys, the preflight check and the report. Two configs that differ only
    in what the profile does not read (seeds, sandbox, episode count) share one resolution."""

    resolved: dict[str, ResolvedProfile] = field(default_factory=dict)

    def __call__(self, config: PlannerAgentConfig) -> ResolvedProfile:
        key = config.model_dump_json(include={"planner", "overrides", "template", "budget"})
        if key not in self.resolved:
            self.resolved[key] = resolve_profile(config)
        return self.resolved[key]


def skill_charges(library: SkillCatalog, harness: HarnessSpec) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Pretraining env steps of the library's skills an agent could call on this harness:
    those the agent loop offers there (`Skill.usable_on`, the rule of `polar.skills.search`).
    Skills with the same weights were trained once and are charged once."""
    charges: dict[str, int] = {}
    listing = []
    charged: dict[str, str] = {}  # weights hash -> the skill charged for them
    for s in library.list():
        if not s.usable_on(harness):
            continue
        steps = int(s.provenance.env_steps or 0)
        if s.kind == "policy" and s.provenance.env_steps is None:
            # A trained skill without its training cost on record cannot be charged honestly.
            raise ConfigError(f"skill {s.ref}: provenance.env_steps is missing, so its pretraining "
                              "cannot be charged; re-register it with its training run")
        if s.weights_sha256 and s.weights_sha256 in charged:
            # One goal-conditioned policy registered as several skills (Crafter's collect_*):
            # its training is paid once.
            listing.append({"skill": s.ref, "kind": s.kind, "env_steps": 0, "trained_on": list(s.provenance.trained_on),
                            "shares_weights_with": charged[s.weights_sha256]})
            continue
        if s.weights_sha256:
            charged[s.weights_sha256] = s.ref
        charges[f"skill:{s.ref}"] = steps
        listing.append({"skill": s.ref, "kind": s.kind, "env_steps": steps,
                        "trained_on": list(s.provenance.trained_on)})
    return charges, listing


def harness_spec(entry: SuiteHarness) -> HarnessSpec:
    """The spec of a suite's harness (made with its kwargs, then closed): the id and spaces
    that decide which skills an agent is offered on it."""
    harness = entry.make()
    try:
        return harness.spec
    finally:
        harness.close()


def model_charges(model: str) -> dict[str, int]:
    """The env steps a trained model's data cost (`provenance.env_steps`), or nothing for a
    model Polar did not train."""
    from polar.llm.models import resolve_model

    entry = resolve_model(model)
    steps = entry.provenance.get("env_steps")
    return {} if steps is None else {f"model:{entry.name}@{entry.version}": int(steps)}


def _weights_fingerprint(model: str) -> list[str]:
    """A trained model's weights enter the key (a shipped adapter's path holds its content
    digest; a registered model's, its version); a built-in model is fixed by its package.
    A path inside Polar's cache is named relative to it: where the cache lives (a user's home,
    a test run's own folder) must not re-key finished cells."""
    from polar.llm.models import cache_dir, resolve_model

    entry = resolve_model(model)
    if entry.source.startswith("builtin:"):
        return []
    path = Path(entry.path)
    if path.is_relative_to(cache_dir()):
        return [f"model:<cache>/{path.relative_to(cache_dir()).as_posix()}"]
    return [f"model:{entry.path}"]


class PlannerAgent(EvalAgent):
    kind = "planner"
    config: PlannerAgentConfig

    def __init__(self, config: PlannerAgentConfig, suite: Any = None, profile: ResolvedProfile | None = None) -> None:
        super().__init__(config, suite)
        self.resolved = profile  # resolved by the run; None: read in prepare
        self.planner: Any = None
        self.library: SkillCatalog | None = None

    @property
    def label(self) -> str:
        return f"planner:{getattr(self.planner, 'name', self.config.planner)}"

    @classmethod
    def information(cls, config: PlannerAgentConfig,  # type: ignore[override]
                    profile_of: ResolvedProfile | None = None) -> Information:
        """A hand-written planner (symbolic, maze) is domain logic over the full state:
        privileged, a scripted reference; with `memory: true` it reads only the agent's memory of
        its own view: view. An LLM planner reads the state it is shown and calls skills that
        read the full grid: full, unless declared otherwise; with `observation: memory` it reads
        the memory's predicates and its skills the memory: view."""
        profile = (profile_of or resolve_profile(config)).as_written()
        backend = profile.backend
        if getattr(profile, "options", {}).get("memory"):  # hand-written, but over its own memory only
            if config.observes not in (None, "view"):
                raise ConfigError(f"agent {config.name}: observes: the {backend} planner with memory reads the "
                                  f"agent's own view (and pose) through its memory: view, not {config.observes!r}")
            return Information("view", "view", f"scripted {backend} planner over its own memory "
                                               "(the 7x7 view and the agent's pose; docs/memory.md)")
        if backend != "llm":
            if config.observes not in (None, "privileged"):
                raise ConfigError(f"agent {config.name}: observes: the {backend} planner is hand-written "
                                  f"domain logic, so it is privileged, not {config.observes!r}")
            return Information("privileged", "privileged",
                               f"scripted reference ({backend} planner: privileged, an upper bound)")
        if getattr(profile, "observation", None) == "memory":
            # its prompts are the memory's predicates and its skills must read the memory (the agent
            # loop refuses them the grid): what it observes is its own view and pose
            if config.observes not in (None, "view"):
                raise ConfigError(f"agent {config.name}: observes: an LLM planner with observation: memory reads "
                                  f"the agent's own view (and pose) through its memory: view, not {config.observes!r}")
            observes = "view"
        else:
            observes = config.observes or "full"
        role = "LLM planner over the skills" + (", a trained model per seed" if config.seed_models else "")
        return Information(observes, config.decides_from or observes, role)

    @classmethod
    def inputs_fingerprint(cls, config: PlannerAgentConfig,  # type: ignore[override]
                           profile_of: ResolvedProfile | None = None) -> str:
        """The planner profile, the prompt templates it renders (with the suite's template
        variant) by content, and the skill library's contents (every layer of the search path:
        manifests, weights, recorded evaluations, hook files)."""
        resolved = profile_of or resolve_profile(config)
        parts = [resolved.digest]
        try:
            profile = resolved.built()
            if isinstance(profile, LLMProfile):
                parts += [f"{t.name}:{t.version}" for t in resolve_templates(profile)]
                if profile.server is not None:
                    parts += _weights_fingerprint(profile.server.model)
        except PolarError as err:  # preflight reports it; the key only has to differ
            parts.append(f"profile-error:{type(err).__name__}:{err}")
        try:
            parts.append(open_library(config.skills).fingerprint())
        except PolarError as err:  # no library yet: the agent itself will report it
            parts.append(f"no-library:{type(err).__name__}")
        return sha("|".join(parts).encode())

    def prepare(self, entry: SuiteHarness, seed: int, work_dir: Path) -> Preparation:
        cfg = self.config
        resolved = self.resolved or resolve_profile(cfg)
        planner_profile = resolved.as_written()
        backend = planner_profile.backend
        if cfg.sandbox is None and getattr(planner_profile, "mode", None) == "code":
            raise ConfigError(f"agent {cfg.name}: sandbox: none, but planner {cfg.planner!r} only "
                              "writes policy code (mode: code); name a sandbox profile")
        self.planner = load_planner(resolved.built())
        planner_profile = getattr(self.planner, "profile", planner_profile)  # the model it serves (a seed's own)
        root = Path(cfg.skills).expanduser() if cfg.skills else None
        if root is not None and not root.exists():
            raise ConfigError(f"agent {cfg.name}: skills: {root} does not exist")
        self.library = open_library(root)
        charges, listing = skill_charges(self.library, harness_spec(entry))
        if isinstance(planner_profile, LLMProfile) and planner_profile.server is not None:
            charges.update(model_charges(planner_profile.server.model))
        return Preparation(train_env_steps=sum(charges.values()),
                           info={"charges": charges, "skills": listing, "library": str(self.library.root),
                                 "backend": backend})

    def use_slot(self, slot: int | None) -> None:
        client = getattr(self.planner, "client", None)  # an LLM planner's; a scripted one has none
        if client is not None:
            client.slot = slot

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        cfg = self.config
        caps = [c for c in (max_steps, cfg.budget.env_steps) if c is not None]
        settings = AgentSettings(
            max_env_steps=min(caps) if caps else None,
            sandbox=cfg.sandbox,  # resolved when the suite loaded; None refuses policy code
            record_steps=False,  # a suite holds thousands of episodes; decisions suffice
            record_context=cfg.record_context,
        )
        if cfg.budget.decisions is not None:
            settings.max_decisions = cfg.budget.decisions
        if cfg.skills_shown is not None:
            settings.skills_shown = cfg.skills_shown
        # Skills that sample their actions (`deterministic: false`) draw from torch's global
        # generator: seeded by the episode, a cell's episodes repeat exactly (as rl_agent's do).
        import torch

        torch.manual_seed(env_seed)
        return Agent(self.planner, self.library, settings, agent_name=self.label).run(task, harness, seed=env_seed)
