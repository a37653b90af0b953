"""The pure-RL agent: a PPO/SAC policy trained by the RL engine on the cell's harness and seed
(or a given checkpoint), evaluated with sampled actions by default (`deterministic: true`
takes the argmax). With `train_seed`, one run per harness serves every cell seed.

Training runs in `<out>/work/<cell>/train` through `polar.rl.trainer.Trainer`, so a training
run killed half-way resumes from its latest checkpoint, and a finished one is reused.
The learning curve comes from `CurveRecorder`, a trainer hook that plays evaluation episodes
with the same loop and action mode as the suite's (`eval_curve.jsonl`), not from the
trainer's own greedy evaluations.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from polar.config import load_yaml, read_yaml, validate
from polar.episode import EpisodeRecord
from polar.errors import ConfigError
from polar.evals.agents import CurvePoint, EvalAgent, Preparation, sha
from polar.evals.suite import PureRLAgentConfig, SuiteHarness
from polar.harnesses.base import Harness
from polar.harnesses.rollout import play_episode
from polar.workspace import resolve_asset


def train_config(cfg: PureRLAgentConfig, entry: SuiteHarness, seed: int, out: Path) -> Any:
    """The TrainConfig for one cell: recipe, then overrides, then what the cell fixes."""
    from polar.rl.config import TrainConfig

    base: dict[str, Any] = {}
    if cfg.recipe:
        # validates the recipe alone first, so an error names the recipe file
        base = load_yaml(resolve_recipe(cfg), TrainConfig).model_dump(mode="json")
    merged = _deep_merge(base, dict(cfg.overrides))
    merged.update({
        "algo": cfg.algo, "harness": entry.id, "harness_kwargs": dict(entry.kwargs),
        "steps": cfg.train_steps, "seed": seed, "out": str(out), "progress": False,
        # The trainer's own (greedy) evaluation is not used: the curve recorder and the
        # suite's episodes measure this agent. Keep it to one episode.
        "eval_every": 0, "eval_episodes": 1,
    })
    merged.setdefault("workers", 0)
    return validate(TrainConfig, merged, f"agent {cfg.name}: training config")


def resolve_recipe(cfg: PureRLAgentConfig) -> Path:
    """A recipe path, or a name under skills/recipes/ in the workspace."""
    assert cfg.recipe is not None
    return resolve_asset("skills", cfg.recipe, folder="recipes", what=f"agent {cfg.name}: recipe")


def _deep_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


CURVE_FILE = "eval_curve.jsonl"
CURVE_SEED = 2**31  # learning-curve episodes use seeds CURVE_SEED + i, disjoint from the suite's


def read_curve(run_dir: Path) -> list[CurvePoint]:
    path = run_dir / CURVE_FILE
    if not path.exists():
        return []
    points = {}
    for line in path.read_text().splitlines():
        if line.strip():
            p = CurvePoint.model_validate_json(line)
            points[p.env_steps] = p
    return [points[k] for k in sorted(points)]


class CurveRecorder:
    """A trainer hook measuring success every `every` env steps, with the same episode loop
    and action mode (`deterministic`) as the final evaluation, so curve and table agree.

    The trainer's own periodic evaluation is always greedy; a greedy MiniGrid PPO policy
    often loops on a spot long after the sampling policy solves the task, which would make
    the curve disagree with a sampling evaluation. The episodes run under a forked torch RNG
    seeded per point, so measuring changes neither training nor its exact resume.
    """

    def __init__(self, run_dir: Path, entry: SuiteHarness, every: int, episodes: int,
                 deterministic: bool) -> None:
        self.path = run_dir / CURVE_FILE
        self.entry, self.every, self.episodes, self.deterministic = entry, every, episodes, deterministic
        done = read_curve(run_dir)
        self.last = done[-1].env_steps if done else -1

    def trim(self, env_steps: int) -> None:
        """Drop points past a resumed checkpoint: the resumed run measures them again."""
        kept = [p for p in read_curve(self.path.parent) if p.env_steps <= env_steps]
        self.path.write_text("".join(p.model_dump_json() + "\n" for p in kept))
        self.last = kept[-1].env_steps if kept else -1

    def __call__(self, trainer: Any) -> None:
        if self.every and trainer.env_steps // self.every > max(self.last, 0) // self.every:
            self.measure(trainer.policy, trainer.env_steps)

    def measure(self, policy: Any, env_steps: int) -> None:
        import torch

        if env_steps == self.last:
            return
        harness = self.entry.make()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(env_steps)
                recs = [play_episode(harness, lambda o: policy.act(o, deterministic=self.deterministic),
                                     agent="curve", task="", env_seed=CURVE_SEED + i,
                                     max_steps=self.entry.max_steps, episode_id="")
                        for i in range(self.episodes)]
        finally:
            harness.close()
        unknown = any(r.success is None for r in recs)  # this harness cannot tell success
        point = CurvePoint(env_steps=env_steps, successes=None if unknown else sum(bool(r.success) for r in recs),
                           episodes=self.episodes, mean_return=sum(r.episode_return for r in recs) / self.episodes)
        with open(self.path, "a") as f:
            f.write(point.model_dump_json() + "\n")
        self.last = env_steps


class PureRLAgent(EvalAgent):
    kind = "pure_rl"
    config: PureRLAgentConfig

    def __init__(self, config: PureRLAgentConfig) -> None:
        super().__init__(config)
        self.policy: Any = None

    @property
    def label(self) -> str:
        return f"pure_rl:{self.config.algo}"

    @classmethod
    def inputs_fingerprint(cls, config: PureRLAgentConfig) -> str:  # type: ignore[override]
        """The training recipe and the checkpoint's weights."""
        parts: list[str] = []
        if config.recipe:
            parts.append(sha(resolve_recipe(config).read_bytes()))
        if config.checkpoint:
            run = Path(config.checkpoint).expanduser()
            weights = sorted(run.glob("policy*.safetensors")) + sorted(run.glob("policy/*.safetensors"))
            parts += [sha(w.read_bytes()) for w in weights]
        return sha("|".join(parts).encode()) if parts else ""

    def prepare(self, entry: SuiteHarness, seed: int, work_dir: Path) -> Preparation:
        from polar.rl.policy import load_policy

        cfg = self.config
        if cfg.checkpoint is not None:
            run = Path(cfg.checkpoint).expanduser().resolve()
            self.policy = load_policy(run)
            steps = _run_env_steps(run)
            return Preparation(train_env_steps=steps, curve=read_curve(run),
                               info={"charges": {f"checkpoint:{run}": steps}, "run_dir": str(run)})
        if cfg.train_seed is None:
            run, train_seed = work_dir / "train", seed
        else:  # one run per harness, shared by its cells (work_dir is <agent>/<harness>/seed-<s>)
            run, train_seed = work_dir.parent / f"train-seed-{cfg.train_seed}", cfg.train_seed
        tcfg = train_config(cfg, entry, train_seed, run)
        start = time.perf_counter()
        run.parent.mkdir(parents=True, exist_ok=True)
        with _locked(run.parent / f".{run.name}.lock"):  # cells on other Ray workers wait for it
            result = self._train(tcfg, run, entry)
        self.policy = load_policy(run)
        steps = int(result.get("env_steps", _run_env_steps(run)))
        return Preparation(
            train_env_steps=steps, train_wall_s=time.perf_counter() - start, curve=read_curve(run),
            info={"charges": {f"train:{cfg.name}:{entry.label}:{train_seed}": steps}, "run_dir": str(run)},
        )

    def _train(self, tcfg: Any, run: Path, entry: SuiteHarness) -> dict[str, Any]:
        from polar.rl.checkpoint import CheckpointError, latest_checkpoint
        from polar.rl.trainer import Trainer

        cfg = self.config
        trainer = None
        if _same_config(run, tcfg):
            done = run / "eval.json"
            if done.exists():
                return json.loads(done.read_text())  # trained earlier; the cell died after that
            try:
                latest_checkpoint(run)
                trainer = Trainer.resume(run)
            except CheckpointError:
                pass
        if trainer is None:
            if run.exists():
                # Leftovers of another config (or of a run without a checkpoint): its metrics
                # would pollute the learning curve, so start from an empty folder (our work dir).
                shutil.rmtree(run)
            trainer = Trainer(tcfg, run)
        run.mkdir(parents=True, exist_ok=True)
        curve = CurveRecorder(run, entry, cfg.eval_every, cfg.curve_episodes, cfg.deterministic)
        curve.trim(trainer.env_steps)
        if cfg.eval_every:
            curve.measure(trainer.policy, trainer.env_steps)  # the untrained policy: step 0
            trainer.hooks.append(curve)
        result = trainer.run()
        curve.measure(trainer.policy, trainer.env_steps)  # the final policy
        return result

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        import torch

        det = self.config.deterministic
        policy = self.policy
        # Sampled actions come from torch's global RNG: seed it per episode (in a fork, so the
        # caller's stream is untouched) to make an episode a function of its seed alone.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(env_seed)
            return play_episode(harness, lambda obs: policy.act(obs, deterministic=det), agent=self.label,
                                task=task, env_seed=env_seed, max_steps=max_steps, episode_id=episode_id)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created if missing), held for the block."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _same_config(run: Path, tcfg: Any) -> bool:
    """Whether the run in `run` was started with `tcfg`, whatever its folder is called: a Ray
    worker names it by absolute path, an in-process run as given (often relative), and a
    mismatch there must not throw away a finished training run."""
    p = run / "config.yaml"
    if not p.exists():
        return False
    try:
        saved = read_yaml(p)
    except ConfigError:
        return False
    if not isinstance(saved, dict):
        return False
    return {**saved, "out": None} == {**tcfg.model_dump(mode="json"), "out": None}


def _run_env_steps(run: Path) -> int:
    """The env steps a finished run trained for (eval.json), else its config's budget."""
    if (run / "eval.json").exists():
        data = json.loads((run / "eval.json").read_text())
        if "env_steps" in data:
            return int(data["env_steps"])
    if (run / "config.yaml").exists():
        data = read_yaml(run / "config.yaml")
        if isinstance(data, dict) and "steps" in data:
            return int(data["steps"])
    raise ConfigError(f"{run}: cannot tell how many env steps this policy was trained for "
                      "(no eval.json or config.yaml): pass a `polar train` run dir")
