"""Eval suites: agents x harnesses x seeds x episodes, as one strict YAML file.

A *cell* is one (agent, harness, seed): the unit the runner trains (pure RL), runs, persists
and skips on resume. Every episode of a cell is seeded from the suite's `eval_seed`, the
cell's seed and the episode index, so all agents face the same start states.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from polar.config import SAFE_NAME, StrictModel, check_safe_name, read_mapping, validate
from polar.errors import ConfigError
from polar.sandboxes.profiles import SandboxProfile, resolve_sandbox
from polar.workspace import PathKind, against_file, resolve_asset

if TYPE_CHECKING:
    from polar.harnesses.base import Harness


class EpisodeBudget(StrictModel):
    """Per-episode limits for planner agents (None: no limit beyond the harness's own)."""

    llm_calls: int | None = Field(None, ge=1)
    tokens: int | None = Field(None, ge=1)
    usd: float | None = Field(None, gt=0)
    env_steps: int | None = Field(None, ge=1)
    decisions: int | None = Field(None, ge=1)


# What an agent reads, lowest first: `none` (nothing: random play), `view` (the harness's own
# observation, e.g. MiniGrid's 7x7 egocentric view), `full` (the whole grid / symbolic state),
# `privileged` (hand-written domain logic on top of the full state: the symbolic planner).
Information = Literal["none", "view", "full", "privileged"]
INFORMATION_ORDER: tuple[str, ...] = ("none", "view", "full", "privileged")


class _Agent(StrictModel):
    # Fields that label a cell without changing what it computes: left out of cell keys.
    LABELS: ClassVar[tuple[str, ...]] = ("observes", "decides_from")

    name: str = Field(pattern=SAFE_NAME)
    # a subset of the suite's seeds for this agent (e.g. fewer for costly training); None: all
    seeds: list[int] | None = None
    # fewer (or more) evaluation episodes per cell than the suite's, e.g. for a slow LLM arm;
    # None: the suite's `episodes`. Episode i of seed s is the same game for every agent.
    episodes: int | None = Field(None, ge=1)
    # What the agent as a whole reads, its skills included (None: its kind's default, see
    # docs/evals.md), and what its decision maker (policy, controller, planner) reads itself.
    observes: Information | None = None
    decides_from: Information | None = None
    # the suite's harnesses this agent plays (labels or ids; None: all): its cells on the others
    # are not planned, e.g. an RL algorithm that fits some tasks only. Picks cells, not in keys.
    harnesses: list[str] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _decides_within(self) -> _Agent:
        if (self.observes is not None and self.decides_from is not None
                and INFORMATION_ORDER.index(self.decides_from) > INFORMATION_ORDER.index(self.observes)):
            raise ValueError(f"decides_from: {self.decides_from!r} is more than the agent observes "
                             f"({self.observes!r}); observes covers everything the agent reads")
        return self


class RandomAgentConfig(_Agent):
    """Uniformly random actions from the harness's action space: the floor any agent must beat."""

    kind: Literal["random"] = "random"

    @field_validator("observes")
    @classmethod
    def _reads_nothing(cls, v: str | None) -> str | None:
        if v not in (None, "none"):
            raise ValueError(f"a random agent reads nothing: observes must be none, got {v!r}")
        return v


class _Trained(_Agent):
    """Fields shared by the agents that train a policy per cell (pure RL, the HRL controller)."""

    recipe: str | None = None  # a TrainConfig YAML whose hyperparameters to use
    overrides: dict = Field(default_factory=dict)  # TrainConfig fields on top of the recipe
    eval_every: int = Field(0, ge=0)  # env steps between learning-curve points; 0: end only
    curve_episodes: int = Field(10, ge=1)  # episodes per learning-curve point
    # Sample actions from the trained policy (false) or take the argmax (true). Sampling is
    # the policy PPO optimised; a greedy MiniGrid policy can loop where the sampler succeeds.
    deterministic: bool = False


class SweepConfig(StrictModel):
    """A grid search over TrainConfig fields, run before the agent's cells train
    (`polar.evals.sweep`): the best point's values train every cell of the agent."""

    grid: dict[str, list[Any]]  # dotted TrainConfig field -> the values to try
    steps: int = Field(ge=1)  # env steps of each trial
    harness: str | None = None  # the family's harness every cell uses the result on; None: each cell's own
    seed: int = Field(900_000, ge=0)  # each trial's training seed (not a cell seed)
    episodes: int = Field(20, ge=1)  # scoring episodes per trial

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        if not v:
            raise ValueError("grid: name at least one TrainConfig field and its values")
        for key, values in v.items():
            if not values:
                raise ValueError(f"grid.{key}: give at least one value")
            if key.split(".")[0] in ("steps", "seed", "harness", "out", "algo"):
                raise ValueError(f"grid.{key}: the cell fixes this field; sweep hyper-parameters only")
        return v

    def points(self) -> list[dict[str, Any]]:
        """Every grid point as nested TrainConfig overrides, in grid order."""
        keys = list(self.grid)
        return [nested(dict(zip(keys, values, strict=True))) for values in itertools.product(*self.grid.values())]


def nested(dotted: dict[str, Any]) -> dict[str, Any]:
    """{"ppo.learning_rate": 1e-3} -> {"ppo": {"learning_rate": 1e-3}}."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


class PureRLAgentConfig(_Trained):
    """A policy trained by the RL engine on the harness (per cell seed), or a given checkpoint.

    `observes: full` trains and evaluates on the harness's full-observation variant (MiniGrid:
    the whole grid, `full_grid: true`), `view` (the default) on its own observation."""

    # `observes` picks the observation; `tuned_by` only adds to the ledger
    LABELS: ClassVar[tuple[str, ...]] = ("decides_from", "tuned_by")

    kind: Literal["pure_rl"] = "pure_rl"
    algo: str = "ppo"  # a registered RL algorithm (polar.rl.registry)
    train_steps: int | None = Field(None, ge=1)  # env steps of training per (harness, seed)
    recipes: dict[str, str] = Field(default_factory=dict)  # harness label -> recipe (tuned per family)
    checkpoint: str | None = None  # evaluate this run dir instead of training
    # One policy per seed trained on all of this suite's harnesses (train_steps in total),
    # evaluated on each; false: one policy per harness and seed.
    multitask: bool = False
    # With multitask: the labels of the harnesses it trains on (None: all of them); the others
    # evaluate that policy on a task it never trained on.
    tasks: list[str] | None = Field(None, min_length=1)
    # Train once per harness with this seed and evaluate that policy on every cell seed (its
    # episodes differ per seed), instead of one training run per cell seed: for baselines
    # whose training is the costly part. The ledger charges that one run once.
    train_seed: int | None = Field(None, ge=0)
    # A hyper-parameter grid trained and scored before the cells train; its best point is
    # merged over `overrides` and its env steps are charged to this agent as tuning.
    sweep: SweepConfig | None = None
    # Sweeps run outside this suite that chose the recipes' values: a sweep's score file (the
    # `best.json` a `sweep:` writes, with every trial's env steps) -> the harness labels whose
    # cells use its result. The ledger charges those trials as tuning, to these harnesses' rows
    # and once to the agent's total; the cells' results do not depend on it.
    tuned_by: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("algo")
    @classmethod
    def _known_algo(cls, v: str) -> str:
        from polar.rl.registry import known_algo

        return known_algo(v)

    def for_harness(self, label: str) -> PureRLAgentConfig:
        """This agent as one harness's cells run it: `recipes` resolved to the harness's recipe,
        so that a cell's key holds the recipe it trains with, not the other families' (a
        retuned family re-runs its own cells only). Multitask training and a family sweep
        read the other harnesses' recipes, so they keep the whole map."""
        if not self.recipes or self.multitask or (self.sweep is not None and self.sweep.harness is not None):
            return self
        return self.model_copy(update={"recipe": self.recipes.get(label, self.recipe), "recipes": {}})

    @model_validator(mode="after")
    def _one_source(self) -> PureRLAgentConfig:
        if (self.train_steps is None) == (self.checkpoint is None):
            raise ValueError("give exactly one of train_steps (train on the harness) or checkpoint (a run dir)")
        if self.observes not in (None, "view", "full"):
            raise ValueError(f"observes: pure RL reads the harness's observation, view or full; got {self.observes!r}")
        if self.multitask and self.checkpoint is not None:
            raise ValueError("multitask: trains one policy over the suite's harnesses; not with checkpoint")
        if self.train_seed is not None and (self.checkpoint is not None or self.multitask):
            raise ValueError("train_seed applies to training one policy per harness (train_steps), "
                             "not to a given checkpoint or multitask")
        if self.sweep is not None and self.checkpoint is not None:
            raise ValueError("sweep: tunes the training of this agent; a checkpoint is not trained")
        if self.tasks is not None and not self.multitask:
            raise ValueError("tasks: names the harnesses a multitask agent trains on; set multitask: true")
        if self.sweep is not None and self.multitask and self.sweep.harness is None:
            raise ValueError("sweep.harness: a multitask agent's sweep needs the harness it tunes on")
        return self


