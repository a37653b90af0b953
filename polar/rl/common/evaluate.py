"""Deterministic evaluation on seeds disjoint from training; the normaliser stays frozen.

The episodes run in lockstep in one vector env with batched inference, which is why this is
not `polar.harnesses.rollout.play_episode` (one `policy.act` per step); success is judged by
the same rule as every other episode in Polar (`polar.harnesses.rollout.judge`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from polar.harnesses.rollout import judge
from polar.rl.common.envs import make_vector_env
from polar.rl.common.observations import canonical_obs
from polar.rl.common.rollout import Collector
from polar.rl.policy import Policy


def _sub_info(info: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-env i's entries of a vector env's info dict (arrays masked by `_key`; a nested dict,
    which gymnasium batches as a dict of arrays with its own mask, recursively)."""
    out: dict[str, Any] = {}
    for k, v in info.items():
        mask = info.get(f"_{k}")
        if k.startswith("_") or (mask is not None and not mask[i]):
            continue
        out[k] = _sub_info(v, i) if isinstance(v, dict) else v[i]
    return out


@torch.inference_mode()
def evaluate_policy(policy: Policy, harness_id: str, episodes: int, seed: int,
                    harness_kwargs: dict[str, Any] | None = None, max_steps: int = 100_000,
                    deterministic: bool = True) -> dict[str, Any]:
    """Run `episodes` episodes (one per sub-env, seeds seed..seed+episodes-1), with the
    policy's mode (`deterministic`) or sampled actions."""
    env = make_vector_env([harness_id] * episodes, harness_kwargs, AutoresetMode.SAME_STEP)
    spec = env.envs[0].unwrapped.harness.spec
    col = Collector(env, seed=seed)
    policy.reset()  # a recurrent policy remembers each sub-env's episode from its start
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
                    # the sub-env has already reset: its goal predicates are gone, its info is not
                    verdict = judge(spec, info=_sub_info(fin, i), terminated=bool(term[i]),
                                    truncated=bool(trunc[i]), episode_return=float(ep_ret[i]))
                    if verdict.success is not None:
                        success[i] = float(verdict.success)
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
