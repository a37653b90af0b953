"""Evaluation on seeds disjoint from training; the normaliser stays frozen."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from polar.rl.envs import make_vector_env
from polar.rl.observations import canonical_obs
from polar.rl.policy import Policy
from polar.rl.rollout import Collector


@torch.inference_mode()
def evaluate(policy: Policy, harness_id: str, episodes: int, seed: int,
             harness_kwargs: dict[str, Any] | None = None, max_steps: int = 100_000,
             deterministic: bool = True) -> dict[str, Any]:
    """Run `episodes` episodes (one per sub-env, seeds seed..seed+episodes-1), with the
    policy's mode (`deterministic`) or sampled actions."""
    env = make_vector_env([harness_id] * episodes, harness_kwargs, AutoresetMode.SAME_STEP)
    col = Collector(env, seed=seed)
    returns = np.full(episodes, np.nan)
    lengths = np.zeros(episodes, dtype=np.int64)
    success = np.full(episodes, np.nan)
    ep_ret = np.zeros(episodes)
    try:
        for _ in range(max_steps):
            obs = col.current_obs()
            a = policy.act_tensor(policy.prepare(obs), deterministic)
            nxt, r, term, trunc, info = env.step(policy.env_action(a))
            col.obs = canonical_obs(nxt, col.space)
            open_ = np.isnan(returns)
            ep_ret += np.where(open_, r, 0.0)
            lengths += open_
            done = (np.asarray(term) | np.asarray(trunc)) & open_
            if done.any():
                fin = info.get("final_info", {})
                for i in np.flatnonzero(done):
                    returns[i] = ep_ret[i]
                    if "success" in fin and fin.get("_success", np.ones(episodes, bool))[i]:
                        success[i] = float(fin["success"][i])
            if not np.isnan(returns).any():
                break
    finally:
        env.close()
    finished = ~np.isnan(returns)
    out: dict[str, Any] = {
        "harness": harness_id,
        "mean_return": float(np.mean(returns[finished])) if finished.any() else float("nan"),
        "std_return": float(np.std(returns[finished])) if finished.any() else float("nan"),
        "episodes": int(finished.sum()),
        "mean_length": float(np.mean(lengths[finished])) if finished.any() else float("nan"),
    }
    has_success = ~np.isnan(success)
    if has_success.any():
        out["success_rate"] = float(np.mean(success[has_success]))
    return out
