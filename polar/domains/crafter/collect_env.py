"""`CollectEnv`: the goal-conditioned Gymnasium env the `collect(resource)` skill is trained on.

Actions: Crafter's first six (noop, move left/right/up/down, do). Use it as a harness through its entry point: `gym:polar.domains.crafter.collect_env:CollectEnv`
(skills/recipes/crafter_collect.yaml). Each episode is one skill call in a real Crafter world:

- a world: `reset(seed=s)` makes the world of seed s; without a seed a new world is drawn from
  the env's generator every `episodes_per_world` episodes (generating a world costs as much
  as a few hundred steps), in between the same world is reused from a new start;
- a target (`polar.domains.crafter.collect.TARGETS`) drawn uniformly, the tools Crafter
  requires to collect it put in the inventory (with the lower pickaxes, to dig towards it),
  food or drink lowered for a cow or water (so eating and drinking raise them), a table or
  furnace built on a free cell for those targets;
- a start (`stage`): the player moved to a free walkable cell from which one cell of the
  target is within the 9x7 view (probability `p_visible`), else within `far` cells.

That staging reads the whole world, as a curriculum does; the policy never does: it reads the
view (`collect.features`). Reward: +1 when the target's count rises (or, for a station, one is
within the 3x3 cells around the player), which ends the episode; a potential-based shaping
term `shaping * (d_before - d_after)` on the Manhattan distance to the nearest target cell in
view (`max_distance` when none is); -1 when the player dies (terminated). Episodes are
truncated after `max_steps`. Frames are not rendered (the policy does not read them), which
makes a step about 4x cheaper than the harness's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from polar.domains.crafter import collect, view
from polar.domains.crafter.harness import _seeded_env_class
from polar.domains.crafter.staging import STAGE_TRIES, stage, world_cells
from polar.errors import ConfigError

__all__ = ["DEFAULT_TARGETS", "MAX_DISTANCE", "CollectEnv", "StagedWorlds", "reset_player", "stage", "world_cells"]

MAX_DISTANCE = 12  # the view's farthest cell is 4 + 3 = 7 away: "none in view" is farther
# The skill acts with Crafter's first six actions (noop, the four moves, do): collecting needs no
# other, and a policy that may sleep, place or craft wastes what it collects (a first run with
# all 17 slept next to zombies). The same indices in the harness: Discrete(6) fits Discrete(17).
ACTIONS = 6
# Diamonds lie deep inside stone, a few per world: most worlds offer no start near one, so the
# default targets leave it out (a run may still name it).
DEFAULT_TARGETS = tuple(n for n in collect.NAMES if n != "diamond")


def _unrendered_env_class() -> type:
    """The harness's seeded crafter.Env, without drawing frames."""

    class Unrendered(_seeded_env_class()):
        def _obs(self) -> None:
            return None

    return Unrendered


def reset_player(player: Any) -> None:
    """A fresh inventory and full vitals between episodes in the same world."""
    import crafter

    for name, info in crafter.constants.items.items():
        player.inventory[name] = info["initial"]
    player.sleeping = False
    player._hunger = player._thirst = player._fatigue = player._recover = 0


