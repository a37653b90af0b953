"""`minigrid:<EnvId>`: MiniGrid and BabyAI grid worlds, with text views and symbolic state."""

from __future__ import annotations

import contextlib
import io
import string
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401 - registers the MiniGrid and BabyAI env ids
import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT
from minigrid.envs import GoToDoorEnv, GoToObjectEnv
from minigrid.minigrid_env import MiniGridEnv

from polar.domains.minigrid import obs as minigrid_obs
from polar.domains.minigrid.memory_reader import READER
from polar.domains.minigrid.state import (  # noqa: F401 - DIRECTIONS, DIR_VECTORS, PREDICATE_VOCABULARY: shared names
    _STATE_NAMES,
    DIR_VECTORS,
    DIRECTIONS,
    PREDICATE_VOCABULARY,
    _cell_code,
    grid_state,
)
from polar.errors import ConfigError
from polar.harnesses.base import Harness, HarnessSpec, StepResult, SymbolicObject, SymbolicState
from polar.harnesses.gym import _first_paragraph, make_gym_env
from polar.harnesses.spaces import HARNESS_SAMPLER, sampler_seed, space_to_spec

MISSION_CHARSET = string.ascii_letters + string.digits + " ,.'-_"
# The envs that reward only the `done` action taken next to the target (their own `step`):
# reaching the target is not yet success there, declaring it is.
DONE_TO_SUCCEED = (GoToDoorEnv, GoToObjectEnv)


def _obj_state(obj: Any) -> str | None:
    if obj.type != "door":
        return None
    return "open" if obj.is_open else ("locked" if obj.is_locked else "closed")


def check_id(harness_id: str, env_id: str) -> None:
    """Raise UnknownHarness unless `env_id` is a MiniGrid/BabyAI id (registered by importing
    minigrid, above) or an importable entry point."""
    from polar.harnesses.registry import check_gym_id

    check_gym_id(harness_id, env_id)


def registered_ids() -> list[str]:
    """The gymnasium ids MiniGrid and BabyAI register."""
    return [env_id for env_id, spec in gym.registry.items() if "minigrid" in str(spec.entry_point)]


