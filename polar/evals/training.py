"""Training inside a suite cell, shared by the agents that train (pure RL, the HRL controller):
the TrainConfig of a cell, a resumable run in the cell's work dir, and the learning curve.

Runs go through `polar.rl.trainer.Trainer`, so a run killed half-way resumes from its latest
checkpoint and a finished one is reused. The learning curve comes from `CurveRecorder`, a
trainer hook that plays evaluation episodes with the same loop and action mode as the suite's
(`eval_curve.jsonl`), not from the trainer's own greedy evaluations.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polar.config import read_mapping, read_yaml, validate
from polar.errors import ConfigError
from polar.evals.agents import CurvePoint
from polar.files import atomic_write
from polar.workspace import recipe_paths, resolve_asset

CURVE_FILE = "eval_curve.jsonl"
CURVE_SEED = 2**31  # learning-curve episodes use seeds CURVE_SEED + i, disjoint from the suite's
GAME_FILE = "harness.sha"  # the fingerprint of the game(s) a run trains on (a changed game: train again)


def resolve_recipe(recipe: str, agent: str) -> Path:
    """A recipe path, or a name under skills/recipes/ in the workspace."""
    return resolve_asset("skills", recipe, folder="recipes", what=f"agent {agent}: recipe")


def load_recipe(recipe: str, agent: str) -> Any:
    """A recipe's TrainConfig, its paths resolved against the recipe file's folder."""
    from polar.rl.config import TrainConfig

    path = resolve_recipe(recipe, agent)
    return validate(TrainConfig, recipe_paths(read_mapping(path), path), str(path))


def deep_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def make_train_config(agent: str, recipe: str | None, overrides: dict[str, Any], fixed: dict[str, Any]) -> Any:
    """The TrainConfig of one run: the recipe, then the agent's overrides, then what the cell
    fixes (`fixed`: algo, harness, steps, seed, out ...)."""
    from polar.rl.config import TrainConfig

    base: dict[str, Any] = {}
    if recipe:
        # validates the recipe alone first, so an error names the recipe file
        base = load_recipe(recipe, agent).model_dump(mode="json")
    merged = deep_merge(base, dict(overrides))
    merged.update({"progress": False,
                   # The trainer's own (greedy) evaluation is not used: the curve recorder and
                   # the suite's episodes measure the agent. Keep it to one episode.
                   "eval_every": 0, "eval_episodes": 1, **fixed})
    merged.setdefault("workers", 0)
    return validate(TrainConfig, merged, f"agent {agent}: training config")


def read_curve(run_dir: Path, name: str = CURVE_FILE) -> list[CurvePoint]:
    path = run_dir / name
    if not path.exists():
        return []
    points = {}
    for line in path.read_text().splitlines():
        if line.strip():
            p = CurvePoint.model_validate_json(line)
            points[p.env_steps] = p
    return [points[k] for k in sorted(points)]


# (policy, env seed) -> (success or None when the harness cannot tell, episode return)
EpisodeFn = Callable[[Any, int], tuple[bool | None, float]]


class CurveRecorder:
    """A trainer hook measuring success every `every` env steps, with the same episode loop
    and action mode as the final evaluation, so curve and table agree.

    `progress(trainer)` is the cost axis (env steps: the trainer's transitions for pure RL,
    the primitive steps of the options for the HRL controller). The trainer's own periodic
    evaluation is always greedy; a greedy MiniGrid PPO policy often loops on a spot long
    after the sampling policy solves the task. The episodes run under a forked torch RNG
    seeded per point, so measuring changes neither training nor its exact resume.
    """

    def __init__(self, run_dir: Path, play: EpisodeFn, every: int, episodes: int,
                 progress: Callable[[Any], int] = lambda t: int(t.env_steps), name: str = CURVE_FILE) -> None:
        self.path = run_dir / name
        self.play, self.every, self.episodes, self.progress = play, every, episodes, progress
        done = read_curve(run_dir, name)
        self.last = done[-1].env_steps if done else -1

    def trim(self, env_steps: int) -> None:
        """Drop points past a resumed checkpoint: the resumed run measures them again."""
        kept = [p for p in read_curve(self.path.parent, self.path.name) if p.env_steps <= env_steps]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(p.model_dump_json() + "\n" for p in kept))
        self.last = kept[-1].env_steps if kept else -1

    def __call__(self, trainer: Any) -> None:
        steps = self.progress(trainer)
        if self.every and steps // self.every > max(self.last, 0) // self.every:
            self.measure(trainer.policy, steps)

    def measure(self, policy: Any, env_steps: int) -> None:
        import torch

        if env_steps == self.last:
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(env_steps)
            outs = [self.play(policy, CURVE_SEED + i) for i in range(self.episodes)]
        unknown = any(s is None for s, _ in outs)  # this harness cannot tell success
        point = CurvePoint(env_steps=env_steps, successes=None if unknown else sum(bool(s) for s, _ in outs),
                           episodes=self.episodes, mean_return=sum(r for _, r in outs) / self.episodes)
        with open(self.path, "a") as f:
            f.write(point.model_dump_json() + "\n")
        self.last = env_steps


def same_config(run: Path, tcfg: Any) -> bool:
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
    try:  # through the model: a field added since the run started compares at its default
        saved = type(tcfg).model_validate(saved).model_dump(mode="json")
    except ValueError:
        return False
    return {**saved, "out": None} == {**tcfg.model_dump(mode="json"), "out": None}


def train_or_resume(tcfg: Any, run: Path, curves: list[CurveRecorder], hooks: list[Callable[[Any], None]] | None = None,
                    on_start: Callable[[Any], None] | None = None, game: str = "") -> dict[str, Any]:
    """Train `tcfg` in `run`: reuse a finished run, resume an interrupted one from its latest
    checkpoint, or start afresh (a folder left by another config or `game` — the fingerprint
    of the harnesses it trains on, `polar.harnesses.fingerprint` — is cleared first). Each
    curve measures the untrained policy (when it has `every`), every `every` steps, and the
    final policy. `on_start(trainer)` runs once the trainer exists (e.g. to restore counters
    to the checkpoint's)."""
    from polar.rl.common.checkpoint import CheckpointError, latest_checkpoint
    from polar.rl.trainer import Trainer

    trainer = None
    game_file = run / GAME_FILE
    if same_config(run, tcfg) and (game_file.read_text() if game_file.is_file() else "") == game:
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
            # Leftovers of another config or game (or of a run without a checkpoint): their
            # metrics would pollute the learning curve, so start from an empty folder (our work dir).
            shutil.rmtree(run)
        trainer = Trainer(tcfg, run)
    run.mkdir(parents=True, exist_ok=True)
    if game:
        atomic_write(game_file, game)
    if on_start is not None:
        on_start(trainer)
    for c in curves:
        c.trim(c.progress(trainer))
        if c.every:
            c.measure(trainer.policy, c.progress(trainer))  # the untrained policy: step 0
    trainer.hooks.extend([*(hooks or []), *curves])
    result = trainer.run()
    for c in curves:
        c.measure(trainer.policy, c.progress(trainer))  # the final policy
    return result


def run_env_steps(run: Path) -> int:
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