class OptionSpec(StrictModel):
    """One option of the HRL controller: a skill call from the library."""

    skill: str  # skill name (or name@version)
    args: dict = Field(default_factory=dict)


class HRLAgentConfig(_Trained):
    """PPO whose actions are skill calls (options) from the library: the RL controller over the
    same skills a planner uses, trained with the harness's reward (`polar.skills.options`).

    `train_steps` counts controller decisions; the ledger charges every primitive env step
    the options took while training, plus the skills' pretraining."""

    LABELS: ClassVar[tuple[str, ...]] = ("observes", "decides_from")

    kind: Literal["hrl"] = "hrl"
    train_steps: int = Field(ge=1)  # controller decisions (option calls) of training per cell
    skills: str | None = None  # skill library dir; None: the default library
    options: list[OptionSpec] | None = None  # None: derived from the harness (goto per object, primitives)
    controller: Literal["view", "full"] = "view"  # what the controller's policy observes
    max_options: int = Field(64, ge=1)  # option calls per episode before it is cut
    option_steps: int | None = Field(None, ge=1)  # cap on each option's step budget (None: the skill's)
    # true: the options run over the agent's memory (polar.agent.memory_options, docs/memory.md);
    # None (unset) keeps the keys of the cells committed before the field existed
    memory: bool | None = None

    @model_validator(mode="after")
    def _labels(self) -> HRLAgentConfig:
        if self.memory and self.controller != "view":
            raise ValueError("controller: over the agent's memory (memory: true) the controller observes its own "
                             f"view (view), not {self.controller!r}")
        if self.decides_from not in (None, self.controller):
            raise ValueError(f"decides_from: the controller observes {self.controller!r} (controller:); "
                             f"got {self.decides_from!r}")
        return self