class MiniGridHarness(Harness):
    """`full_grid: true` (a harness kwarg) shows the whole grid (MiniGrid's FullyObsWrapper:
    object, colour, state per cell, the agent as an object whose state is its direction)
    instead of the agent's 7x7 egocentric view: the `full` observation of pure-RL controls.
    `odometry: true` adds the agent's own pose to each observation (`agent_pos`, and
    `agent_dir`, the same as `direction`): odometry a robot has, and what the agent's memory
    of what it has seen needs to place the view on a map (`capability("memory_reader")`,
    `polar/domains/minigrid/memory_reader.py`, docs/memory.md); no grid is read for it.
    `rgb: true` shows the agent's view as pixels (MiniGrid's RGBImgPartialObsWrapper,
    `tile_size` px per cell) instead of the symbolic index grid. `fast_obs: false` keeps
    MiniGrid's own observation encoding (the default one-pass encoding gives the same arrays,
    `polar/domains/minigrid/obs.py`)."""

    def __init__(self, env_id: str, description: str | None = None, full_grid: bool = False, rgb: bool = False,
                 tile_size: int = 8, fast_obs: bool = True, odometry: bool = False, **kwargs: Any) -> None:
        if full_grid and rgb:
            raise ConfigError(f"{env_id}: full_grid and rgb together are not offered (pick one)")
        self.env = make_gym_env(env_id, **kwargs)
        if fast_obs:  # the same observations, encoded in one pass (polar/domains/minigrid/obs.py)
            minigrid_obs.install(self.env.unwrapped)
        if full_grid:
            from minigrid.wrappers import FullyObsWrapper

            self.env = (minigrid_obs.FastFullyObsWrapper if fast_obs else FullyObsWrapper)(self.env)
        if rgb:
            from minigrid.wrappers import RGBImgPartialObsWrapper

            self.env = RGBImgPartialObsWrapper(self.env, tile_size=tile_size)
        self.full_grid = full_grid
        self.odometry = odometry
        self._reads_view = odometry and not (full_grid or rgb)  # the memory reads the index view
        u = self.env.unwrapped
        if not isinstance(u, MiniGridEnv):
            raise TypeError(f"{env_id} is not a MiniGrid environment")
        self._seeded = False
        img = self.env.observation_space["image"]
        self._observation_space = gym.spaces.Dict({
            "image": img,
            "direction": gym.spaces.Discrete(4),
            "mission": gym.spaces.Text(max_length=512, charset=MISSION_CHARSET),
            **({"agent_pos": gym.spaces.MultiDiscrete([u.width, u.height]), "agent_dir": gym.spaces.Discrete(4)}
               if odometry else {}),
        })
        doc = _first_paragraph(type(u).__doc__)
        self.spec = HarnessSpec(
            id=f"minigrid:{env_id}",
            description=description or (
                f"MiniGrid grid world {env_id}. {doc} "
                + (f"The agent sees the whole {img.shape[0]}x{img.shape[1]} grid (itself as an object "
                   "whose state is its direction); " if full_grid else
                   f"The agent sees a {img.shape[0]}x{img.shape[1]} egocentric view (walls block sight); ")
                + ("the image is RGB pixels. " if rgb else
                   "the image channels are object type, colour and state indices. ")
                + ("agent_pos (x right, y down) and agent_dir (0 east .. 3 north) are the agent's own pose "
                   "(odometry). " if odometry else "")
                + "Reward 1 - 0.9 * steps / max_steps on success, else 0."
            ),
            observation_space=space_to_spec(self._observation_space),
            action_space=space_to_spec(self.env.action_space),
            action_meanings=[a.name for a in u.actions],
            reward_range=(0.0, 1.0),
            # BabyAI's generated levels set their step limit per mission, at reset (0 before):
            # no fixed limit then, the env truncates its own episodes.
            max_steps=int(u.max_steps) or None,
            reports_success=True,  # info["success"]: the episode ended with a positive reward
            reward_marks_success=True,
            done_action="done" if isinstance(u, DONE_TO_SUCCEED) else None,
            predicate_vocabulary=PREDICATE_VOCABULARY,
            # How a policy reads `image`: symbolic ids per cell, or pixels (polar/rl/common/observations.py).
            extra={"observation_kinds": {"image": "image" if rgb else "index_grid"}},
        )

    @property
    def _grid(self) -> MiniGridEnv:
        return self.env.unwrapped

    def capabilities(self) -> set[str]:
        return {"grid", "memory_reader"} if self._reads_view else {"grid"}

    def capability(self, name: str) -> Any:
        """`"grid"`: the underlying MiniGridEnv (full grid, agent pose, carried object), for
        skills that read more than the agent's partial view. `"memory_reader"` (with
        `odometry`): how one observation reads into world cells, for the agent's memory; a
        function of the observation alone, it reads no simulator state."""
        if name == "memory_reader" and self._reads_view:
            return READER
        return self._grid if name == "grid" else super().capability(name)

    @property
    def observation_space(self) -> gym.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.env.action_space

    def _obs(self, obs: dict[str, Any]) -> dict[str, Any]:
        out = {"image": obs["image"], "direction": int(obs["direction"]), "mission": str(obs["mission"])}
        if self.odometry:  # the agent's own pose, as odometry gives it
            u = self._grid
            out["agent_pos"] = np.array([int(u.agent_pos[0]), int(u.agent_pos[1])], dtype=np.int64)
            out["agent_dir"] = int(u.agent_dir)
        return out

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None and not self._seeded:
            self.env.action_space.seed(sampler_seed(seed, HARNESS_SAMPLER))  # not the game's stream
            self._seeded = True
        with contextlib.redirect_stdout(io.StringIO()):  # BabyAI's level generator prints its retries
            obs, info = self.env.reset(seed=seed, options=options)
        return self._obs(obs), info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["success"] = bool(terminated and reward > 0)
        return self._obs(obs), float(reward), terminated, truncated, info

    def close(self) -> None:
        self.env.close()

    # --- planner views -------------------------------------------------------------------

    def symbolic_state(self) -> SymbolicState:
        u = self._grid
        objects: list[SymbolicObject] = []
        for j in range(u.height):
            for i in range(u.width):
                obj = u.grid.get(i, j)
                if obj is None or obj.type in ("wall", "empty", "floor"):
                    continue
                objects.append(SymbolicObject(type=obj.type, color=obj.color, pos=(i, j), state=_obj_state(obj)))
        carrying = None if u.carrying is None else (u.carrying.type, u.carrying.color)

        def empty(cell: tuple[int, int]) -> bool:
            return 0 <= cell[0] < u.width and 0 <= cell[1] < u.height and u.grid.get(*cell) is None

        return grid_state(objects, self._walkable, empty, (int(u.agent_pos[0]), int(u.agent_pos[1])),
                          int(u.agent_dir), carrying, str(u.mission))

    def _walkable(self, cell: tuple[int, int]) -> bool:
        u = self._grid
        if not (0 <= cell[0] < u.width and 0 <= cell[1] < u.height):
            return False
        obj = u.grid.get(*cell)
        return obj is None or obj.type not in ("wall", "lava")

    def render_text(self, obs: dict[str, Any]) -> str:
        """The agent's egocentric view as a grid (agent `^^` at the bottom centre, facing up)
        plus a list of visible objects with their offsets, then the mission. With `full_grid`,
        the whole grid (x to the right, y down) with the agent as an arrow."""
        if self.full_grid:
            return self._render_full(obs)
        img = np.asarray(obs["image"])
        w, h = img.shape[0], img.shape[1]
        ax, ay = w // 2, h - 1
        rows, seen = [], []
        for j in range(h):
            cells = []
            for i in range(w):
                if (i, j) == (ax, ay):
                    cells.append("^^")
                    continue
                o, c, s = (int(v) for v in img[i, j])
                cells.append(_cell_code(o, c, s))
                name = IDX_TO_OBJECT[o]
                if name in ("key", "ball", "box", "door", "goal", "lava"):
                    ahead, right = ay - j, i - ax
                    where = [f"{ahead} ahead"] if ahead else []
                    if right:
                        where.append(f"{abs(right)} {'right' if right > 0 else 'left'}")
                    label = name if name in ("goal", "lava") else f"{IDX_TO_COLOR[c]} {name}"
                    if name == "door":
                        label += f" ({_STATE_NAMES[s]})"
                    seen.append(f"{label}: {', '.join(where) or 'here'}")
            rows.append(" ".join(cells))
        u = self._grid
        carrying = f"{u.carrying.color} {u.carrying.type}" if u.carrying else "nothing"
        lines = [
            "View (you are ^^ facing up; ## wall, . empty, K key, A ball, B box, D door, "
            "d open door, L locked door, GG goal, ~~ lava; second letter = colour initial):",
            *rows,
            "Visible: " + ("; ".join(seen) if seen else "nothing"),
            f"Facing: {DIRECTIONS[int(obs['direction'])]}. Carrying: {carrying}.",
            f"Mission: {obs['mission']}",
        ]
        return "\n".join(lines)

    def _render_full(self, obs: dict[str, Any]) -> str:
        img = np.asarray(obs["image"])
        arrows = (">>", "vv", "<<", "^^")
        rows = [" ".join(arrows[int(img[i, j, 2]) % 4] if IDX_TO_OBJECT[int(img[i, j, 0])] == "agent"
                         else _cell_code(*(int(v) for v in img[i, j])) for i in range(img.shape[0]))
                for j in range(img.shape[1])]
        u = self._grid
        carrying = f"{u.carrying.color} {u.carrying.type}" if u.carrying else "nothing"
        return "\n".join([
            "Grid (x right, y down; you are the arrow; ## wall, . empty, K key, A ball, B box, "
            "D door, d open door, L locked door, GG goal, ~~ lava; second letter = colour initial):",
            *rows, f"Carrying: {carrying}.", f"Mission: {obs['mission']}",
        ])

