"""The pure-RL agent: a PPO/SAC policy trained by the RL engine on the cell's harness and seed
(or a given checkpoint), evaluated with sampled actions by default (`deterministic: true`
takes the argmax).

Variants a reviewer asks for, all as config of this one agent:
- `observes: full` trains and plays on the harness's full-observation variant;
- `recipes:` one recipe per harness (hyper-parameters per task family);
- `multitask: true` trains one policy per seed over all the suite's harnesses, or those named
  in `tasks` (the same total budget, `train_steps`), and evaluates it on each harness; the run
  is shared by the seed's cells;
- `train_seed: N` trains one policy per harness (seed N) and evaluates it on every cell seed;
- `sweep:` tunes hyper-parameters on a grid first (`polar.evals.sweep`), charged as tuning.

Training runs in `<out>/work/<cell>/train` (multitask: `<out>/work/<agent>/@all-tasks/seed-<s>/train`)
through `polar.evals.training.train_or_resume`: a run killed half-way resumes from its latest
checkpoint, and a finished one is reused while its training config and its game (the harness
fingerprint: spec and a connector game's sources) are unchanged; otherwise it trains again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from polar.domains.registry import domain_of, domains
from polar.episode import EpisodeRecord
from polar.errors import ConfigError
from polar.evals.agents import EvalAgent, Information, Preparation, sha
from polar.evals.suite import PureRLAgentConfig, SuiteHarness
from polar.evals.sweep import SWEEP_DIR, run_sweep
from polar.evals.training import (
    CURVE_FILE,
    CurveRecorder,
    deep_merge,
    make_train_config,
    read_curve,
    resolve_recipe,
    run_env_steps,
    train_or_resume,
)
from polar.files import file_lock
from polar.harnesses.base import Harness
from polar.harnesses.fingerprint import harness_fingerprint
from polar.harnesses.rollout import play_episode

MULTITASK_ENV = "gym:polar.harnesses.multitask:MultiTaskEnv"
ALL_TASKS = "@all-tasks"  # the work folder of a multitask run (no harness label can hold "@")


def full_observation(entry: SuiteHarness) -> SuiteHarness:
    """The harness entry's full-observation variant (MiniGrid: the whole grid)."""
    domain = domain_of(entry.id)
    if domain is not None and domain.full_observation is not None:
        return entry.model_copy(update={"kwargs": {**entry.kwargs, **domain.full_observation}})
    having = ", ".join(d.prefix for d in domains() if d.full_observation is not None)
    raise ConfigError(f"harness {entry.id!r}: observes: full needs a harness family with a full-observation "
                      f"variant ({having}); set the harness kwargs yourself "
                      "and declare what the agent observes")


def recipe_for(cfg: PureRLAgentConfig, label: str) -> str | None:
    return cfg.recipes.get(label, cfg.recipe)


def train_config(cfg: PureRLAgentConfig, entry: SuiteHarness, seed: int, out: Path,
                 overrides: dict[str, Any] | None = None, steps: int | None = None) -> Any:
    """The TrainConfig for one cell: recipe, then overrides (the agent's, or those its sweep
    chose), then what the cell fixes."""
    return make_train_config(cfg.name, recipe_for(cfg, entry.label), dict(cfg.overrides if overrides is None
                                                                          else overrides), {
        "algo": cfg.algo, "harness": entry.id, "harness_kwargs": dict(entry.kwargs),
        "steps": steps or cfg.train_steps, "seed": seed, "out": str(out)})


def multitask_config(cfg: PureRLAgentConfig, entries: list[SuiteHarness], seed: int, out: Path,
                     overrides: dict[str, Any] | None = None) -> Any:
    """One run over every harness: each sub-env plays the tasks in turn (`MultiTaskEnv`)."""
    tasks = [{"id": e.id, "kwargs": dict(e.kwargs), "label": e.label} for e in entries]
    return make_train_config(cfg.name, cfg.recipe, dict(cfg.overrides if overrides is None else overrides), {
        "algo": cfg.algo, "harness": MULTITASK_ENV, "harness_kwargs": {"tasks": tasks},
        "steps": cfg.train_steps, "seed": seed, "out": str(out)})


