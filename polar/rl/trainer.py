"""The training loop behind `polar train`: rollouts (serial or Ray), the updates of the
algorithm the config names (any `polar.rl.common.algorithm.Algorithm` in the registry), metrics,
TensorBoard, periodic deterministic evaluation, atomic checkpoints and exact serial resume."""

from __future__ import annotations

import copy
import json
import logging
import math
import random
import shutil
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

import polar
from polar.errors import ConfigError, HarnessError
from polar.files import atomic_write
from polar.rl.common.algorithm import Algorithm, Experience
from polar.rl.common.batches import EpisodeStats
from polar.rl.common.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from polar.rl.common.device import learner_device
from polar.rl.common.envs import make_training_env, make_vector_env
from polar.rl.common.evaluate import evaluate_policy
from polar.rl.common.observations import declared_kinds
from polar.rl.common.rollout import Collector
from polar.rl.common.runlog import METRICS_FILE, TB_DIR, RunLog
from polar.rl.common.timer import PhaseTimer
from polar.rl.config import TrainConfig
from polar.rl.policy import make_policy
from polar.rl.registry import algorithm_spec

log = logging.getLogger("polar.rl")

# What a run writes into its folder: a fresh run refuses a folder holding any of them
# (unless told to overwrite), so two runs never mix.
RUN_FILES = (METRICS_FILE, TB_DIR, "checkpoints", "eval.json", "policy", "config.yaml")


def _probe(cfg: TrainConfig) -> tuple[Any, Any, dict[str, str]]:
    """The spaces every harness of the run shares, and the observation kinds they declare
    (overridden by the config's `observation_kinds`); a mismatch is an error naming both."""
    ids = list(dict.fromkeys([cfg.harness] if isinstance(cfg.harness, str) else cfg.harness))
    found = []
    for h in ids:
        env = make_training_env(h, **cfg.harness_kwargs)
        found.append((env.observation_space, env.action_space, declared_kinds(env.unwrapped)))
        env.close()
    for h, (o, a, k) in zip(ids[1:], found[1:], strict=True):
        if o != found[0][0] or a != found[0][1]:
            raise HarnessError(f"harness: {h!r} has spaces {o} / {a}, but {ids[0]!r} has "
                               f"{found[0][0]} / {found[0][1]}; one policy needs the same spaces")
        if k != found[0][2]:
            raise HarnessError(f"harness: {h!r} declares observation kinds {k}, but {ids[0]!r} declares {found[0][2]}")
    obs_space, act_space, kinds = found[0]
    return obs_space, act_space, kinds | cfg.observation_kinds