class SeedModel(StrictModel):
    """The model one training seed's cells of a planner agent are served (`seed_models`)."""

    model: str = Field(description="A model name (`polar llm models`), name@version or a path.")
    port: int = Field(ge=1, le=65535, description="Its own server's port: one model per server.")


class PlannerAgentConfig(_Agent):
    """A planner profile over the skill library (optionally running policy code in a sandbox)."""

    kind: Literal["planner"] = "planner"
    planner: str  # profile name (planners/<name>.yaml) or path
    skills: str | None = None  # skill library dir; None: the default library
    # The sandbox profile policy code runs under: a name under sandboxes/profiles/, a YAML
    # path, or none (policy code refused); resolved when the suite loads, so the resolved
    # limits are part of the agent's config (and of its cells' keys).
    sandbox: SandboxProfile | None = Field("default", validate_default=True)
    template: str | None = None  # user prompt template override (LLM planners)
    overrides: dict = Field(default_factory=dict)  # planner profile keys to replace
    budget: EpisodeBudget = Field(default_factory=EpisodeBudget)
    # keep each decision's planner context in the records (`polar llm dataset` renders them)
    record_context: bool = False
    # A planner trained once per training seed: seed -> the model that seed's cells are served,
    # each on its own server port. A seed not listed uses the profile's model (None: all do).
    seed_models: dict[int, SeedModel] | None = None
    # How many of the library's skills each decision is offered (the best matches of the task;
    # None: the agent's default, 12). A world whose tech tree spans more skills offers them all.
    skills_shown: int | None = Field(None, ge=1)

    def for_seed(self, seed: int) -> PlannerAgentConfig:
        """This agent as one seed's cells run it: the seed's model in its profile overrides."""
        choice = (self.seed_models or {}).get(seed)
        if choice is None:
            return self.model_copy(update={"seed_models": None})
        from polar.llm.serve import resolve, served_name
        from polar.planners.profile import load_planner_profile

        server = getattr(load_planner_profile(self.planner, self.overrides or None), "server", None)
        if server is None:
            raise ConfigError(f"agent {self.name}: seed_models: planner {self.planner!r} serves no local "
                              "model (its profile has no server: block)")
        server = server.model_copy(update={"model": choice.model, "port": choice.port})
        overrides = {**self.overrides, "server": server.model_dump(mode="json"),
                     "model": f"openai/{served_name(*resolve(server))}"}
        return self.model_copy(update={"overrides": overrides, "seed_models": None})

    @field_validator("sandbox", mode="before")
    @classmethod
    def _resolve_sandbox(cls, v: object) -> object:
        return _sandbox_profile(v)


