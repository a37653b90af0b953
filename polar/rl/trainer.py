"""The training loop behind `polar train`: rollouts (serial or Ray), PPO/SAC updates, metrics,
TensorBoard, periodic deterministic evaluation, atomic checkpoints and exact serial resume."""

from __future__ import annotations

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
from polar.rl.batches import EpisodeStats, RolloutBatch, Transitions
from polar.rl.buffers import ReplayBuffer
from polar.rl.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from polar.rl.config import TrainConfig
from polar.rl.envs import make_training_env, make_vector_env
from polar.rl.evaluate import evaluate_policy
from polar.rl.observations import declared_kinds
from polar.rl.policy import make_policy
from polar.rl.ppo import PPO
from polar.rl.ppo_recurrent import RecurrentPPO
from polar.rl.rollout import Collector, collect_ppo, collect_sac
from polar.rl.runlog import METRICS_FILE, TB_DIR, RunLog
from polar.rl.sac import SAC, PhaseTimer

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
        self.algo_cfg = cfg.ppo if cfg.algo == "ppo" else cfg.sac
        torch.set_num_threads(cfg.torch_threads)
        torch.set_flush_denormal(cfg.flush_denormal)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed % 2**32)
        torch.manual_seed(cfg.seed)
        self.rng = np.random.default_rng(cfg.seed)  # SAC warm-up actions (serial)
        self.num_envs = self.algo_cfg.num_envs
        obs_space, act_space, kinds = _probe(cfg)
        self.policy: Any = make_policy(cfg.algo, obs_space, act_space, cfg.network, cfg.normalize_obs, kinds)
        ppo_class = RecurrentPPO if self.policy.recurrent else PPO
        self.ppo = ppo_class(self.policy, cfg.ppo) if cfg.algo == "ppo" else None
        self.timer = PhaseTimer()
        self.sac = SAC(self.policy, cfg.sac, self.timer) if cfg.algo == "sac" else None
        self.replay = (ReplayBuffer(self.policy.observation_space, self.policy.act_dim,
                                    min(cfg.sac.buffer_size, cfg.steps), self.num_envs * max(1, cfg.workers),
                                    cfg.seed, cfg.sac.her, cfg.sac.buffer_float)
                       if cfg.algo == "sac" else None)
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
    def resume(cls, out: str | Path, progress: bool | None = None) -> Trainer:
        out = Path(out)
        path = latest_checkpoint(out)
        policy, state, envs, replay = load_checkpoint(path)
        cfg = TrainConfig.model_validate(state["config"])
        if progress is not None:
            cfg = cfg.model_copy(update={"progress": progress})
        t = cls(cfg, out, resuming=True)
        t.policy.load_state_dict(policy.state_dict())
        if t.ppo is not None:
            t.ppo.optimizer.load_state_dict(state["optim"])
        if t.sac is not None:
            t.sac.load_state_dict(state["optim"])
            if replay is not None and t.replay is not None:
                t.replay.load_state(replay)
                log.info("replay buffer restored: %d transitions", t.replay.size)
        t.env_steps, t.updates, t.wall_s = state["env_steps"], state["updates"], state["wall_s"]
        t.next_eval, t.next_ckpt = state["next_eval"], state["next_ckpt"]
        t.recent_returns.extend(state["recent_returns"])
        t.recent_success.extend(state["recent_success"])
        t.final = state.get("final")
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
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
            from polar.rl.ray_session import init_ray
            from polar.rl.workers import WorkerPool

            init_ray(cfg.address, object_store_mb=cfg.object_store_mb)
            self.pool = WorkerPool([cfg.harness_for(w) for w in range(cfg.workers)], self.num_envs,
                                   cfg.harness_kwargs, cfg.seed + 104_729 * self.updates,
                                   self.policy.config(), cfg.torch_threads)

    def _weights_ref(self) -> Any:
        import ray

        return ray.put({k: v.numpy() for k, v in self.policy.to_state()[0].items()})

    def _state(self) -> dict[str, Any]:
        optim = self.ppo.optimizer.state_dict() if self.ppo else self.sac.state_dict()  # type: ignore[union-attr]
        return {
            "polar_version": polar.__version__,
            "config": self.cfg.model_dump(mode="json"),
            "algo": self.cfg.algo, "env_steps": self.env_steps, "updates": self.updates,
            "wall_s": self.wall_s, "next_eval": self.next_eval, "next_ckpt": self.next_ckpt,
            "lr": self._lr(), "optim": optim, "final": self.final,
            "log_rows": self.runlog.rows, "log_events": self.runlog.events,
            "recent_returns": list(self.recent_returns), "recent_success": list(self.recent_success),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                    "torch": torch.get_rng_state(), "trainer": self.rng.bit_generator.state},
        }

    def checkpoint(self) -> Path:
        self.runlog.flush()  # the events the checkpoint counts are on disk
        replay = self.replay.state() if (self.replay is not None and self.cfg.sac.save_buffer) else None
        return save_checkpoint(self.out, f"ckpt-{self.env_steps:010d}", self.policy, self._state(),
                               envs=self.collector, replay=replay)

    def _num_updates(self) -> int:
        per = self.cfg.ppo.num_envs * self.cfg.ppo.num_steps * max(1, self.cfg.workers)
        return max(1, math.ceil(self.cfg.steps / per))

    def _lr(self) -> float:
        if self.cfg.algo != "ppo":
            return self.cfg.sac.policy_lr
        c = self.cfg.ppo
        if not c.anneal_lr:
            return c.learning_rate
        # The schedule position is the update counter, restored on resume.
        return c.learning_rate * max(0.0, 1.0 - self.updates / self._num_updates())

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
                metrics = self._ppo_iteration() if cfg.algo == "ppo" else self._sac_iteration()
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

    def _ppo_iteration(self) -> dict[str, float]:
        assert self.ppo is not None
        c = self.cfg.ppo
        self.ppo.set_lr(self._lr())
        if self.pool is not None:
            batch = RolloutBatch.concat(self.pool.ppo(self._weights_ref(), c.num_steps))
        else:
            assert self.collector is not None
            batch = collect_ppo(self.policy, self.collector, c.num_steps)
        self._record(batch.stats)
        metrics = self.ppo.update(batch)
        self.env_steps += batch.num_transitions
        self.updates += 1
        return metrics

    def _sac_iteration(self) -> dict[str, float] | None:
        assert self.sac is not None and self.replay is not None
        c = self.cfg.sac
        warmup = self.env_steps < c.learning_starts
        with self.timer("env"):
            if self.pool is not None:
                # Workers return chunks; updates follow at the same ratio per env step as serial.
                data = Transitions.concat(self.pool.sac(self._weights_ref(), c.worker_steps, warmup))
            else:
                assert self.collector is not None
                data = collect_sac(self.policy, self.collector, 1, self.rng if warmup else None)
        self._record(data.stats)
        with self.timer("replay_add"):
            self.replay.add(data)
        n = data.num_transitions
        before = self.env_steps
        self.env_steps += n
        if self.env_steps < c.learning_starts:
            return None
        grad_steps = c.gradient_steps * max(1, n // self.num_envs)
        acc: list[dict[str, torch.Tensor]] = []
        for _ in range(grad_steps):
            with self.timer("replay_sample"):
                sample = self.replay.sample(c.batch_size)
            acc.append(self.sac.update(sample))
            self.updates += 1
        # One metrics row per ~1000 env steps keeps metrics.jsonl small.
        if before // 1000 != self.env_steps // 1000:
            keys = dict.fromkeys(k for m in acc for k in m)
            return {k: float(torch.stack([m[k] for m in acc if k in m]).mean()) for k in keys}
        return None


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