class Trainer:
    """One run in `out`. `Trainer.resume(out)` continues from the latest checkpoint.

    A fresh run refuses a folder that holds another run's files unless `overwrite` (then
    they are removed first), so metrics of two runs never mix."""

    def __init__(self, cfg: TrainConfig, out: str | Path | None = None, overwrite: bool = False,
                 *, resuming: bool = False) -> None:
        self.cfg = cfg
        self.out = Path(out or cfg.out)
        self.overwrite = overwrite
        self._resumed = resuming
        self._present = [] if resuming else self._check_out()
        torch.set_num_threads(cfg.torch_threads)
        torch.set_flush_denormal(cfg.flush_denormal)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed % 2**32)
        torch.manual_seed(cfg.seed)
        self.rng = np.random.default_rng(cfg.seed)  # random actions of serial runs (warm-up, exploration)
        self.num_envs = cfg.section().num_envs
        obs_space, act_space, kinds = _probe(cfg)
        # `policy` acts in rollouts and evaluation and is saved, always on the CPU; `learner` is
        # what the algorithm updates: the same module, or its copy on the GPU (`device`).
        self.policy: Any = make_policy(cfg.algo, obs_space, act_space, cfg.network, cfg.normalize_obs, kinds)
        self.device = learner_device(cfg.device, self.policy.observation_kinds)
        self.learner: Any = (self.policy if self.device.type == "cpu"
                             else copy.deepcopy(self.policy).to_device(self.device))
        self.timer = PhaseTimer()
        self.algo: Algorithm = algorithm_spec(cfg.algo).algorithm_class()(self.learner, cfg, self.timer)
        self.env_steps = 0
        self.updates = 0
        self.wall_s = 0.0
        self.next_eval = cfg.eval_every or math.inf
        self.next_ckpt = cfg.checkpoint_every or math.inf
        self.recent_returns: deque[float] = deque(maxlen=20)
        self.recent_success: deque[float] = deque(maxlen=100)
        self.final: dict[str, Any] | None = None  # the final evaluation, once done
        self.runlog = RunLog(self.out)
        self.collector: Collector | None = None
        self.pool: Any = None
        self._envs_state: Any = None
        self.hooks: list[Callable[[Trainer], None]] = []  # called after every iteration (curves, tests)

    # ---- resume ------------------------------------------------------------------

    @classmethod
    def resume(cls, out: str | Path, progress: bool | None = None, device: str | None = None) -> Trainer:
        """`device` overrides the saved one (a run saved on a GPU continues on a CPU)."""
        out = Path(out)
        path = latest_checkpoint(out)
        policy, state, envs, replay = load_checkpoint(path)
        cfg = TrainConfig.model_validate(state["config"])
        if progress is not None:
            cfg = cfg.model_copy(update={"progress": progress})
        if device is not None:
            cfg = TrainConfig.model_validate(cfg.model_dump() | {"device": device})
        t = cls(cfg, out, resuming=True)
        t.policy.load_state_dict(policy.state_dict())
        t._sync_learner()
        t.algo.load_state_dict(state["optim"])
        if replay is not None:
            t.algo.load_buffer_state(replay)
            size = int(np.minimum(replay["arrays"]["count"], replay["meta"]["rows"]).sum())
            log.info("replay buffer restored: %d transitions", size)
        t.env_steps, t.updates, t.wall_s = state["env_steps"], state["updates"], state["wall_s"]
        t.next_eval, t.next_ckpt = state["next_eval"], state["next_ckpt"]
        t.recent_returns.extend(state["recent_returns"])
        t.recent_success.extend(state["recent_success"])
        t.final = state.get("final")
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
        if "torch_cuda" in state["rng"] and t.device.type == "cuda":
            torch.cuda.set_rng_state_all(state["rng"]["torch_cuda"])
        t.rng.bit_generator.state = state["rng"]["trainer"]
        t._envs_state = envs
        # What was logged after the checkpoint is replayed by the resumed run: cut it.
        if "log_rows" in state:
            t.runlog.rows, t.runlog.events = state["log_rows"], state["log_events"]
        else:  # a checkpoint from before the counts: keep the rows up to its env steps
            t.runlog.rows = t.runlog.events = _rows_up_to(out / METRICS_FILE, t.env_steps)
        t.runlog.trim()
        log.info("resumed %s at %d env steps, update %d", out, t.env_steps, t.updates)
        return t

    # ---- pieces --------------------------------------------------------------------

    def _check_out(self) -> list[str]:
        """A fresh run refuses a folder holding another run (before anything is written)."""
        present = [name for name in RUN_FILES if (self.out / name).exists()]
        if present and not self.overwrite:
            raise ConfigError(f"out: {self.out} already holds a run ({', '.join(present)}); "
                              "continue it with --resume, or replace it with --overwrite")
        return present

    def _clear_out(self) -> None:
        for name in self._present:  # --overwrite: the old run's files go before any new one
            p = self.out / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        self._present = []

    def _setup_rollouts(self) -> None:
        cfg = self.cfg
        if cfg.workers == 0:
            if isinstance(self._envs_state, Collector):
                self.collector = self._envs_state
            else:
                if self.env_steps:
                    log.warning("no saved env state: resuming with freshly reset envs (not bit-exact)")
                env = make_vector_env([cfg.harness_for(0)] * self.num_envs, cfg.harness_kwargs)
                self.collector = Collector(env, seed=cfg.seed + 7919 * self.updates)
        else:
            from polar.rl.common.ray_session import init_ray
            from polar.rl.common.workers import WorkerPool

            init_ray(cfg.address, object_store_mb=cfg.object_store_mb)
            self.pool = WorkerPool([cfg.harness_for(w) for w in range(cfg.workers)], self.num_envs,
                                   cfg.harness_kwargs, cfg.seed + 104_729 * self.updates,
                                   self.policy.config(), cfg.torch_threads)

    def _sync_policy(self) -> None:
        """After an update on the GPU: the CPU policy (rollouts, evaluation, saving) takes the
        learner's weights and normaliser statistics."""
        if self.learner is not self.policy:
            self.policy.load_state_dict(self.learner.state_dict())

    def _sync_learner(self) -> None:
        """After loading the CPU policy (resume): the learner takes its weights."""
        if self.learner is not self.policy:
            self.learner.load_state_dict(self.policy.state_dict())

    def _weights_ref(self) -> Any:
        import ray

        return ray.put({k: v.numpy() for k, v in self.policy.to_state()[0].items()})

    def _state(self) -> dict[str, Any]:
        return {
            "polar_version": polar.__version__,
            "config": self.cfg.model_dump(mode="json"),
            "algo": self.cfg.algo, "env_steps": self.env_steps, "updates": self.updates,
            "wall_s": self.wall_s, "next_eval": self.next_eval, "next_ckpt": self.next_ckpt,
            "lr": self._lr(), "optim": _on_cpu(self.algo.state_dict()), "final": self.final,
            "log_rows": self.runlog.rows, "log_events": self.runlog.events,
            "recent_returns": list(self.recent_returns), "recent_success": list(self.recent_success),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                    "torch": torch.get_rng_state(), "trainer": self.rng.bit_generator.state}
            | ({"torch_cuda": torch.cuda.get_rng_state_all()} if self.device.type == "cuda" else {}),
        }

    def checkpoint(self) -> Path:
        self.runlog.flush()  # the events the checkpoint counts are on disk
        return save_checkpoint(self.out, f"ckpt-{self.env_steps:010d}", self.policy, self._state(),
                               envs=self.collector, replay=self.algo.buffer_state())

    def _lr(self) -> float:
        return self.algo.lr(self.updates)

    def _record(self, stats: EpisodeStats) -> None:
        self.recent_returns.extend(stats.returns)
        self.recent_success.extend(stats.successes)

    def evaluate(self) -> dict[str, Any]:
        cfg = self.cfg
        ids = list(dict.fromkeys([cfg.harness] if isinstance(cfg.harness, str) else cfg.harness))
        per = [evaluate_policy(self.policy, h, cfg.eval_episodes, cfg.eval_seed, cfg.harness_kwargs,
                               deterministic=cfg.eval_deterministic) for h in ids]
        rets = [r["mean_return"] for r in per]
        out: dict[str, Any] = {
            "mean_return": float(np.mean(rets)),
            "std_return": float(np.mean([r["std_return"] for r in per])),
            "episodes": int(sum(r["episodes"] for r in per)),
            "deterministic": cfg.eval_deterministic,
        }
        succ = [r["success_rate"] for r in per if "success_rate" in r]
        if succ:
            out["success_rate"] = float(np.mean(succ))
        if len(per) > 1:
            out["per_harness"] = per
        return out

    def _eval_row(self, ev: dict[str, Any]) -> dict[str, Any]:
        return {"env_steps": self.env_steps, "wall_s": self.wall_s,
                **{f"eval/{k}": v for k, v in ev.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}}

    # ---- the loop ------------------------------------------------------------------

    def run(self, max_updates: int | None = None) -> dict[str, Any]:
        """Train to `cfg.steps` env steps (or stop after `max_updates` more updates, used by
        tests to simulate a crash) and write eval.json, the final policy and a checkpoint.

        The end is ordered so that a kill at any point resumes cleanly: the final evaluation
        row, then a checkpoint that holds the final result (a resume from it only writes the
        files below, never a second row), then policy/ and eval.json."""
        cfg = self.cfg
        if not self._resumed:
            self._clear_out()
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
        self.runlog.open()
        try:
            if self.final is None:
                if not self._train(max_updates):
                    return {}
                result = self.evaluate()
                result |= {"env_steps": self.env_steps, "wall_s": round(self.wall_s, 3), "updates": self.updates}
                self.runlog.write(self._eval_row(result))
                self.final = result
                self.checkpoint()
            result = self.final
            self.policy.save(self.out / "policy")
            atomic_write(self.out / "eval.json", json.dumps(result, indent=1))
            return result
        finally:
            self.runlog.close()
            if self.pool is not None:
                self.pool.close()

    def _train(self, max_updates: int | None) -> bool:
        """The training loop; False when stopped early by `max_updates`."""
        cfg = self.cfg
        self._setup_rollouts()
        progress = _Progress(cfg.steps, self.env_steps, enabled=cfg.progress)
        start_updates = self.updates
        t0 = time.perf_counter() - self.wall_s
        try:
            while self.env_steps < cfg.steps:
                if max_updates is not None and self.updates - start_updates >= max_updates:
                    return False
                metrics = self._iteration()
                self.wall_s = time.perf_counter() - t0
                if metrics is not None:
                    self.runlog.write(self._row(metrics))
                progress.update(self.env_steps, self._recent_return())
                if self.env_steps >= self.next_eval:
                    self.next_eval += cfg.eval_every
                    self.runlog.write(self._eval_row(self.evaluate()))
                if self.env_steps >= self.next_ckpt:
                    self.next_ckpt += cfg.checkpoint_every
                    self.checkpoint()
                for hook in self.hooks:
                    hook(self)
            self.wall_s = time.perf_counter() - t0
            return True
        finally:
            progress.close()

    def _recent_return(self) -> float | None:
        return float(np.mean(self.recent_returns)) if self.recent_returns else None

    def _row(self, metrics: dict[str, float]) -> dict[str, Any]:
        row: dict[str, Any] = {"update": self.updates, "env_steps": self.env_steps,
                               "wall_s": round(self.wall_s, 3),
                               "sps": round(self.env_steps / max(self.wall_s, 1e-9), 1), "lr": self._lr()}
        if self.recent_returns:
            row["episode_return"] = float(np.mean(self.recent_returns))
        if self.recent_success:
            row["success_rate"] = float(np.mean(self.recent_success))
        return row | metrics

    def _iteration(self) -> dict[str, float] | None:
        """Collect, count, update: one metrics row or None."""
        source = Experience(self.policy, self.collector, self.pool, self.rng, self._weights_ref)
        before = self.env_steps
        batch = self.algo.collect(source, before)
        self._record(batch.stats)
        self.env_steps += batch.num_transitions
        metrics, updates = self.algo.update(batch, before, self.env_steps, self.updates)
        self.updates += updates
        self._sync_policy()
        return metrics