def _sandbox_profile(v: object) -> object:
    """A sandbox field's value: a profile name or path (or None) resolved to its profile, a
    profile left as it is; an unknown name is a validation error that names it."""
    if isinstance(v, str | Path) or v is None:
        try:
            return resolve_sandbox(v)
        except ConfigError as err:
            raise ValueError(str(err)) from None
    return v


class CodeAgentConfig(_Agent):
    """Code mode (docs/code-mode.md): a served model writes `act(obs)` for the harness's code
    task, at most `k` programs an episode (a program the restricted gate refuses is replaced),
    and the first that passes plays the whole episode in `sandbox` (`polar.evals.code_agent`)."""

    kind: Literal["code"] = "code"
    model: str = Field(description="The model writing programs (a name, name@version or a .gguf), served by llama.cpp.")
    port: int = Field(ge=1, le=65535, description="Its llama.cpp server's port (one model per server).")
    k: int = Field(3, ge=1, description="At most this many programs per episode.")
    # generate-and-test (polar.evals.code_select): each program is first tried on this many
    # selection episodes, and the best plays the episode; None: off (the first that passes the gate)
    select_episodes: int | None = Field(None, ge=1)
    temperature: float = Field(0.7, ge=0)
    max_tokens: int = Field(160, ge=16)
    threads: int = Field(1, ge=1, description="llama.cpp threads.")
    # harness label -> code task (polar/evals/code_tasks.py); a label not listed is its own task name
    tasks: dict[str, str] = Field(default_factory=dict)
    sandbox: SandboxProfile = Field("docker", validate_default=True)  # type: ignore[assignment]

    @field_validator("sandbox", mode="before")
    @classmethod
    def _resolve_sandbox(cls, v: object) -> object:
        profile = _sandbox_profile(v)
        if profile is None:
            raise ValueError("a code agent's programs must run somewhere: name a sandbox profile, not none")
        return profile

    def task_for(self, label: str) -> str:
        return self.tasks.get(label, label)


SuiteAgent = Annotated[
    RandomAgentConfig | PureRLAgentConfig | PlannerAgentConfig | HRLAgentConfig | CodeAgentConfig,
    Field(discriminator="kind"),
]


class SuiteHarness(StrictModel):
    id: str  # e.g. minigrid:MiniGrid-DoorKey-8x8-v0, gym:CartPole-v1, a YAML path
    name: str | None = None  # short label in tables and cell paths; default: derived from id
    task: str | None = None  # None: the harness's own mission / description
    kwargs: dict = Field(default_factory=dict)
    max_steps: int | None = Field(None, ge=1)  # per-episode step cap (None: the harness's)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str | None) -> str | None:
        return None if v is None else check_safe_name(v)  # it becomes a folder of cells/

    @field_validator("kwargs")
    @classmethod
    def _step_limits(cls, v: dict) -> dict:
        from polar.harnesses.registry import check_step_kwargs

        return check_step_kwargs(v)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return self.id.split(":", 1)[-1].removeprefix("MiniGrid-").removesuffix("-v0")

    def make(self) -> Harness:
        """A fresh harness for this entry (its kwargs applied)."""
        from polar.harnesses.registry import make_harness  # gymnasium: only when a cell runs

        return make_harness(self.id, **self.kwargs)


