"""Ray rollout workers: each actor holds a vector of envs and a CPU copy of the policy and
returns a whole batch per call (an actor call costs ~1 ms, so never one call per step).

Weights go out once per update through `ray.put`; a worker that dies is replaced (with a
fresh seed) and asked again, so training goes on.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

log = logging.getLogger("polar.rl")

_WORKER_SEED_STRIDE = 10_007


class _Worker:
    def __init__(self, harness_ids: list[str], harness_kwargs: dict[str, Any], seed: int,
                 policy_config: dict[str, Any], torch_threads: int) -> None:
        import torch

        from polar.rl.common.envs import make_vector_env
        from polar.rl.common.rollout import Collector
        from polar.rl.policy import Policy

        torch.set_num_threads(torch_threads)
        torch.manual_seed(seed)
        self.policy = Policy.from_config(policy_config).eval()
        self.collector = Collector(make_vector_env(harness_ids, harness_kwargs), seed=seed)
        self.rng = np.random.default_rng(seed)

    def _load(self, weights: dict[str, np.ndarray]) -> None:
        import torch

        self.policy.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})

    def collect(self, weights: dict[str, np.ndarray], fn: str, *args: Any) -> Any:
        """`fn` ("module:function", an algorithm's collect function) with this worker's policy,
        collector and generator: `fn(policy, collector, rng, *args)`."""
        from polar.rl.common.algorithm import import_object

        self._load(weights)
        return import_object(fn)(self.policy, self.collector, self.rng, *args)

    def where(self) -> tuple[str, int]:
        """(Ray node id, pid): lets tests see which node a worker runs on."""
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()


class WorkerPool:
    """N rollout actors; worker w runs `harness_ids[w]` in `num_envs` sub-envs."""

    def __init__(self, harness_ids: list[str], num_envs: int, harness_kwargs: dict[str, Any],
                 seed: int, policy_config: dict[str, Any], torch_threads: int = 1,
                 num_cpus: float = 1.0) -> None:
        import ray

        self._remote = ray.remote(num_cpus=num_cpus, max_restarts=0)(_Worker)
        self.harness_ids = harness_ids
        self.num_envs = num_envs
        self.kwargs = harness_kwargs
        self.seed = seed
        self.policy_config = policy_config
        self.torch_threads = torch_threads
        self.restarts = 0
        self.actors = [self._spawn(w) for w in range(len(harness_ids))]

    def _spawn(self, w: int) -> Any:
        seed = self.seed + _WORKER_SEED_STRIDE * (w + 1) + 1_000_003 * self.restarts
        return self._remote.remote([self.harness_ids[w]] * self.num_envs, self.kwargs, seed,
                                   self.policy_config, self.torch_threads)

    def _call_all(self, method: str, *args: Any) -> list[Any]:
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        refs = [getattr(a, method).remote(*args) for a in self.actors]
        out = []
        for w, ref in enumerate(refs):
            for attempt in range(3):
                try:
                    out.append(ray.get(ref))
                    break
                except (RayActorError, WorkerCrashedError) as err:
                    self.restarts += 1
                    log.warning("rollout worker %d died (%s); replacing it (restart %d)",
                                w, type(err).__name__, self.restarts)
                    self.actors[w] = self._spawn(w)
                    if attempt == 2:
                        raise
                    ref = getattr(self.actors[w], method).remote(*args)
        return out

    def collect(self, weights_ref: Any, fn: str, *args: Any) -> list[Any]:
        """One batch per worker from the collect function `fn` ("module:function")."""
        return self._call_all("collect", weights_ref, fn, *args)

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
