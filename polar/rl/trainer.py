"""The training loop behind `polar train`: rollouts (serial or Ray), PPO/SAC updates, metrics,
TensorBoard, periodic deterministic evaluation, atomic checkpoints and exact serial resume."""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

import polar
from polar.errors import HarnessError
from polar.files import atomic_write
from polar.rl.buffers import ReplayBuffer
from polar.rl.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from polar.rl.config import TrainConfig
from polar.rl.envs import make_vector_env
from polar.rl.evaluate import evaluate_policy
from polar.rl.policy import Policy
from polar.rl.ppo import PPO
from polar.rl.rollout import Collector, EpisodeStats, collect_ppo, collect_sac
from polar.rl.sac import SAC

log = logging.getLogger("polar.rl")


def _merge_ppo(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """Worker batches [T, N_w] -> one batch [T, sum N_w]."""
    if len(batches) == 1:
        return batches[0]
    out: dict[str, Any] = {"obs": {k: np.concatenate([b["obs"][k] for b in batches], 1) for k in batches[0]["obs"]}}
    for k in ("actions", "logp", "values", "rewards", "terminated", "dones", "valid", "next_values"):
        out[k] = np.concatenate([b[k] for b in batches], 1)
    stats = EpisodeStats()
    for b in batches:
        stats.extend(b["stats"])
    out["stats"] = stats
    return out


def _merge_sac(batches: list[dict[str, Any]]) -> dict[str, Any]:
    if len(batches) == 1:
        return batches[0]
    out: dict[str, Any] = {
        "obs": {k: np.concatenate([b["obs"][k] for b in batches]) for k in batches[0]["obs"]},
        "next_obs": {k: np.concatenate([b["next_obs"][k] for b in batches]) for k in batches[0]["next_obs"]},
    }
    for k in ("actions", "rewards", "terminated"):
        out[k] = np.concatenate([b[k] for b in batches])
    stats = EpisodeStats()
    for b in batches:
        stats.extend(b["stats"])
    out["stats"] = stats
    return out


def _check_spaces(cfg: TrainConfig) -> tuple[Any, Any]:
    """The spaces every harness of the run shares; different ones are an error naming both."""
    ids = list(dict.fromkeys([cfg.harness] if isinstance(cfg.harness, str) else cfg.harness))
    spaces = []
    for h in ids:
        probe = make_vector_env([h], cfg.harness_kwargs)
        spaces.append((probe.single_observation_space, probe.single_action_space))
        probe.close()
    for h, (o, a) in zip(ids[1:], spaces[1:], strict=True):
        if o != spaces[0][0] or a != spaces[0][1]:
            raise HarnessError(f"harness: {h!r} has spaces {o} / {a}, but {ids[0]!r} has "
                               f"{spaces[0][0]} / {spaces[0][1]}; one policy needs the same spaces")
    return spaces[0]


class Trainer:
    """One run in `out`. `Trainer.resume(out)` continues from the latest checkpoint."""

    def __init__(self, cfg: TrainConfig, out: str | Path | None = None) -> None:
        self.cfg = cfg
        self.out = Path(out or cfg.out)
        self.algo_cfg = cfg.ppo if cfg.algo == "ppo" else cfg.sac
        torch.set_num_threads(cfg.torch_threads)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed % 2**32)
        torch.manual_seed(cfg.seed)
        self.rng = np.random.default_rng(cfg.seed)  # SAC warm-up actions (serial)
        self.num_envs = self.algo_cfg.num_envs
        obs_space, act_space = _check_spaces(cfg)
        self.policy = Policy(cfg.algo, obs_space, act_space, cfg.network, cfg.normalize_obs)
        self.ppo = PPO(self.policy, cfg.ppo) if cfg.algo == "ppo" else None
        self.sac = SAC(self.policy, cfg.sac) if cfg.algo == "sac" else None
        self.replay = (ReplayBuffer(self.policy.observation_space, self.policy.act_dim,
                                    min(cfg.sac.buffer_size, cfg.steps), cfg.seed)
                       if cfg.algo == "sac" else None)
        self.env_steps = 0
        self.updates = 0
        self.wall_s = 0.0
        self.next_eval = cfg.eval_every or math.inf
        self.next_ckpt = cfg.checkpoint_every or math.inf
        self.recent_returns: deque[float] = deque(maxlen=20)
        self.recent_success: deque[float] = deque(maxlen=100)
        self.collector: Collector | None = None
        self.pool: Any = None
        self._envs_state: Any = None
        self._tb: Any = None
        self.hooks: list[Callable[[Trainer], None]] = []  # called after every update (e.g. eval curves)

    # ---- resume ------------------------------------------------------------------

    @classmethod
    def resume(cls, out: str | Path, progress: bool | None = None) -> Trainer:
        out = Path(out)
        path = latest_checkpoint(out)
        policy, state, envs, replay = load_checkpoint(path)
        cfg = TrainConfig.model_validate(state["config"])
        if progress is not None:
            cfg = cfg.model_copy(update={"progress": progress})
        t = cls(cfg, out)
        t.policy.load_state_dict(policy.state_dict())
        if t.ppo is not None:
            t.ppo.optimizer.load_state_dict(state["optim"])
        if t.sac is not None:
            t.sac.load_state_dict(state["optim"])
            if replay is not None and t.replay is not None:
                t.replay.load_state(replay)
        t.env_steps, t.updates, t.wall_s = state["env_steps"], state["updates"], state["wall_s"]
        t.next_eval, t.next_ckpt = state["next_eval"], state["next_ckpt"]
        t.recent_returns.extend(state["recent_returns"])
        t.recent_success.extend(state["recent_success"])
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
        t.rng.bit_generator.state = state["rng"]["trainer"]
        t._envs_state = envs
        # Metrics written after the checkpoint are replayed by the resumed run: drop them.
        mpath = out / "metrics.jsonl"
        if mpath.exists():
            rows = [ln for ln in mpath.read_text().splitlines() if ln.strip()]
            kept = [ln for ln in rows if json.loads(ln).get("env_steps", 0) <= t.env_steps]
            mpath.write_text("".join(ln + "\n" for ln in kept))
        log.info("resumed %s at %d env steps, update %d", out, t.env_steps, t.updates)
        return t

    # ---- pieces --------------------------------------------------------------------

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
            from polar.rl.workers import WorkerPool, init_ray

            init_ray(cfg.address, cfg.object_store_mb)
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
            "lr": self._lr(), "optim": optim,
            "recent_returns": list(self.recent_returns), "recent_success": list(self.recent_success),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                    "torch": torch.get_rng_state(), "trainer": self.rng.bit_generator.state},
        }

    def checkpoint(self) -> Path:
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

    def _log(self, row: dict[str, Any]) -> None:
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        if self._tb is not None:
            from tensorboard.compat.proto.summary_pb2 import Summary
            from torch.utils.tensorboard.summary import scalar

            # One event holding the whole row, not one event per scalar: a third of the cost
            # per update; TensorBoard reads the same tags and steps.
            values = [val for k, v in row.items()
                      if isinstance(v, (int, float)) and k != "env_steps" and math.isfinite(v)
                      for val in scalar(k, v).value]
            if values:
                self._tb._get_file_writer().add_summary(Summary(value=values), row["env_steps"])

    def _record(self, stats: EpisodeStats) -> None:
        self.recent_returns.extend(stats.returns)
        self.recent_success.extend(stats.successes)

    def evaluate(self) -> dict[str, Any]:
        cfg = self.cfg
        ids = list(dict.fromkeys([cfg.harness] if isinstance(cfg.harness, str) else cfg.harness))
        per = [evaluate_policy(self.policy, h, cfg.eval_episodes, cfg.eval_seed, cfg.harness_kwargs) for h in ids]
        rets = [r["mean_return"] for r in per]
        out: dict[str, Any] = {
            "mean_return": float(np.mean(rets)),
            "std_return": float(np.mean([r["std_return"] for r in per])),
            "episodes": int(sum(r["episodes"] for r in per)),
        }
        succ = [r["success_rate"] for r in per if "success_rate" in r]
        if succ:
            out["success_rate"] = float(np.mean(succ))
        if len(per) > 1:
            out["per_harness"] = per
        return out

    # ---- the loop ------------------------------------------------------------------

    def run(self, max_updates: int | None = None) -> dict[str, Any]:
        """Train to `cfg.steps` env steps (or stop after `max_updates` more updates, used by
        tests to simulate a crash) and write eval.json, the final policy and a checkpoint."""
        cfg = self.cfg
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
        from torch.utils.tensorboard import SummaryWriter

        self._tb = SummaryWriter(str(self.out / "tb"))
        self._setup_rollouts()
        progress = _Progress(cfg.steps, self.env_steps, enabled=cfg.progress)
        start_updates = self.updates
        t0 = time.perf_counter() - self.wall_s
        try:
            while self.env_steps < cfg.steps:
                if max_updates is not None and self.updates - start_updates >= max_updates:
                    return {}
                metrics = self._ppo_iteration() if cfg.algo == "ppo" else self._sac_iteration()
                self.wall_s = time.perf_counter() - t0
                if metrics is not None:
                    self._log(self._row(metrics))
                progress.update(self.env_steps, self._recent_return())
                if self.env_steps >= self.next_eval:
                    self.next_eval += cfg.eval_every
                    ev = self.evaluate()
                    self._log({"env_steps": self.env_steps, "wall_s": self.wall_s,
                               **{f"eval/{k}": v for k, v in ev.items() if k != "per_harness"}})
                if self.env_steps >= self.next_ckpt:
                    self.next_ckpt += cfg.checkpoint_every
                    self.checkpoint()
                for hook in self.hooks:
                    hook(self)
            self.wall_s = time.perf_counter() - t0
            progress.close()
            result = self.evaluate()
            result |= {"env_steps": self.env_steps, "wall_s": round(self.wall_s, 3), "updates": self.updates}
            self._log({"env_steps": self.env_steps, "wall_s": self.wall_s,
                       **{f"eval/{k}": v for k, v in result.items() if isinstance(v, (int, float))}})
            self.policy.save(self.out / "policy")
            self.checkpoint()
            atomic_write(self.out / "eval.json", json.dumps(result, indent=1))
            return result
        finally:
            progress.close()
            if self._tb is not None:
                self._tb.close()
            if self.pool is not None:
                self.pool.close()

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
            batch = _merge_ppo(self.pool.ppo(self._weights_ref(), c.num_steps))
        else:
            assert self.collector is not None
            batch = collect_ppo(self.policy, self.collector, c.num_steps)
        self._record(batch["stats"])
        metrics = self.ppo.update(batch)
        self.env_steps += int(batch["valid"].sum())
        self.updates += 1
        return metrics

    def _sac_iteration(self) -> dict[str, float] | None:
        assert self.sac is not None and self.replay is not None
        c = self.cfg.sac
        warmup = self.env_steps < c.learning_starts
        if self.pool is not None:
            # Workers return chunks; updates follow at the same ratio per env step as serial.
            data = _merge_sac(self.pool.sac(self._weights_ref(), c.worker_steps, warmup))
        else:
            assert self.collector is not None
            data = collect_sac(self.policy, self.collector, 1, self.rng if warmup else None)
        self._record(data["stats"])
        self.replay.add(data)
        n = len(data["rewards"])
        before = self.env_steps
        self.env_steps += n
        if self.env_steps < c.learning_starts:
            return None
        grad_steps = c.gradient_steps * max(1, n // self.num_envs)
        acc: dict[str, list[float]] = {}
        for _ in range(grad_steps):
            for k, v in self.sac.update(self.replay.sample(c.batch_size)).items():
                acc.setdefault(k, []).append(v)
            self.updates += 1
        # One metrics row per ~1000 env steps keeps metrics.jsonl small.
        if before // 1000 != self.env_steps // 1000:
            return {k: float(np.mean(v)) for k, v in acc.items()}
        return None


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
