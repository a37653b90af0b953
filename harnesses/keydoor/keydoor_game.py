"""KeyDoor: a small key-and-door grid game with its own, deliberately non-Gym API.

    game = KeyDoorGame(size=7, seed=3)
    game_over, reward = game.step(RIGHT)
    game.get_observation()  # {"grid": int8 array (size, size), "inventory": ["key"]}

The grid has an outer wall and an inner wall splitting it into a left and a right room.
The agent and the key start in the left room, the goal lies in the right room, and the
only way through is a locked door in the inner wall: pick up the key (stand on it, PICKUP),
stand next to the door and OPEN it, then walk to the goal (reward 1, game over).
"""

from __future__ import annotations

import numpy as np

EMPTY, WALL, KEY, DOOR_LOCKED, DOOR_OPEN, GOAL, AGENT = range(7)
CELL_NAMES = ("empty", "wall", "key", "locked door", "open door", "goal", "agent")
UP, DOWN, LEFT, RIGHT, PICKUP, OPEN = range(6)
ACTION_NAMES = ("up", "down", "left", "right", "pickup", "open")
_MOVES = {UP: (0, -1), DOWN: (0, 1), LEFT: (-1, 0), RIGHT: (1, 0)}


class KeyDoorGame:
    """Positions are (x, y) with the grid indexed grid[y, x]."""

    def __init__(self, size: int = 7, seed: int | None = None) -> None:
        if size < 5:
            raise ValueError(f"size must be at least 5, got {size}")
        rng = np.random.default_rng(seed)
        self.size = size
        self.wall_x = size // 2
        self.grid = np.zeros((size, size), dtype=np.int8)
        self.grid[0, :] = self.grid[-1, :] = self.grid[:, 0] = self.grid[:, -1] = WALL
        self.grid[:, self.wall_x] = WALL
        self.door = (self.wall_x, int(rng.integers(1, size - 1)))
        self.grid[self.door[1], self.door[0]] = DOOR_LOCKED
        left = [(x, y) for x in range(1, self.wall_x) for y in range(1, size - 1)]
        right = [(x, y) for x in range(self.wall_x + 1, size - 1) for y in range(1, size - 1)]
        a, k = rng.choice(len(left), size=2, replace=False)
        self.agent = left[int(a)]
        self.key: tuple[int, int] | None = left[int(k)]
        self.grid[self.key[1], self.key[0]] = KEY
        self.goal = right[int(rng.integers(len(right)))]
        self.grid[self.goal[1], self.goal[0]] = GOAL
        self.inventory: list[str] = []
        self.door_open = False
        self.over = False

    def step(self, action_code: int) -> tuple[bool, float]:
        """Apply one action; returns (game_over, reward)."""
        if self.over:
            return True, 0.0
        if action_code in _MOVES:
            dx, dy = _MOVES[action_code]
            x, y = self.agent[0] + dx, self.agent[1] + dy
            if self.grid[y, x] not in (WALL, DOOR_LOCKED):
                self.agent = (x, y)
            if self.agent == self.goal:
                self.over = True
                return True, 1.0
        elif action_code == PICKUP:
            if self.key is not None and self.agent == self.key:
                self.grid[self.key[1], self.key[0]] = EMPTY
                self.key = None
                self.inventory.append("key")
        elif action_code == OPEN:
            if "key" in self.inventory and not self.door_open and self.next_to_door():
                self.door_open = True
                self.grid[self.door[1], self.door[0]] = DOOR_OPEN
        else:
            raise ValueError(f"unknown action code {action_code!r}; expected 0..5")
        return False, 0.0

    def next_to_door(self) -> bool:
        return abs(self.agent[0] - self.door[0]) + abs(self.agent[1] - self.door[1]) == 1

    def get_observation(self) -> dict:
        grid = self.grid.copy()
        grid[self.agent[1], self.agent[0]] = AGENT
        return {"grid": grid, "inventory": list(self.inventory)}
