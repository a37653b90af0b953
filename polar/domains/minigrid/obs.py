"""MiniGrid's observations, encoded straight from the world grid.

`MiniGridEnv.gen_obs` builds a sliced `Grid`, rotates it `agent_dir + 1` times, masks it
cell by cell and encodes it cell by cell: about 300 us a step, most of a MiniGrid PPO run's
time (`benchmarks/minigrid_obs_bench.py`). `gen_obs` here reads the same cells through
per-direction offset tables and returns the same arrays, bit for bit
(`tests/harnesses/test_minigrid_obs.py` checks it against MiniGrid's own on every step of
random play in several envs). `full_grid` does the same for `FullyObsWrapper`.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX
from minigrid.core.world_object import Wall
from minigrid.minigrid_env import MiniGridEnv
from minigrid.wrappers import FullyObsWrapper

_EMPTY = (OBJECT_TO_IDX["empty"], 0, 0)
_UNSEEN = (0, 0, 0)
_OUTSIDE = Wall()  # what Grid.slice puts where the view leaves the grid
_AGENT = (OBJECT_TO_IDX["agent"], COLOR_TO_IDX["red"])


@functools.cache
def view_offsets(size: int, direction: int) -> tuple[tuple[int, int], ...]:
    """The offset from the agent of each cell of its `size` x `size` view facing `direction`,
    in the order `i * size + j` of view column i, row j: `gen_obs_grid`'s slice at
    `get_view_exts`, rotated left `direction + 1` times, followed on coordinates."""
    half = size // 2
    top = ((0, -half), (-half, 0), (1 - size, -half), (-half, 1 - size))[direction]
    cells = {(i, j): (top[0] + i, top[1] + j) for i in range(size) for j in range(size)}
    for _ in range(direction + 1):  # Grid.rotate_left: new (j, size - 1 - i) = old (i, j)
        cells = {(j, size - 1 - i): v for (i, j), v in cells.items()}
    return tuple(cells[(i, j)] for i in range(size) for j in range(size))


def _visible(cells: list[Any], n: int) -> list[bool]:
    """`Grid.process_vis` on the view's cells (index `i * n + j`), agent at (n // 2, n - 1)."""
    mask = [False] * (n * n)
    mask[(n // 2) * n + n - 1] = True
    for j in range(n - 1, -1, -1):
        for i in range(n - 1):
            k = i * n + j
            if not mask[k] or (cells[k] and not cells[k].see_behind()):
                continue
            mask[k + n] = True
            if j > 0:
                mask[k + n - 1] = mask[k - 1] = True
        for i in range(n - 1, 0, -1):
            k = i * n + j
            if not mask[k] or (cells[k] and not cells[k].see_behind()):
                continue
            mask[k - n] = True
            if j > 0:
                mask[k - n - 1] = mask[k - 1] = True
    return mask


def gen_obs(env: MiniGridEnv) -> dict[str, Any]:
    """What `env.gen_obs()` returns: the egocentric view image, direction and mission."""
    n = env.agent_view_size
    grid = env.grid
    w, h, flat = grid.width, grid.height, grid.grid
    ax, ay = env.agent_pos
    cells = [
        flat[(ay + dy) * w + ax + dx] if 0 <= ax + dx < w and 0 <= ay + dy < h else _OUTSIDE
        for dx, dy in view_offsets(n, env.agent_dir)
    ]
    mask = [True] * (n * n) if env.see_through_walls else _visible(cells, n)
    cells[(n // 2) * n + n - 1] = env.carrying if env.carrying else None
    codes = [(_EMPTY if c is None else c.encode()) if m else _UNSEEN for c, m in zip(cells, mask, strict=True)]
    image = np.array(codes, dtype=np.uint8).reshape(n, n, 3)
    return {"image": image, "direction": env.agent_dir, "mission": env.mission}


def full_grid(env: MiniGridEnv) -> np.ndarray:
    """What `FullyObsWrapper` shows: every cell encoded, the agent as an object whose state is
    its direction."""
    grid = env.grid
    codes = [_EMPTY if c is None else c.encode() for c in grid.grid]  # row-major: j * width + i
    image = np.array(codes, dtype=np.uint8).reshape(grid.height, grid.width, 3).transpose(1, 0, 2).copy()
    image[env.agent_pos[0], env.agent_pos[1]] = (*_AGENT, env.agent_dir)
    return image


def install(env: MiniGridEnv) -> bool:
    """Make `env.gen_obs` the fast encoding, unless its class has its own observation."""
    cls = type(env)
    if cls.gen_obs is not MiniGridEnv.gen_obs or cls.gen_obs_grid is not MiniGridEnv.gen_obs_grid:
        return False
    env.gen_obs = types.MethodType(gen_obs, env)  # type: ignore[method-assign]
    return True


class FastFullyObsWrapper(FullyObsWrapper):
    """`FullyObsWrapper`, encoding the grid in one pass."""

    def observation(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {**obs, "image": full_grid(self.unwrapped)}
