"""The HRL agent: PPO whose actions are skill calls (options) from the library, trained on the
cell's harness with the harness's reward. The control a reviewer asks for first: it has the
planner's skills but no planner, so it separates what the skills contribute from what the
planner adds.

Training runs the RL engine on `polar.skills.options.OptionEnv` (`gym:` entry point) in the
cell's work dir, serially (a process-wide counter reads the primitive steps; Ray workers would
hide them). The trainer counts controller decisions (`train_steps`); the ledger charges every
primitive env step the options took while training (`primitive_steps.jsonl`, kept per trainer
update so a resumed run restarts from its checkpoint's count) plus the skills' pretraining.
The learning curve's x axis is primitive env steps too. Evaluation plays the options on the
suite's harness; each option call is a decision of the episode record, with its outcome.

With `memory: true` the options run over the agent's memory (`polar.agent.memory_options`,
docs/memory.md): the memory skills, the options the library declares, the controller on its view.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from polar.agent.memory_options import MEMORY_OPTION_ENV, MemoryOptionEnv, memory_options
from polar.episode import DecisionRecord, EpisodeRecord, FailureCause
from polar.errors import ConfigError, PolarError
from polar.evals.agents import EvalAgent, Information, Preparation, sha
from polar.evals.planner_agent import harness_spec, skill_charges
from polar.evals.rl_agent import full_observation
from polar.evals.suite import HRLAgentConfig, SuiteHarness
from polar.evals.training import (
    CurveRecorder,
    make_train_config,
    read_curve,
    resolve_recipe,
    train_or_resume,
)
from polar.harnesses.base import Harness
from polar.harnesses.rollout import unsolved_cause
from polar.skills.catalog import SkillCatalog
from polar.skills.options import PRIMITIVE_STEPS, OptionEnv, default_options, describe
from polar.skills.search_path import Library, open_library

OPTION_ENV = "gym:polar.skills.options:OptionEnv"
PROBE_SEED = 2**31 + 1_000_000  # start states that decide the default options: disjoint from every eval seed
PROBE_STATES = 32
STEPS_FILE = "primitive_steps.jsonl"


def skill_library(cfg: HRLAgentConfig) -> Library:
    """The agent's `skills:` folder, else the workspace library over the shipped one."""
    root = Path(cfg.skills).expanduser() if cfg.skills else None
    if root is not None and not root.exists():
        raise ConfigError(f"agent {cfg.name}: skills: {root} does not exist")
    return open_library(root)


class _StepLog:
    """(controller decisions, primitive steps) after every trainer update, so the primitive
    count of a resumed run restarts from the one at its checkpoint."""

    def __init__(self, run: Path, token: str) -> None:
        self.path, self.token = run / STEPS_FILE, token

    def rows(self) -> list[tuple[int, int]]:
        if not self.path.exists():
            return []
        return [tuple(json.loads(line)) for line in self.path.read_text().splitlines() if line.strip()]

    def restore(self, trainer: Any) -> None:
        kept = [r for r in self.rows() if r[0] <= trainer.env_steps]
        self.path.write_text("".join(json.dumps(list(r)) + "\n" for r in kept))
        PRIMITIVE_STEPS[self.token] = kept[-1][1] if kept else 0

    def __call__(self, trainer: Any) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps([trainer.env_steps, PRIMITIVE_STEPS.get(self.token, 0)]) + "\n")

    def total(self) -> int:
        rows = self.rows()
        return rows[-1][1] if rows else 0


