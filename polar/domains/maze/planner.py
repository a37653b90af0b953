"""The maze planner: a shortest path over the maze's cells, one `reach` call per waypoint.

It reads the map from the harness spec (`spec.extra["maze"]`, published by the `maze:`
harnesses) and the agent's cell from the symbolic state (`at_cell(r,c)`), searches a
shortest path of free cells to the goal cell (BFS), and calls the `reach` skill on the next
waypoint: the farthest cell at most `lookahead` cells ahead along the path *without a turn*
(a straight run of a corridor), or the goal itself (`reach` without arguments: the goal
point) once the goal cell is the waypoint. Every decision starts from the fresh state, so a
reach that fails or overshoots is simply replanned; after a failed reach the next waypoint is
one cell ahead. It gives up when the same call failed `max_repeats` times in a row.

Tasks: "go to the goal" (or the harness's own mission) -> `at(goal)`; "go to cell (3, 4)"
-> `at_cell(3,4)`.
"""

from __future__ import annotations

import re
from typing import Any

from polar.domains.maze.maze_map import Cell, MazeMap, maze_from_spec
from polar.domains.registry import mission_language
from polar.errors import NoSkillsError, PlannerError
from polar.planners.base import PlannerContext
from polar.planners.decisions import Decision, Finish, SkillCall

_CELL_TASK = re.compile(r"\bcell\s*\(?\s*(\d+)\s*,\s*(\d+)\s*\)?", re.IGNORECASE)
_AT_CELL = re.compile(r"^at_cell\((\d+),(\d+)\)$")
_GOAL_CELL = re.compile(r"^goal_cell\((\d+),(\d+)\)$")
OPTIONS = ("skill", "lookahead", "max_repeats")


def understands(task: str) -> bool:
    """Whether the maze planner plans `task` by its words alone: "go to the goal" or "go to
    cell (r, c)" (the harness's own mission is accepted too, once its state is known)."""
    return bool(_CELL_TASK.search(task)) or mission_language().parse_mission(task) == ["at(goal)"]



def choose_planner(task: str, spec: Any) -> tuple[str | None, str] | None:
    """The planner choice on a maze harness (the `choose_planner` hint, polar.planners.choose):
    the maze planner for the tasks it understands, else (None, why) for a language model; None
    on a harness that publishes no maze."""
    if maze_from_spec(spec) is None:
        return None
    if understands(task):
        return "maze", "a maze harness: the maze planner (shortest path over the cells, reach per waypoint)"
    return None, f"the maze planner understands 'go to the goal' and 'go to cell (r, c)', not {task!r}"

def _cell_of(predicates: list[str], pattern: re.Pattern[str]) -> Cell | None:
    for p in predicates:
        if m := pattern.match(p):
            return int(m.group(1)), int(m.group(2))
    return None


def waypoint(path: list[Cell], lookahead: int) -> Cell:
    """The farthest cell at most `lookahead` moves along `path` reached without turning."""
    if len(path) < 2:
        return path[0]
    step = (path[1][0] - path[0][0], path[1][1] - path[0][1])
    i = 1
    while i < min(lookahead, len(path) - 1) and \
            (path[i + 1][0] - path[i][0], path[i + 1][1] - path[i][1]) == step:
        i += 1
    return path[i]


class MazePlanner:
    name = "maze"

    def __init__(self, profile: Any = None, skill: str = "reach", lookahead: int = 2,
                 max_repeats: int = 3) -> None:
        options = getattr(profile, "options", None) or {}
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise PlannerError(f"maze planner: unknown option(s) {sorted(unknown)}; known: {', '.join(OPTIONS)}")
        self.skill = str(options.get("skill", skill))
        self.lookahead = int(options.get("lookahead", lookahead))
        self.max_repeats = int(options.get("max_repeats", max_repeats))
        if self.lookahead < 1 or self.max_repeats < 1:
            raise PlannerError("maze planner: lookahead and max_repeats must be >= 1")

    def reset(self) -> None:
        pass  # every decision is made from the fresh state

    def decide(self, context: PlannerContext) -> Decision:
        maze = maze_from_spec(context.spec)
        state = context.symbolic
        if maze is None or state is None:
            raise PlannerError(f"harness {context.spec.id} publishes no maze (spec.extra.maze) or no "
                               "symbolic state; the maze planner needs a maze: harness")
        if context.skills and self.skill not in {s.name for s in context.skills}:
            raise NoSkillsError(f"the maze planner needs skill {self.skill!r}, which the library lacks")
        preds = list(state.predicates)
        here = _cell_of(preds, _AT_CELL)
        if here is None:
            raise PlannerError(f"harness {context.spec.id}: no at_cell(r,c) in the symbolic state")
        goal_cell, to_goal = self._target(context.task, state.mission, state.goal, preds)
        done = "at(goal)" in preds if to_goal else here == goal_cell
        if done:
            what = "at(goal)" if to_goal else f"at_cell({goal_cell[0]},{goal_cell[1]})"
            return Finish(success=True, reason=f"{what} holds")
        if (stuck := self._stuck(context)) is not None:
            return Finish(success=False, reason=stuck)
        return self._next_call(maze, here, goal_cell, to_goal, context)

    def _target(self, task: str, mission: str | None, goal: list[str], preds: list[str]) -> tuple[Cell, bool]:
        """(goal cell, whether the task is the goal point) for the task."""
        if m := _CELL_TASK.search(task):
            return (int(m.group(1)), int(m.group(2))), False
        atoms = mission_language().parse_mission(task) or (goal if mission and task.strip() == mission else None)
        if atoms != ["at(goal)"]:
            raise PlannerError(f"the maze planner understands 'go to the goal' and 'go to cell (r, c)', "
                               f"not {task!r}; use an LLM planner for other tasks")
        cell = _cell_of(preds, _GOAL_CELL)
        if cell is None:
            raise PlannerError("no goal_cell(r,c) in the symbolic state")
        return cell, True

    def _next_call(self, maze: MazeMap, here: Cell, goal: Cell, to_goal: bool,
                   context: PlannerContext) -> Decision:
        path = maze.shortest_path(here, goal)
        if path is None:
            return Finish(success=False, reason=f"no path of free cells from {here} to {goal}")
        failed_last = bool(context.history) and not context.history[-1].success
        nxt = waypoint(path, 1 if failed_last else self.lookahead)
        moves = len(path) - 1
        if nxt == goal and to_goal:
            return SkillCall(skill=self.skill, args={},
                             reason=f"the goal cell {goal} is {moves} move(s) away in a straight line: reach the goal")
        return SkillCall(skill=self.skill, args={"row": nxt[0], "col": nxt[1]},
                         reason=f"cell {nxt} is the next waypoint on a {moves}-move path from {here} to {goal}")

    def _stuck(self, context: PlannerContext) -> str | None:
        """Why to give up: the last call failed `max_repeats` times in a row, or None."""
        history = context.history
        repeats = 0
        for item in reversed(history):
            if item.success or item.decision != history[-1].decision:
                break
            repeats += 1
        if repeats >= self.max_repeats:
            return f"{history[-1].decision} failed {repeats} times in a row: {history[-1].reason}"
        return None