def _locked(folder: Path) -> AbstractContextManager[None]:
    """One cell at a time trains a shared (multitask, train_seed) run; the others wait, then reuse it."""
    return file_lock(folder / ".lock")


def policy_episode(policy: Any, harness: Harness, deterministic: bool, *, agent: str, task: str, env_seed: int,
                   max_steps: int | None, episode_id: str) -> EpisodeRecord:
    """One episode of a trained policy; sampled actions come from torch's global RNG, seeded per
    episode in a fork (the caller's stream is untouched): an episode is a function of its seed."""
    import torch

    policy.reset()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(env_seed)
        return play_episode(harness, lambda obs: policy.act(obs, deterministic=deterministic), agent=agent,
                            task=task, env_seed=env_seed, max_steps=max_steps, episode_id=episode_id)


class PureRLAgent(EvalAgent):
    kind = "pure_rl"
    config: PureRLAgentConfig

    def __init__(self, config: PureRLAgentConfig, suite: Any = None) -> None:
        super().__init__(config, suite)
        self.policy: Any = None

    @property
    def label(self) -> str:
        return f"pure_rl:{self.config.algo}"

    @classmethod
    def information(cls, config: PureRLAgentConfig) -> Information:  # type: ignore[override]
        observes = config.observes or "view"
        what = config.algo.upper()
        if config.multitask:
            what += f", one policy over {len(config.tasks)} tasks" if config.tasks else ", one policy over every task"
        return Information(observes, observes, f"pure RL ({what})")

    @classmethod
    def inputs_fingerprint(cls, config: PureRLAgentConfig) -> str:  # type: ignore[override]
        """The training recipes and the checkpoint's weights."""
        parts: list[str] = []
        for recipe in sorted({r for r in [config.recipe, *config.recipes.values()] if r}):
            parts.append(sha(resolve_recipe(recipe, config.name).read_bytes()))
        if config.checkpoint:
            run = Path(config.checkpoint).expanduser()
            weights = sorted(run.glob("policy*.safetensors")) + sorted(run.glob("policy/*.safetensors"))
            parts += [sha(w.read_bytes()) for w in weights]
        return sha("|".join(parts).encode()) if parts else ""

    def harness_entry(self, entry: SuiteHarness) -> SuiteHarness:
        return full_observation(entry) if self.config.observes == "full" else entry

    def prepare(self, entry: SuiteHarness, seed: int, work_dir: Path) -> Preparation:
        from polar.rl.policy import load_policy

        cfg = self.config
        if cfg.checkpoint is not None:
            run = Path(cfg.checkpoint).expanduser().resolve()
            self.policy = load_policy(run)
            steps = run_env_steps(run)
            return Preparation(train_env_steps=steps, curve=read_curve(run),
                               info={"charges": {f"checkpoint:{run}": steps}, "run_dir": str(run)})
        start = time.perf_counter()
        overrides, charges, info = self._tune(entry, work_dir)
        if cfg.multitask:
            run, key, curve_name = self._train_multitask(entry, seed, work_dir, overrides)
        elif cfg.train_seed is not None:  # one run per harness, shared by its cells' seeds
            run = work_dir.parent / f"train-seed-{cfg.train_seed}"  # work_dir: <agent>/<harness>/seed-<s>
            with _locked(work_dir.parent):
                tcfg = train_config(cfg, entry, cfg.train_seed, run, overrides)
                train_or_resume(tcfg, run, [self._curve(run, entry, CURVE_FILE)], game=harness_fingerprint(entry.id))
            key, curve_name = f"train:{cfg.name}:{entry.label}:{cfg.train_seed}", CURVE_FILE
        else:
            run = work_dir / "train"
            tcfg = train_config(cfg, entry, seed, run, overrides)
            curve = self._curve(run, entry, CURVE_FILE)
            train_or_resume(tcfg, run, [curve], game=harness_fingerprint(entry.id))
            key, curve_name = f"train:{cfg.name}:{entry.label}:{seed}", CURVE_FILE
        self.policy = load_policy(run)
        steps = run_env_steps(run)
        charges[key] = steps
        return Preparation(train_env_steps=sum(charges.values()), train_wall_s=time.perf_counter() - start,
                           curve=read_curve(run, curve_name),
                           info={"charges": charges, "run_dir": str(run), **info})

    def _tune(self, entry: SuiteHarness, work_dir: Path) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
        """(the overrides the cell trains with, the sweep's charge, what the sweep chose):
        the agent's own overrides without a sweep; else the sweep's best point over them."""
        cfg = self.config
        if cfg.sweep is None:
            return dict(cfg.overrides), {}, {}
        sweep = cfg.sweep
        target = self.harness_entry(SuiteHarness(id=sweep.harness)) if sweep.harness else entry
        folder = work_dir.parent.parent / SWEEP_DIR / target.label  # work_dir: <agent>/<harness>/seed-<s>

        def train(point: dict[str, Any], run: Path) -> None:
            tcfg = train_config(cfg, target, sweep.seed, run, deep_merge(dict(cfg.overrides), point), sweep.steps)
            train_or_resume(tcfg, run, [], game=harness_fingerprint(target.id))

        with _locked(folder):
            best, steps = run_sweep(sweep, folder, train, self._play(target))
        return (deep_merge(dict(cfg.overrides), best), {f"tune:{cfg.name}:{target.label}": steps},
                {"sweep": {"harness": target.id, "best": best, "trials": len(sweep.points())}})

    def _play(self, entry: SuiteHarness) -> Callable[[Any, int], tuple[bool | None, float]]:
        """One episode of a policy on a fresh harness, played as the cell plays them."""
        cfg = self.config

        def play(policy: Any, env_seed: int) -> tuple[bool | None, float]:
            harness = entry.make()
            try:
                rec = policy_episode(policy, harness, cfg.deterministic, agent="curve", task="", env_seed=env_seed,
                                     max_steps=entry.max_steps, episode_id="")
            finally:
                harness.close()
            return rec.success, rec.episode_return

        return play

    def _curve(self, run: Path, entry: SuiteHarness, name: str) -> CurveRecorder:
        cfg = self.config
        return CurveRecorder(run, self._play(entry), cfg.eval_every, cfg.curve_episodes, name=name)

    def _train_multitask(self, entry: SuiteHarness, seed: int, work_dir: Path,
                         overrides: dict[str, Any]) -> tuple[Path, str, str]:
        """The seed's one run over the harnesses it trains on (trained by the first of its
        cells to get here), with one learning curve per trained harness; a harness outside
        `tasks` evaluates that policy and has no curve."""
        cfg = self.config
        if self.suite is None:
            raise ConfigError(f"agent {cfg.name}: multitask needs the suite's harnesses")
        entries = [self.harness_entry(h) for h in self.suite.trained_on(cfg)]
        shared = work_dir.parent.parent / ALL_TASKS / work_dir.name
        run = shared / "train"
        with _locked(shared):
            tcfg = multitask_config(cfg, entries, seed, run, overrides)
            train_or_resume(tcfg, run, [self._curve(run, e, f"eval_curve.{e.label}.jsonl") for e in entries],
                            game="|".join(harness_fingerprint(e.id) for e in entries))
        return run, f"train:{cfg.name}:{ALL_TASKS}:{seed}", f"eval_curve.{entry.label}.jsonl"

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        return policy_episode(self.policy, harness, self.config.deterministic, agent=self.label, task=task,
                              env_seed=env_seed, max_steps=max_steps, episode_id=episode_id)