class HRLAgent(EvalAgent):
    kind = "hrl"
    config: HRLAgentConfig

    def __init__(self, config: HRLAgentConfig, suite: Any = None) -> None:
        super().__init__(config, suite)
        self.policy: Any = None
        self.options: list[dict[str, Any]] = []
        self.library: SkillCatalog | None = None

    @property
    def label(self) -> str:
        return "hrl:ppo"

    @classmethod
    def information(cls, config: HRLAgentConfig) -> Information:  # type: ignore[override]
        if config.memory:  # the memory skills read the agent's memory of its view (and pose) only
            if config.observes not in (None, "view"):
                raise ConfigError(f"agent {config.name}: observes: over the agent's memory the HRL agent reads its "
                                  f"own view (and pose): view, not {config.observes!r}")
            return Information("view", "view", "RL controller over the memory skills (PPO over options; "
                                               "docs/memory.md)")
        observes = config.observes or "full"  # the shipped goto skill reads the full grid
        return Information(observes, config.controller, "RL controller over the skills (PPO over options)")

    @classmethod
    def inputs_fingerprint(cls, config: HRLAgentConfig) -> str:  # type: ignore[override]
        """The recipe and the skill library's contents (refs, weights, manifests)."""
        parts = [sha(resolve_recipe(config.recipe, config.name).read_bytes())] if config.recipe else []
        try:
            lib = skill_library(config)
            parts += [f"{s.ref}:{s.weights_sha256}:{sha(s.manifest_json().encode())}" for s in lib.list()]
        except PolarError as err:
            parts.append(f"no-library:{type(err).__name__}")
        return sha("|".join(parts).encode())

    def harness_entry(self, entry: SuiteHarness) -> SuiteHarness:
        return full_observation(entry) if self.config.controller == "full" else entry

    def option_set(self, entry: SuiteHarness, library: SkillCatalog) -> list[dict[str, Any]]:
        if self.config.options is not None:
            return [o.model_dump() for o in self.config.options]
        if self.config.memory:  # from the library's declarations: no state is read
            return memory_options(library, harness_spec(entry))
        harness = entry.make()
        try:
            return default_options(harness, library, range(PROBE_SEED, PROBE_SEED + PROBE_STATES))
        finally:
            harness.close()

    def env_kwargs(self, entry: SuiteHarness, library: SkillCatalog) -> dict[str, Any]:
        cfg = self.config
        return {"harness": entry.id, "harness_kwargs": dict(entry.kwargs), "options": self.options,
                "skills": cfg.skills, "controller": cfg.controller, "max_options": cfg.max_options,
                "max_steps": entry.max_steps, "option_steps": cfg.option_steps}

    def prepare(self, entry: SuiteHarness, seed: int, work_dir: Path) -> Preparation:
        from polar.rl.policy import load_policy

        cfg = self.config
        library = skill_library(cfg)
        self.library = library
        self.options = self.option_set(entry, library)
        used = {library.get(o["skill"]).name for o in self.options}
        charges, listing = skill_charges(library, harness_spec(entry))
        keep = {s["skill"] for s in listing if s["skill"].split("@")[0] in used}
        charges = {k: v for k, v in charges.items() if k.removeprefix("skill:") in keep}
        listing = [s for s in listing if s["skill"] in keep]

        run = work_dir / "train"
        token = str(run.resolve())
        kwargs = self.env_kwargs(entry, library) | {"counter": token}
        if int(cfg.overrides.get("workers", 0) or 0):
            raise ConfigError(f"agent {cfg.name}: overrides.workers: the HRL controller trains serially "
                              "(its primitive steps are counted in-process)")
        tcfg = make_train_config(cfg.name, cfg.recipe, cfg.overrides, {
            "algo": "ppo", "harness": MEMORY_OPTION_ENV if cfg.memory else OPTION_ENV, "harness_kwargs": kwargs,
            "steps": cfg.train_steps,
            "seed": seed, "out": str(run), "workers": 0})
        log = _StepLog(run, token)

        def play(policy: Any, env_seed: int) -> tuple[bool | None, float]:
            harness = entry.make()
            try:
                rec = self._play(policy, harness, "", env_seed, entry.max_steps, "")
            finally:
                harness.close()
            return rec.success, rec.episode_return

        # the x axis: primitive steps at the last trainer update (the trainer's own closing
        # evaluation also steps the option env, but trains nothing and is not charged)
        curve = CurveRecorder(run, play, cfg.eval_every, cfg.curve_episodes, progress=lambda t: log.total())
        start = time.perf_counter()
        result = train_or_resume(tcfg, run, [curve], hooks=[log], on_start=log.restore)
        self.policy = load_policy(run)
        primitive = log.total()
        charges[f"train:{cfg.name}:{entry.label}:{seed}"] = primitive
        return Preparation(
            train_env_steps=sum(charges.values()), train_wall_s=time.perf_counter() - start,
            curve=read_curve(run),
            info={"charges": charges, "skills": listing, "options": [describe(o) for o in self.options],
                  "controller_decisions": int(result.get("env_steps", cfg.train_steps)),
                  "primitive_env_steps": primitive, "run_dir": str(run), "library": str(library.root)})

    def _play(self, policy: Any, harness: Harness, task: str, env_seed: int, max_steps: int | None,
              episode_id: str) -> EpisodeRecord:
        """One episode of the controller: each option call becomes a decision with its outcome."""
        import torch

        cfg = self.config
        assert self.library is not None, "prepare() first"
        t0 = time.perf_counter()
        env_class = MemoryOptionEnv if cfg.memory else OptionEnv
        env = env_class(harness, self.options, skills=str(self.library.root), controller=cfg.controller,
                        max_options=cfg.max_options, max_steps=max_steps, option_steps=cfg.option_steps)
        decisions: list[DecisionRecord] = []
        ret, info, term, trunc = 0.0, {}, False, False
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(env_seed)
            obs, _ = env.reset(seed=env_seed)
            policy.reset()
            while not (term or trunc):
                p0 = time.perf_counter()
                k = int(policy.act(obs, deterministic=cfg.deterministic))
                planner_s = time.perf_counter() - p0
                before = env.harness.steps
                obs, r, term, trunc, info = env.step(k)
                ret += r
                decisions.append(DecisionRecord(
                    index=len(decisions), decision={"kind": "option", "option": describe(self.options[k]), "index": k},
                    outcomes=[env.last_outcome] if env.last_outcome else [], env_steps=env.harness.steps - before,
                    planner_s=planner_s))
        success = info.get("success")
        cause: FailureCause | None = None
        detail = None
        if success is False:
            if env.harness.terminated or env.harness.truncated:
                cause, detail = unsolved_cause(env.harness.terminated, env.harness.truncated, env.harness.steps)
            else:
                cause, detail = FailureCause.BUDGET, f"option budget ({cfg.max_options} calls) exhausted"
        return EpisodeRecord(
            episode_id=episode_id, agent=self.label, harness_id=harness.spec.id, task=task, seed=env_seed,
            success=success, episode_return=ret, env_steps=env.harness.steps, terminated=bool(term),
            truncated=bool(trunc), failure_cause=cause, failure_detail=detail, decisions=decisions,
            wall_s=time.perf_counter() - t0)

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        return self._play(self.policy, harness, task, env_seed, max_steps, episode_id)
