"""A maze map as a planner reads it: cells, walls, neighbours, shortest paths, text.

Pure Python, no simulator: the `maze:` harness, the maze planner and the `reach` skill all
use it. Cells are `(row, col)`, row 0 at the top, the same indices as Gymnasium-Robotics'
`maze_map` (its `goal_cell` / `reset_cell` reset options). The simulator's (x, y) plane has
its origin at the map's centre, x to the right and y *up*, one cell = `scale` units:

    x = (col + 0.5) * scale - width * scale / 2
    y = height * scale / 2 - (row + 0.5) * scale

A map is given as a list of strings, one per row (or the package's list of lists):
`1`/`#` wall, `0`/`.` free, `g` a goal cell, `r` a reset (start) cell, `c` both. Without any
`g`/`r`/`c` every free cell can be a start or a goal; with only goals, any free cell can be
a start, and so on (the package's rule).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from polar.errors import ConfigError

Cell = tuple[int, int]
WALL, FREE, GOAL, RESET, COMBINED = "#", ".", "g", "r", "c"
_CHARS = {"1": WALL, "#": WALL, "0": FREE, ".": FREE, "g": GOAL, "r": RESET, "c": COMBINED}
_PACKAGE = {WALL: 1, FREE: 0, GOAL: "g", RESET: "r", COMBINED: "c"}
# neighbour offsets in the order a planner reads them, with compass names (north = row - 1)
DIRECTIONS: tuple[tuple[str, int, int], ...] = (
    ("north", -1, 0), ("east", 0, 1), ("south", 1, 0), ("west", 0, -1))


@dataclass(frozen=True)
class MazeMap:
    """An immutable maze: `rows[r][c]` is one of `# . g r c`."""

    rows: tuple[str, ...]
    scale: float = 1.0

    @classmethod
    def parse(cls, spec: Sequence[Any], scale: float = 1.0, source: str = "maze_map") -> MazeMap:
        """A map from strings (`"1 0 g"`, spaces ignored) or the package's lists of 1/0/'g'/'r'/'c'.

        Raises ConfigError naming `source` and the row/column of the problem: unknown
        characters, rows of different length, an open border (the ball would leave the
        maze), or no free cell."""
        if isinstance(spec, str) or not isinstance(spec, Sequence) or not spec:
            raise ConfigError(f"{source}: expected a non-empty list of rows (strings like '1001'), got {spec!r}")
        rows: list[str] = []
        for r, row in enumerate(spec):
            if isinstance(row, int):  # YAML reads an unquoted 11111 as a number
                row = str(row)
            if isinstance(row, str):
                cells: list[Any] = list(row.replace(" ", ""))
            elif isinstance(row, Sequence):
                cells = list(row)
            else:
                raise ConfigError(f"{source}: row {r}: expected a string like '1001' or a list, got {row!r}")
            out = []
            for c, v in enumerate(cells):
                ch = _CHARS.get(str(v).strip().lower())
                if ch is None:
                    raise ConfigError(f"{source}: row {r}, column {c}: {v!r} is not a maze cell "
                                      "(1 or # wall, 0 or . free, g goal, r reset, c goal or reset)")
                out.append(ch)
            rows.append("".join(out))
        width = len(rows[0])
        for r, row in enumerate(rows):
            if len(row) != width:
                raise ConfigError(f"{source}: row {r} has {len(row)} cells, row 0 has {width}")
        if len(rows) < 3 or width < 3:
            raise ConfigError(f"{source}: a maze needs at least 3x3 cells (a wall border around free cells)")
        for r, row in enumerate(rows):
            for c, ch in enumerate(row):
                border = r in (0, len(rows) - 1) or c in (0, width - 1)
                if border and ch != WALL:
                    raise ConfigError(f"{source}: row {r}, column {c} is on the border and must be a wall "
                                      "(otherwise the ball can leave the maze)")
        m = cls(tuple(rows), float(scale))
        if not m.free_cells:
            raise ConfigError(f"{source}: the maze has no free cell")
        return m

    # --- shape ----------------------------------------------------------------------------

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.rows[0])

    def inside(self, cell: Cell) -> bool:
        return 0 <= cell[0] < self.height and 0 <= cell[1] < self.width

    def is_free(self, cell: Cell) -> bool:
        return self.inside(cell) and self.rows[cell[0]][cell[1]] != WALL

    @cached_property
    def free_cells(self) -> tuple[Cell, ...]:
        return tuple((r, c) for r, row in enumerate(self.rows) for c, ch in enumerate(row) if ch != WALL)

    def cells_marked(self, mark: str) -> tuple[Cell, ...]:
        return tuple((r, c) for r, c in self.free_cells if self.rows[r][c] == mark)

    @cached_property
    def goal_cells(self) -> tuple[Cell, ...]:
        """Where a reset may put the goal (the package's rule, see the module docstring)."""
        return self._locations(GOAL, RESET)

    @cached_property
    def start_cells(self) -> tuple[Cell, ...]:
        """Where a reset may put the agent."""
        return self._locations(RESET, GOAL)

    def _locations(self, own: str, other: str) -> tuple[Cell, ...]:
        combined = self.cells_marked(COMBINED)
        mine = self.cells_marked(own)
        if not mine and not combined:
            return self.free_cells if not self.cells_marked(other) else self.cells_marked(FREE)
        return mine + combined

    def neighbours(self, cell: Cell) -> Iterator[tuple[str, Cell]]:
        """Free cells sharing a side with `cell`, as (direction, cell)."""
        for name, dr, dc in DIRECTIONS:
            n = (cell[0] + dr, cell[1] + dc)
            if self.is_free(n):
                yield name, n

    @cached_property
    def adjacency(self) -> tuple[tuple[Cell, Cell], ...]:
        """Every ordered pair of free cells that share a side (both directions)."""
        return tuple((a, b) for a in self.free_cells for _, b in self.neighbours(a))

    def to_package(self) -> list[list[int | str]]:
        """The map in Gymnasium-Robotics' own format (`maze_map=`)."""
        return [[_PACKAGE[ch] for ch in row] for row in self.rows]

    # --- geometry -------------------------------------------------------------------------

    def cell_to_xy(self, cell: Cell) -> tuple[float, float]:
        """The centre of a cell in the simulator's plane."""
        r, c = cell
        return ((c + 0.5) * self.scale - self.width * self.scale / 2,
                self.height * self.scale / 2 - (r + 0.5) * self.scale)

    def xy_to_cell(self, x: float, y: float) -> Cell:
        """The cell holding point (x, y) (cells are half-open squares; may lie outside the map)."""
        return (math.floor((self.height * self.scale / 2 - y) / self.scale),
                math.floor((x + self.width * self.scale / 2) / self.scale))

    # --- search ---------------------------------------------------------------------------

    def distances(self, start: Cell) -> dict[Cell, int]:
        """Moves (between side-sharing free cells) from `start` to every cell it can reach."""
        if not self.is_free(start):
            return {}
        dist = {start: 0}
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            for _, n in self.neighbours(cell):
                if n not in dist:
                    dist[n] = dist[cell] + 1
                    queue.append(n)
        return dist

    def shortest_path(self, start: Cell, goal: Cell) -> list[Cell] | None:
        """A shortest path of cells from `start` to `goal`, both included; None if there is none.

        Ties are broken by the neighbour order north, east, south, west (deterministic)."""
        dist = self.distances(goal)  # walk back down the distance field from the start
        if start not in dist:
            return None
        path = [start]
        while path[-1] != goal:
            path.append(min((n for _, n in self.neighbours(path[-1]) if n in dist), key=dist.__getitem__))
        return path

    # --- text -----------------------------------------------------------------------------

    def render(self, agent: Cell | None = None, goal: Cell | None = None) -> str:
        """The map as characters with row and column numbers: `#` wall, `.` free, `A` the
        agent, `G` the goal, `*` the agent on the goal cell."""
        w = len(str(self.width - 1)) + 1  # characters per cell, so column numbers line up
        lines = ["    " + "".join(f"{c:>{w}}" for c in range(self.width))]
        for r, row in enumerate(self.rows):
            cells = []
            for c, ch in enumerate(row):
                here = (r, c)
                mark = WALL if ch == WALL else FREE
                if here == agent and here == goal:
                    mark = "*"
                elif here == agent:
                    mark = "A"
                elif here == goal:
                    mark = "G"
                cells.append(f"{mark:>{w}}")
            lines.append(f"{r:>3} " + "".join(cells))
        return "\n".join(lines)


def maze_from_spec(spec: Any) -> MazeMap | None:
    """The maze a `maze:` harness publishes in `spec.extra["maze"]`, or None for other harnesses."""
    data = (getattr(spec, "extra", None) or {}).get("maze")
    if not isinstance(data, dict) or "rows" not in data:
        return None
    return MazeMap.parse(data["rows"], scale=float(data.get("scale", 1.0)), source=f"{spec.id}: spec.extra.maze")


def random_maze(rng: np.random.Generator, height: int, width: int, openness: float = 0.2) -> MazeMap:
    """A random `height` x `width` maze (both odd, >= 5) inside a wall border: a depth-first
    spanning tree over the cells at odd (row, col) (so every free cell is reachable), then a
    fraction `openness` of the remaining inner walls knocked down (loops and open areas)."""
    if height < 5 or width < 5 or height % 2 == 0 or width % 2 == 0:
        raise ConfigError(f"random_maze: size {height}x{width}: both sides must be odd and >= 5")
    grid = [[WALL] * width for _ in range(height)]
    start = (1, 1)
    grid[1][1] = FREE
    stack = [start]
    while stack:
        r, c = stack[-1]
        options = [(r + 2 * dr, c + 2 * dc, dr, dc) for _, dr, dc in DIRECTIONS
                   if 0 < r + 2 * dr < height - 1 and 0 < c + 2 * dc < width - 1
                   and grid[r + 2 * dr][c + 2 * dc] == WALL]
        if not options:
            stack.pop()
            continue
        nr, nc, dr, dc = options[int(rng.integers(len(options)))]
        grid[r + dr][c + dc] = grid[nr][nc] = FREE
        stack.append((nr, nc))
    inner = [(r, c) for r in range(1, height - 1) for c in range(1, width - 1) if grid[r][c] == WALL]
    for r, c in inner:
        if rng.random() < openness:
            grid[r][c] = FREE
    maze = MazeMap(tuple("".join(row) for row in grid))
    reachable = maze.distances(start)  # a knocked-down pillar can be an island: wall it again
    return MazeMap(tuple("".join(ch if ch == WALL or (r, c) in reachable else WALL for c, ch in enumerate(row))
                         for r, row in enumerate(maze.rows)))