class StagedWorlds(gym.Env):
    """The worlds of a skill's training env: one Crafter world (unrendered) reused for
    `episodes_per_world` staged starts, since making one costs as much as a few hundred steps."""

    def __init__(self, episodes_per_world: int) -> None:
        self.episodes_per_world = int(episodes_per_world)
        self.action_space = gym.spaces.Discrete(ACTIONS)
        self.env = _unrendered_env_class()(length=None, reward=False, seed=0)
        self._worlds_left = 0

    def _new_world(self, seed: int) -> None:
        self.env._seed, self.env._episode = int(seed), 0
        self.env.reset()
        self._worlds_left = self.episodes_per_world

    def _start(self, choices: list[str], chosen: str | None, staging: Callable[[str], Any]) -> str:
        """Stage a start for `chosen` (else one of `choices`, drawn) with `staging`, which says
        whether this world offered one; a new world where the last one is used up or dead."""
        rng = self.np_random
        for attempt in range(STAGE_TRIES):
            if self._worlds_left <= 0 or self.env._player is None or self.env._player.health <= 0:
                self._new_world(int(rng.integers(2**30)))
            reset_player(self.env._player)
            name = chosen or choices[int(rng.integers(len(choices)))]
            if staging(name):
                self._worlds_left -= 1
                return name
            if attempt % 5 == 4:
                self._worlds_left = 0  # this world offers few starts: draw another
        raise RuntimeError(f"{type(self).__name__}: no start for {name!r} in {STAGE_TRIES} tries")


class CollectEnv(StagedWorlds):
    """Goal-conditioned `collect(resource)` over Crafter worlds, for training the skill."""

    metadata = {"render_modes": [], "observation_kinds": collect.OBSERVATION_KINDS}

    def __init__(self, targets: list[str] | None = None, max_steps: int = 150, p_visible: float = 0.6,
                 far: int = 8, shaping: float = 0.05, episodes_per_world: int = 32) -> None:
        names = list(targets or DEFAULT_TARGETS)
        unknown = [n for n in names if n not in collect.TARGETS]
        if unknown:
            raise ConfigError(f"CollectEnv: unknown targets {unknown}; known: {', '.join(collect.NAMES)}")
        if max_steps < 1 or episodes_per_world < 1 or not 0.0 <= p_visible <= 1.0:
            raise ConfigError(f"CollectEnv: need max_steps >= 1, episodes_per_world >= 1 and 0 <= p_visible <= 1 "
                              f"(got {max_steps}, {episodes_per_world}, {p_visible})")
        self.targets, self.max_steps, self.p_visible, self.far = names, int(max_steps), float(p_visible), int(far)
        self.shaping = float(shaping)
        super().__init__(episodes_per_world)
        self.observation_space = collect.observation_space()
        self.target = names[0]
        self._steps = 0
        self._distance = MAX_DISTANCE

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._new_world(seed)
        chosen = str(options["target"]) if options and "target" in options else None
        self.target = self._start(self.targets, chosen,
                                  lambda t: stage(self.env, t, self.np_random, self.p_visible, self.far))
        self._steps = 0
        obs = self._observe()
        self._distance = self._nearest(obs["grid"])
        self._before = self._count()
        return obs, {"target": self.target}

    def _observe(self) -> dict[str, np.ndarray]:
        p = self.env._player
        sem = view.local_view(self.env._world, (int(p.pos[0]), int(p.pos[1])))
        return collect.features(sem, view.facing_index(p.facing), self.target)

    def _count(self) -> int:
        item = collect.TARGETS[self.target].item
        return 0 if item is None else int(self.env._player.inventory[item])

    def _nearest(self, grid: np.ndarray) -> int:
        cells = collect.target_cells(grid, self.target)
        if not len(cells):
            return MAX_DISTANCE
        return int(np.abs(cells - np.array(view.CENTRE)).sum(axis=1).min())

    def succeeded(self, grid: np.ndarray) -> bool:
        t = collect.TARGETS[self.target]
        if t.item is None:
            return collect.near(grid, t.thing)
        return self._count() > self._before

    def step(self, action: Any):
        self.env.step(int(action))
        self._steps += 1
        obs = self._observe()
        dead = self.env._player.health <= 0
        done = self.succeeded(obs["grid"])
        distance = self._nearest(obs["grid"])
        reward = (1.0 if done else 0.0) - (1.0 if dead else 0.0) + self.shaping * (self._distance - distance)
        self._distance = distance
        self._before = self._count()
        terminated = done or dead
        truncated = not terminated and self._steps >= self.max_steps
        return obs, float(reward), terminated, truncated, {"success": bool(done)}