class Suite(StrictModel):
    name: str = Field(pattern=SAFE_NAME)
    description: str = ""
    agents: list[SuiteAgent] = Field(min_length=1)
    harnesses: list[SuiteHarness] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)
    episodes: int = Field(10, ge=1)  # evaluation episodes per cell
    eval_seed: int = Field(100_000, ge=0)  # episode env seed = eval_seed + 1000 * seed + index
    workers: int = Field(0, ge=0)  # 0: in-process; N: N Ray workers running cells
    bootstrap: int = Field(2000, ge=100)  # bootstrap resamples for every interval
    # The first `trace` episodes of each cell keep a step trace (actions, rewards and a text
    # frame per step, up to `trace_frames`) for the report's episode pages. Not in cell keys.
    trace: int = Field(1, ge=0)
    trace_frames: int = Field(300, ge=1)
    _source: str | None = PrivateAttr(default=None)  # the file it was loaded from

    @property
    def source(self) -> str:
        """What error messages call this suite: its file, else its name."""
        return self._source or f"suite {self.name}"

    def path_of(self, value: str) -> Path:
        """A path the suite names as written (`tuned_by`'s score files), resolved against the
        suite file's folder (the current directory for a suite given as a mapping)."""
        p = Path(value).expanduser()
        return p if p.is_absolute() or self._source is None else Path(self._source).resolve().parent / p

    @field_validator("seeds", mode="before")
    @classmethod
    def _count(cls, v: object) -> object:
        # `seeds: 5` is shorthand for [0, 1, 2, 3, 4].
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 1:
                raise ValueError("seeds: a count must be >= 1")
            return list(range(v))
        return v

    @model_validator(mode="after")
    def _unique(self) -> Suite:
        names = [a.name for a in self.agents]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"agents: duplicate agent name(s) {sorted(dup)}")
        labels = [h.label for h in self.harnesses]
        dup = {n for n in labels if labels.count(n) > 1}
        if dup:
            raise ValueError(f"harnesses: duplicate harness label(s) {sorted(dup)}; set `name`")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds: duplicate seeds")
        if any(s < 0 or s >= 1_000_000 for s in self.seeds):
            raise ValueError("seeds: each seed must be in [0, 1000000)")
        for a in self.agents:
            if a.seeds is not None and (not a.seeds or not set(a.seeds) <= set(self.seeds)):
                raise ValueError(f"agents.{a.name}.seeds: must be a non-empty subset of the suite's seeds")
            stray = sorted(set(getattr(a, "seed_models", None) or ()) - set(a.seeds or self.seeds))
            if stray:
                raise ValueError(f"agents.{a.name}.seed_models: seeds {stray} are not among the agent's seeds")
            unknown = sorted(set(getattr(a, "tasks", None) or ()) - set(labels))
            if unknown:
                raise ValueError(f"agents.{a.name}.tasks: {unknown} are not harness labels of this suite "
                                 f"(labels: {labels})")
            unknown = sorted(set(a.harnesses or ()) - set(labels) - {h.id for h in self.harnesses})
            if unknown:
                raise ValueError(f"agents.{a.name}.harnesses: {unknown} name no harness of this suite "
                                 f"(labels: {labels})")
        return self

    def agent(self, name: str) -> SuiteAgent:
        for a in self.agents:
            if a.name == name:
                return a
        raise ConfigError(f"suite {self.name}: no agent named {name!r}")

    def agent_for(self, cell: Cell) -> SuiteAgent:
        """The agent's config as this cell runs it (a planner's model for the cell's seed, a
        pure RL agent's recipe for the cell's harness)."""
        agent = self.agent(cell.agent)
        if isinstance(agent, PlannerAgentConfig):
            return agent.for_seed(cell.seed)
        if isinstance(agent, PureRLAgentConfig):
            return agent.for_harness(cell.harness)
        return agent

    def harness(self, label: str) -> SuiteHarness:
        for h in self.harnesses:
            if h.label == label:
                return h
        raise ConfigError(f"suite {self.name}: no harness labelled {label!r}")

    def trained_on(self, agent: SuiteAgent) -> list[SuiteHarness]:
        """The harnesses a multitask agent trains on: its `tasks`, else all of the suite's."""
        tasks = getattr(agent, "tasks", None)
        return [h for h in self.harnesses if tasks is None or h.label in tasks]

    def with_planner(self, profile: str) -> Suite:
        """The suite with every planner agent using `profile` (e.g. from $POLAR_PLANNER)."""
        agents = [a.model_copy(update={"planner": profile}) if isinstance(a, PlannerAgentConfig) else a
                  for a in self.agents]
        return self.model_copy(update={"agents": agents})

    def episodes_for(self, agent: str) -> int:
        """Evaluation episodes per cell of this agent (its own `episodes`, else the suite's)."""
        return self.agent(agent).episodes or self.episodes

    def episode_seed(self, seed: int, index: int) -> int:
        if index >= 1000:
            raise ConfigError(f"suite {self.name}: episodes must be < 1000 per cell (seed spacing)")
        return self.eval_seed + 1000 * seed + index

    def harnesses_of(self, agent: SuiteAgent) -> list[SuiteHarness]:
        """The harnesses an agent plays: its `harnesses` (by label or id), else all of the suite's."""
        return [h for h in self.harnesses if agent.harnesses is None or {h.label, h.id} & set(agent.harnesses)]

    def cells(self) -> list[Cell]:
        return [
            Cell(agent=a.name, harness=h.label, seed=s)
            for a in self.agents
            for h in self.harnesses_of(a)
            for s in (a.seeds if a.seeds is not None else self.seeds)
        ]

    def cell_key(self, cell: Cell, inputs: str = "", agent: SuiteAgent | None = None) -> str:
        """A hash of everything that decides a cell's result; a changed cell is re-run on resume.
        `inputs` fingerprints what the config only names (profile, recipe, skill library);
        `agent` is `agent_for(cell)` when the caller has it already."""
        payload = {
            "inputs": inputs,
            # an agent's seed subset picks cells and its labels describe them; neither changes
            # what a cell computes
            "agent": _computing_fields(agent or self.agent_for(cell)) | {"seeds": None},
            "harness": self.harness(cell.harness).model_dump(mode="json"),
            "seed": cell.seed,
            "episodes": self.episodes_for(cell.agent),
            "eval_seed": self.eval_seed,
        }
        blob = json.dumps(payload, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


# Fields added after cells were committed: left out of a key while unset, so that an agent not
# using one keeps the key (and the finished cells) it had before the field existed.
LATER_FIELDS = ("sweep", "seed_models", "skills_shown", "select_episodes", "memory")


def _computing_fields(agent: SuiteAgent) -> dict:
    # `episodes` enters the key as the cell's episode count (Suite.cell_key), so that an agent
    # without its own count keeps the key it had before the field existed; `tasks` as the specs
    # of the harnesses a multitask policy trains on (cells.cell_key), whichever way they are named
    return {k: v for k, v in agent.model_dump(mode="json").items()
            if k not in agent.LABELS and k not in ("episodes", "tasks", "harnesses")
            and not (k in LATER_FIELDS and v is None)}


class Cell(StrictModel):
    agent: str
    harness: str
    seed: int

    @property
    def slug(self) -> str:
        safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", self.harness)
        if safe.startswith("."):  # never `..` or a hidden folder, whatever the label
            safe = "_" + safe
        return f"{self.agent}/{safe}/seed-{self.seed}"


def find_suite(path_or_name: str | Path) -> Path:
    """A suite path, or a name looked up as evals/<name>.yaml in the workspace."""
    return resolve_asset("evals", path_or_name, what="suite")


def load_suite(path_or_name: str | Path | Suite | dict) -> Suite:
    if isinstance(path_or_name, Suite):
        return path_or_name
    if isinstance(path_or_name, dict):
        return validate(Suite, path_or_name, "suite")
    path = find_suite(path_or_name)
    suite = validate(Suite, _paths_against(read_mapping(path), path), str(path))
    suite._source = str(path)
    return suite


# The fields of a suite that name files: resolved against the suite's folder, and kept inside it
# (a suite from elsewhere cannot point at the rest of the machine through '..' or a symlink).
_AGENT_PATHS: dict[str, PathKind] = {"planner": "ref", "sandbox": "ref", "template": "template", "recipe": "ref",
                                     "skills": "ref", "checkpoint": "path"}


def _paths_against(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The suite's raw mapping with every relative path in it resolved against `path`'s folder."""
    def fix(value: Any, field: str, kind: PathKind) -> Any:
        return against_file(value, path, field, kind, contained=True) if isinstance(value, str) else value

    for i, a in enumerate(data.get("agents") or []):
        if not isinstance(a, dict):
            continue
        for key, kind in _AGENT_PATHS.items():
            if key in a:
                a[key] = fix(a[key], f"agents.{i}.{key}", kind)
        if isinstance(a.get("recipes"), dict):
            a["recipes"] = {k: fix(v, f"agents.{i}.recipes.{k}", "ref") for k, v in a["recipes"].items()}
        for k in a.get("tuned_by") or {} if isinstance(a.get("tuned_by"), dict) else ():
            fix(k, f"agents.{i}.tuned_by.{k}", "path")  # checked only: kept as written, the ledger's label
        for s, m in (a.get("seed_models") or {}).items() if isinstance(a.get("seed_models"), dict) else ():
            if isinstance(m, dict) and "model" in m:
                m["model"] = fix(m["model"], f"agents.{i}.seed_models.{s}.model", "ref")
    for i, h in enumerate(data.get("harnesses") or []):
        if isinstance(h, dict) and "id" in h:
            h["id"] = fix(h["id"], f"harnesses.{i}.id", "harness")
    return data
