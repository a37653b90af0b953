"""`GotoEnv`: the goal-conditioned Gymnasium env the goto skill is trained on.

Use it as a harness through its entry point, with no registration step:
`gym:polar.domains.minigrid.goto_env:GotoEnv` (see `skills/recipes/goto_harnesses/`).
"""

from __future__ import annotations

import contextlib
import io
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.world_object import Ball, Box, Key, WorldObj
from minigrid.minigrid_env import MiniGridEnv

from polar.domains.minigrid import obs as minigrid_obs
from polar.domains.minigrid.goto import (
    COLORS,
    CROP,
    NUM_ACTIONS,
    TARGET_TYPES,
    features,
    observation_space,
    succeeded,
)
from polar.domains.minigrid.harness import DIR_VECTORS
from polar.errors import ConfigError

PASSABLE = ("goal", "floor")


def passable(o: WorldObj | None) -> bool:
    return o is None or o.type in PASSABLE or (o.type == "door" and o.is_open)


def walk_distances(env: MiniGridEnv) -> np.ndarray:
    """[W, H] int: moves from the agent to each cell using only passable cells (-1: unreachable)."""
    w, h = env.width, env.height
    dist = np.full((w, h), -1, int)
    start = (int(env.agent_pos[0]), int(env.agent_pos[1]))
    dist[start] = 0
    q = deque([start])
    while q:
        x, y = q.popleft()
        for dx, dy in DIR_VECTORS:
            nx, ny = x + dx, y + dy
            if 0 <= nx < w and 0 <= ny < h and dist[nx, ny] < 0 and passable(env.grid.get(nx, ny)):
                dist[nx, ny] = dist[x, y] + 1
                q.append((nx, ny))
    return dist


def reachable(env: MiniGridEnv) -> np.ndarray:
    """[W, H] bool: cells the agent can walk to using only left/right/forward."""
    return walk_distances(env) >= 0


def target_distance(env: MiniGridEnv, dist: np.ndarray, pos: tuple[int, int], obj: str) -> int:
    """Moves to reach an object at `pos` (stand on a goal, stand next to anything else); -1: never."""
    x, y = pos
    if obj == "goal":
        return int(dist[x, y])
    near = [int(dist[x + dx, y + dy]) for dx, dy in DIR_VECTORS
            if 0 <= x + dx < env.width and 0 <= y + dy < env.height and dist[x + dx, y + dy] >= 0]
    return min(near) if near else -1


def _can_reach(env: MiniGridEnv, reach: np.ndarray, pos: tuple[int, int], obj: str) -> bool:
    return target_distance(env, np.where(reach, 0, -1), pos, obj) >= 0