def _on_cpu(state: Any) -> Any:
    """A state dict with its tensors on the CPU: checkpoints load on any machine."""
    if isinstance(state, torch.Tensor):
        return state.cpu()
    if isinstance(state, dict):
        return {k: _on_cpu(v) for k, v in state.items()}
    if isinstance(state, list):
        return [_on_cpu(v) for v in state]
    return state


def _rows_up_to(path: Path, env_steps: int) -> int:
    if not path.exists():
        return 0
    rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    return sum(1 for r in rows if r.get("env_steps", 0) <= env_steps)


class _Progress:
    """rich progress bar: env steps, steps/s and the recent training return."""

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        self.enabled = enabled
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.p = Progress(TextColumn("train"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("{task.fields[sps]} steps/s"), TextColumn("return {task.fields[ret]}"),
                          TimeRemainingColumn())
        self.task = self.p.add_task("train", total=total, completed=done, sps="-", ret="-")
        self.t0, self.s0 = time.perf_counter(), done
        self.p.start()

    def update(self, steps: int, ret: float | None) -> None:
        if not self.enabled:
            return
        dt = time.perf_counter() - self.t0
        sps = f"{(steps - self.s0) / dt:.0f}" if dt > 0 else "-"
        self.p.update(self.task, completed=steps, sps=sps, ret="-" if ret is None else f"{ret:.2f}")

    def close(self) -> None:
        if self.enabled:
            self.p.stop()
            self.enabled = False
