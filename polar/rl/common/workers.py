"""Ray rollout workers: each actor holds a vector of envs and a CPU copy of the policy and
returns a whole batch per call (an actor call costs ~1 ms, so never one call per step).

Weights go out once per update through `ray.put`. The pool is elastic (`WorkerPool`): a
worker that dies, alone or with its node, is replaced (with a fresh seed) and asked again
where the cluster has room; where it has none, training goes on with the workers that are up
and the replacement joins when a node brings capacity back.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

log = logging.getLogger("polar.rl")

_WORKER_SEED_STRIDE = 10_007
# How long a new pool waits for all its actors before it starts with those that are up, how
# long a replacement may take to come up and redo the batch its predecessor lost, and how
# often a pool with no live worker asks whether one has been placed.
START_WAIT_S = 120.0
REPLACE_WAIT_S = 30.0
PLACE_POLL_S = 5.0


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
    """`len(harness_ids)` rollout actors, one slot each; worker w runs `harness_ids[w]` in
    `num_envs` sub-envs.

    Elastic: a slot whose actor died (its process, or its node) gets a replacement at once.
    If Ray places and starts it within `replace_wait_s`, it redoes the lost batch in the same
    call; otherwise (the cluster is short of CPUs) it stays pending, the run goes on with
    the slots that are up, and every `collect` first checks, without blocking (`ray.wait`
    with timeout 0), whether pending actors have come up since, e.g. on a node that joined.
    `collect` returns one entry per slot: a batch, or None for a slot that had no live actor.
    """

    def __init__(self, harness_ids: list[str], num_envs: int, harness_kwargs: dict[str, Any],
                 seed: int, policy_config: dict[str, Any], torch_threads: int = 1,
                 num_cpus: float = 1.0, start_wait_s: float = START_WAIT_S,
                 replace_wait_s: float = REPLACE_WAIT_S) -> None:
        import ray

        self._remote = ray.remote(num_cpus=num_cpus, max_restarts=0)(_Worker)
        self.harness_ids = harness_ids
        self.num_envs = num_envs
        self.kwargs = harness_kwargs
        self.seed = seed
        self.policy_config = policy_config
        self.torch_threads = torch_threads
        self.replace_wait_s = replace_wait_s
        self.restarts = 0
        self.renewed: set[int] = set()  # slots replaced since `Experience.renewed` last read them
        self.actors: list[Any] = []
        self._pending: dict[int, Any] = {}  # slot -> the `where` call that answers once its actor is up
        self.places: dict[int, str] = {}  # slot -> Ray node id of its live actor
        for w in range(len(harness_ids)):
            self.actors.append(None)
            self._spawn(w)
        self._await(start_wait_s)
        if self._pending:
            log.warning("rollout workers %s not placed after %.0f s (the cluster is short of CPUs); "
                        "starting with %d of %d", sorted(self._pending), start_wait_s, len(self.up), self.size)

    @property
    def size(self) -> int:
        """The configured number of workers."""
        return len(self.actors)

    @property
    def up(self) -> list[int]:
        """The slots whose actor is placed and running."""
        return [w for w in range(self.size) if w not in self._pending]

    def _spawn(self, w: int) -> None:
        seed = self.seed + _WORKER_SEED_STRIDE * (w + 1) + 1_000_003 * self.restarts
        actor = self._remote.remote([self.harness_ids[w]] * self.num_envs, self.kwargs, seed,
                                    self.policy_config, self.torch_threads)
        self.actors[w] = actor
        self._pending[w] = actor.where.remote()
        self.places.pop(w, None)

    def _replace(self, w: int, err: Exception) -> None:
        self.restarts += 1
        self.renewed.add(w)
        log.warning("rollout worker %d died (%s); replacing it (restart %d)", w, type(err).__name__, self.restarts)
        self._spawn(w)

    def _await(self, timeout: float | None, slots: list[int] | None = None) -> None:
        """Move pending slots whose actor came up within `timeout` s (0: a check that does not
        block) to the running ones; a replacement that died meanwhile is replaced again."""
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        waiting = {ref: w for w, ref in self._pending.items() if slots is None or w in slots}
        if not waiting:
            return
        done, _ = ray.wait(list(waiting), num_returns=len(waiting), timeout=timeout)
        for ref in done:
            w = waiting[ref]
            del self._pending[w]
            try:
                self.places[w] = ray.get(ref)[0]
            except (RayActorError, WorkerCrashedError) as err:
                self._replace(w, err)
                continue
            if self.restarts:
                log.info("rollout worker %d is up on node %s (%d of %d up)", w, self.places[w][:8],
                         len(self.up), self.size)

    def _wait_for_one(self) -> None:
        """Block until at least one slot is up (every actor is gone and none can be placed yet)."""
        while not self.up:
            log.warning("no rollout worker is up; waiting for the cluster to place one of %d", self.size)
            self._await(PLACE_POLL_S)

    def collect(self, weights_ref: Any, fn: str, *args: Any) -> list[Any | None]:
        """One batch per slot from the collect function `fn` ("module:function"); None for a
        slot with no live actor (pending, or lost during this call and not yet replaced)."""
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        self._await(0)  # cheap: did any pending worker come up since the last call?
        out: list[Any | None] = [None] * self.size
        for _ in range(3):
            self._wait_for_one()
            todo = [w for w in self.up if out[w] is None]
            refs = {w: self.actors[w].collect.remote(weights_ref, fn, *args) for w in todo}
            lost = []
            for w, ref in refs.items():
                try:
                    out[w] = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as err:
                    self._replace(w, err)
                    lost.append(w)
            if not lost:
                break
            self._await(self.replace_wait_s, lost)  # a replacement that comes up soon redoes the batch
            if not any(w in self.up for w in lost) and any(b is not None for b in out):
                break  # no room for them now: go on with the batches we have
        if all(b is None for b in out):
            raise RuntimeError("rollout workers: every worker died three times in one collect")
        return out

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
