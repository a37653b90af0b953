"""Measuring goto: episodes on real MiniGrid harnesses, the shortest-path optimum, baselines.

Used by `benchmarks/goto_skill.py`, the registration script and the tests. An episode starts
from the harness's own start state (optionally with every door opened, for goto(goal) in
DoorKey), runs a policy on goto's features until success, the step budget, or the end of
the harness episode, and reports the steps next to the optimum found by breadth-first
search over agent poses (x, y, direction) with the same three actions.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from minigrid.minigrid_env import MiniGridEnv

from polar.domains.minigrid.goto import features, succeeded
from polar.domains.minigrid.goto_env import passable
from polar.domains.minigrid.harness import DIR_VECTORS
from polar.harnesses.rollout import rollout
from polar.statistics import wilson_interval


class Actor(Protocol):
    def act(self, obs: Any, deterministic: bool = True) -> Any: ...


class RandomActor:
    """Uniform over left/right/forward: the baseline every figure is compared with."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Any, deterministic: bool = True) -> int:
        return int(self.rng.integers(3))


def optimal_steps(env: MiniGridEnv, obj: str, color: str | None) -> int | None:
    """Fewest left/right/forward actions to goto(obj, color) from the current pose; None if
    unreachable. A goal cell that is not the target is avoided (stepping on it ends the episode)."""
    start = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))

    def done(x: int, y: int, d: int) -> bool:
        if obj == "goal":
            o = env.grid.get(x, y)
            return o is not None and o.type == "goal"
        fx, fy = x + DIR_VECTORS[d][0], y + DIR_VECTORS[d][1]
        if not (0 <= fx < env.width and 0 <= fy < env.height):
            return False
        o = env.grid.get(fx, fy)
        return o is not None and o.type == obj and (color is None or o.color == color)

    if done(*start):
        return 0
    dist = {start: 0}
    q = deque([start])
    while q:
        x, y, d = q.popleft()
        nxt = [(x, y, (d - 1) % 4), (x, y, (d + 1) % 4)]
        fx, fy = x + DIR_VECTORS[d][0], y + DIR_VECTORS[d][1]
        if 0 <= fx < env.width and 0 <= fy < env.height:
            o = env.grid.get(fx, fy)
            if passable(o) and not (o is not None and o.type == "goal" and obj != "goal"):
                nxt.append((fx, fy, d))
        for s in nxt:
            if s not in dist:
                dist[s] = dist[(x, y, d)] + 1
                if done(*s):
                    return dist[s]
                q.append(s)
    return None


def open_all_doors(env: MiniGridEnv) -> None:
    for o in env.grid.grid:
        if o is not None and o.type == "door":
            o.is_open, o.is_locked = True, False


@dataclass
class EpisodeResult:
    success: bool
    steps: int
    optimal: int | None
    reason: str


def goto_episode(actor: Actor, harness: Any, obj: str, color: str | None, seed: int, budget: int,
                 open_doors: bool = False, deterministic: bool = True) -> EpisodeResult:
    """One goto episode from the harness's start state for `seed` (a MiniGrid harness)."""
    obs, _ = harness.reset(seed=seed)
    env: MiniGridEnv = harness.capability("grid")
    if open_doors:
        open_all_doors(env)
    optimal = optimal_steps(env, obj, color)
    r = rollout(harness, lambda _o: int(actor.act(features(env, obj, color), deterministic=deterministic)), obs,
                max_steps=budget, stop=lambda _o, _i: succeeded(env, obj, color))
    r.raise_act_error()
    if r.stopped:
        return EpisodeResult(True, r.steps, optimal, "success" if r.steps else "already there")
    if r.harness_error is not None:
        return EpisodeResult(False, r.steps, optimal, f"harness error: {r.harness_error}")
    return EpisodeResult(False, r.steps, optimal, "episode ended" if r.ended else "budget")


@dataclass
class Summary:
    episodes: int
    successes: int
    rate: float
    ci: tuple[float, float]
    mean_steps: float  # over successful episodes
    step_ratio: float  # mean(steps / optimal) over successful episodes with optimal > 0
    unreachable: int  # episodes where no path exists (counted as failures)


def evaluate_goto(actor: Actor, harness: Any, obj: str, color: str | None, episodes: int, budget: int,
             seed: int = 10_000, open_doors: bool = False, deterministic: bool = True) -> Summary:
    res = [goto_episode(actor, harness, obj, color, seed + i, budget, open_doors, deterministic)
           for i in range(episodes)]
    ok = [r for r in res if r.success]
    ratios = [r.steps / r.optimal for r in ok if r.optimal]
    return Summary(
        episodes=len(res), successes=len(ok), rate=len(ok) / len(res),
        ci=wilson_interval(len(ok), len(res)),
        mean_steps=float(np.mean([r.steps for r in ok])) if ok else float("nan"),
        step_ratio=float(np.mean(ratios)) if ratios else float("nan"),
        unreachable=sum(r.optimal is None for r in res),
    )
