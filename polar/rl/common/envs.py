"""Making training envs from harness ids, and batching them into vector envs.

Envs come from `polar.harnesses.registry.make_harness_env` (ids like `gym:CartPole-v1`,
`minigrid:MiniGrid-DoorKey-5x5-v0`, `keydoor` or a harness YAML path). Observation keys the
encoder cannot use (MiniGrid's `mission` text) are filtered out here so vector envs can
batch the rest.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from polar.errors import HarnessError
from polar.harnesses.registry import make_harness_env
from polar.rl.common.observations import obs_leaves


class _KeepEncodable(gym.ObservationWrapper):
    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._keys = list(obs_leaves(env.observation_space))
        self.observation_space = gym.spaces.Dict({k: env.observation_space[k] for k in self._keys})

    def observation(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {k: obs[k] for k in self._keys}


def make_training_env(harness_id: str, **kwargs: Any) -> gym.Env:
    env = make_harness_env(harness_id, **kwargs)
    space = env.observation_space
    if isinstance(space, gym.spaces.Dict) and set(obs_leaves(space)) != set(space.spaces):
        env = _KeepEncodable(env)
    return env


def make_vector_env(
    harness_ids: list[str],
    harness_kwargs: dict[str, Any] | None = None,
    autoreset_mode: AutoresetMode = AutoresetMode.SAME_STEP,
) -> SyncVectorEnv:
    """One sub-env per id. SAME_STEP by default: no wasted reset steps, and the real final
    observation arrives in `info["final_obs"]`."""
    kw = dict(harness_kwargs or {})
    # partials, not lambdas: a serial run pickles its vector env into checkpoints.
    fns = [partial(make_training_env, h, **kw) for h in harness_ids]
    try:
        return SyncVectorEnv(fns, autoreset_mode=autoreset_mode)
    except (AssertionError, ValueError) as err:
        # Different harnesses in one vector env must share their spaces.
        raise HarnessError(f"harness: {harness_ids} cannot be batched together: {err}") from None