class GotoEnv(gym.Env):
    """Goal-conditioned goto over MiniGrid layouts, for training the skill.

    Each reset picks a layout (a MiniGrid/BabyAI env id) at random, resets it, randomises
    it (doors opened, the key already carried, distractor objects, the agent moved), then
    samples a reachable target (object type, colour or "any colour") present in the grid:
    uniform over the types present, or (probability `p_far`) the farthest reachable object.
    Reward on success is MiniGrid's 1 - 0.9 * t / T; the episode terminates on success and
    is truncated at T = `steps_per_side` * (width + height). Stepping onto a goal that is not
    the target ends the episode as a failure (the base env terminates there).
    """

    metadata = {"render_modes": [], "observation_kinds": {"grid": "index_grid"}}  # symbolic ids, not pixels

    def __init__(
        self,
        layouts: list[str] | str = "MiniGrid-DoorKey-8x8-v0",
        crop: int = CROP,
        p_open_doors: float = 0.5,
        p_carry_key: float = 0.25,
        p_distractors: float = 0.5,
        max_distractors: int = 3,
        p_move_agent: float = 0.5,
        p_any_color: float = 0.3,
        p_far: float = 0.3,
        steps_per_side: int = 5,
    ) -> None:
        self.layouts = [layouts] if isinstance(layouts, str) else list(layouts)
        if not self.layouts:
            raise ConfigError("GotoEnv: layouts is empty")
        self.crop = crop
        self.p_open_doors, self.p_carry_key = p_open_doors, p_carry_key
        self.p_distractors, self.max_distractors = p_distractors, max_distractors
        self.p_move_agent, self.p_any_color, self.p_far = p_move_agent, p_any_color, p_far
        self.steps_per_side = steps_per_side
        self.observation_space = observation_space(crop)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self._envs: dict[str, MiniGridEnv] = {}
        self.base: MiniGridEnv | None = None
        self.target: tuple[str, str | None] = ("key", None)
        self.t, self.limit = 0, 1

    def _base(self, layout: str) -> MiniGridEnv:
        if layout not in self._envs:
            import minigrid  # noqa: F401 - registers the env ids

            env = gym.make(layout).unwrapped
            if not isinstance(env, MiniGridEnv):
                raise ConfigError(f"GotoEnv: layout {layout!r} is not a MiniGrid env")
            env.max_steps = 10**9  # this wrapper owns the step limit
            minigrid_obs.install(env)  # base.step's view is discarded (see _obs): at least make it cheap
            self._envs[layout] = env
        return self._envs[layout]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        for _ in range(100):
            layout = self.layouts[int(rng.integers(len(self.layouts)))]
            base = self._base(layout)
            with contextlib.redirect_stdout(io.StringIO()):  # BabyAI prints rejected samples
                base.reset(seed=int(rng.integers(2**31)))
            self._randomise(base, rng)
            target = self._sample_target(base, rng)
            if target is not None:
                break
        else:
            raise RuntimeError(f"GotoEnv: no reachable target in 100 resets of {self.layouts}")
        self.base, self.target, self.t = base, target, 0
        self.limit = self.steps_per_side * (base.width + base.height)
        return self._obs(), {"layout": layout, "target": list(target)}

    def _randomise(self, env: MiniGridEnv, rng: np.random.Generator) -> None:
        cells = env.grid.grid
        if rng.random() < self.p_open_doors:
            for o in cells:
                if o is not None and o.type == "door":
                    o.is_open, o.is_locked = True, False
        if env.carrying is None and rng.random() < self.p_carry_key:
            keys = [i for i, o in enumerate(cells) if o is not None and o.type == "key"]
            if keys:
                i = keys[int(rng.integers(len(keys)))]
                env.carrying, cells[i] = cells[i], None
                env.carrying.cur_pos = np.array([-1, -1])
        if rng.random() < self.p_distractors:
            for _ in range(int(rng.integers(1, self.max_distractors + 1))):
                kind = (Key, Ball, Box)[int(rng.integers(3))]
                color = COLORS[int(rng.integers(len(COLORS)))]
                self._place(env, kind(color), rng)
        if rng.random() < self.p_move_agent:
            free = [i for i, o in enumerate(cells) if o is None]
            if free:
                i = free[int(rng.integers(len(free)))]
                env.agent_pos = (i % env.width, i // env.width)
                env.agent_dir = int(rng.integers(4))

    @staticmethod
    def _place(env: MiniGridEnv, obj: WorldObj, rng: np.random.Generator) -> None:
        ax, ay = int(env.agent_pos[0]), int(env.agent_pos[1])
        free = [i for i, o in enumerate(env.grid.grid) if o is None and (i % env.width, i // env.width) != (ax, ay)]
        if free:
            i = free[int(rng.integers(len(free)))]
            env.grid.set(i % env.width, i // env.width, obj)
            obj.init_pos = obj.cur_pos = np.array([i % env.width, i // env.width])

    def _sample_target(self, env: MiniGridEnv, rng: np.random.Generator) -> tuple[str, str | None] | None:
        dist = walk_distances(env)
        cands: list[tuple[int, WorldObj]] = []
        for idx, o in enumerate(env.grid.grid):
            if o is not None and o.type in TARGET_TYPES:
                d = target_distance(env, dist, (idx % env.width, idx // env.width), o.type)
                if d >= 0:
                    cands.append((d, o))
        if rng.random() < self.p_far and cands:
            # The farthest reachable object: long routes through doorways are rare otherwise.
            far = max(d for d, _ in cands)
            order = [o for d, o in cands if d == far] + [o for d, o in cands if d != far]
        else:
            # Uniform over types first, so goal/door are not drowned by distractor balls and boxes.
            by_type: dict[str, list[WorldObj]] = {}
            for _, o in cands:
                by_type.setdefault(o.type, []).append(o)
            types = sorted(by_type)
            rng.shuffle(types)
            order = [by_type[t][int(rng.integers(len(by_type[t])))] for t in types]
        for o in order:
            color = None if o.type == "goal" or rng.random() < self.p_any_color else o.color
            if not succeeded(env, o.type, color):
                return o.type, color
        return None

    def _obs(self) -> dict[str, np.ndarray]:
        assert self.base is not None
        return features(self.base, *self.target, crop=self.crop)

    def step(self, action: Any):
        assert self.base is not None, "call reset() first"
        a = int(action)
        if not 0 <= a < NUM_ACTIONS:
            raise ValueError(f"GotoEnv: action {a} is not in 0..{NUM_ACTIONS - 1} (left, right, forward)")
        _, _, base_done, _, _ = self.base.step(a)
        self.t += 1
        success = succeeded(self.base, *self.target)
        terminated = success or base_done
        truncated = not terminated and self.t >= self.limit
        reward = 1.0 - 0.9 * self.t / self.limit if success else 0.0
        info: dict[str, Any] = {}
        if terminated or truncated:
            info["success"] = success
        return self._obs(), reward, terminated, truncated, info
