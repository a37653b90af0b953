"""The keydoor example: the game's rules, and the game through the connector as a harness."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from polar.harnesses.base import HarnessEnv
from polar.harnesses.connector import ConnectorHarness
from polar.harnesses.registry import make_harness
from polar.harnesses.spaces import space_to_spec

KEYDOOR_DIR = Path(__file__).resolve().parents[2] / "harnesses" / "keydoor"
sys.path.insert(0, str(KEYDOOR_DIR))
from keydoor_connector import KeyDoor  # noqa: E402
from keydoor_game import AGENT, DOOR_LOCKED, GOAL, KEY, OPEN, PICKUP, WALL, KeyDoorGame  # noqa: E402

MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}


def find(grid: np.ndarray, code: int) -> tuple[int, int]:
    ys, xs = np.nonzero(grid == code)
    return int(xs[0]), int(ys[0])


def path(grid: np.ndarray, start: tuple[int, int], goal: Callable[[tuple[int, int]], bool],
         blocked: tuple[int, ...]) -> list[int]:
    """Breadth-first search over cells; returns the move actions."""
    prev: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if goal(cell):
            actions = []
            while prev[cell] is not None:
                cell, a = prev[cell]
                actions.append(a)
            return actions[::-1]
        for a, (dx, dy) in MOVES.items():
            nxt = (cell[0] + dx, cell[1] + dy)
            if nxt not in prev and grid[nxt[1], nxt[0]] not in blocked:
                prev[nxt] = (cell, a)
                queue.append(nxt)
    raise AssertionError("no path")


def solution(grid: np.ndarray) -> list[int]:
    """key -> pickup -> next to the door -> open -> goal, planned from the first observation."""
    agent, key, door = find(grid, AGENT), find(grid, KEY), find(grid, DOOR_LOCKED)
    to_key = path(grid, agent, lambda c: c == key, (WALL, DOOR_LOCKED))
    beside = lambda c: abs(c[0] - door[0]) + abs(c[1] - door[1]) == 1  # noqa: E731
    to_door = path(grid, key, beside, (WALL, DOOR_LOCKED))
    end = key
    for a in to_door:
        end = (end[0] + MOVES[a][0], end[1] + MOVES[a][1])
    to_goal = path(grid, end, lambda c: grid[c[1], c[0]] == GOAL, (WALL,))
    return [*to_key, PICKUP, *to_door, OPEN, *to_goal]


def test_game_rules_every_seed_is_solvable() -> None:
    for seed in range(40):
        game = KeyDoorGame(size=7, seed=seed)
        plan = solution(game.get_observation()["grid"])
        results = [game.step(a) for a in plan]
        assert results[-1] == (True, 1.0) and all(r == (False, 0.0) for r in results[:-1])
        assert game.get_observation()["inventory"] == ["key"]


def test_game_rules_door_needs_the_key_and_walls_block() -> None:
    game = KeyDoorGame(size=7, seed=0)
    grid = game.get_observation()["grid"]
    door = game.door
    # Walk next to the door without the key: OPEN does nothing and the door blocks.
    beside = lambda c: abs(c[0] - door[0]) + abs(c[1] - door[1]) == 1  # noqa: E731
    for a in path(grid, game.agent, beside, (WALL, DOOR_LOCKED, KEY)):
        game.step(a)
    game.step(OPEN)
    assert not game.door_open
    game.step(3)  # right, into the locked door
    assert game.agent[0] < game.wall_x
    with pytest.raises(ValueError, match="unknown action code 9"):
        game.step(9)
    with pytest.raises(ValueError, match="size must be at least 5"):
        KeyDoorGame(size=3)


@pytest.fixture(scope="module")
def keydoor() -> ConnectorHarness:
    h = make_harness("keydoor")
    assert isinstance(h, ConnectorHarness)
    yield h
    h.close()


def test_spec_through_the_connector_matches_the_game(keydoor: ConnectorHarness) -> None:
    local = KeyDoor()
    assert keydoor.spec.observation_space == space_to_spec(local.observation_space)
    assert keydoor.action_space == local.action_space
    assert keydoor.observation_space["grid"] == local.observation_space["grid"]
    spec = keydoor.spec
    assert spec.id == "keydoor" and "locked door" in spec.description
    assert spec.action_meanings == ["up", "down", "left", "right", "pickup", "open"]
    assert spec.max_steps == 100  # from the YAML's kwargs
    assert spec.reports_success and "carrying(key)" in spec.predicate_vocabulary


def test_env_checker_passes_through_the_connector(keydoor: ConnectorHarness) -> None:
    check_env(HarnessEnv(keydoor), skip_render_check=True)


def test_seeded_rollouts_are_identical_and_match_in_process(keydoor: ConnectorHarness) -> None:
    actions = np.random.default_rng(0).integers(0, 6, 300).tolist()

    def rollout(reset, step) -> list:
        out = [reset(seed=11)[0]]
        for a in actions:
            obs, r, te, tr, info = step(a)
            out.append((obs, r, te, tr, info))
            if te or tr:
                out.append(reset()[0])  # unseeded resets continue the seeded stream
        return out

    def flat(xs: list) -> list:
        return [repr(x) for x in xs]

    first = rollout(keydoor.reset, keydoor.step)
    second = rollout(keydoor.reset, keydoor.step)
    local = KeyDoor()
    in_process = rollout(local.reset, local.step)
    assert flat(first) == flat(second) == flat(in_process)
    assert repr(keydoor.reset(seed=12)[0]) != repr(keydoor.reset(seed=11)[0])


def test_solving_through_the_connector_with_symbolic_state(keydoor: ConnectorHarness) -> None:
    obs, _ = keydoor.reset(seed=5)
    assert keydoor.symbolic_state().predicates == []
    plan = solution(obs["grid"])
    seen: list[set[str]] = []
    for a in plan:
        obs, reward, terminated, truncated, info = keydoor.step(a)
        seen.append(set(keydoor.symbolic_state().predicates))
    assert terminated and not truncated and reward == 1.0 and info["success"] is True
    assert obs["inventory"].tolist() == [1]
    pickup = plan.index(PICKUP)
    assert "carrying(key)" not in seen[pickup - 1] and "at(key)" in seen[pickup - 1]
    assert "carrying(key)" in seen[pickup]
    opened = plan.index(OPEN)
    assert "open(door)" not in seen[opened - 1] and "next_to(door)" in seen[opened - 1]
    assert "open(door)" in seen[opened]
    assert "at(goal)" in seen[-1]
    state = keydoor.symbolic_state()
    assert state.goal == ["at(goal)"] and {o.type for o in state.objects} == {"door", "goal"}
    text = keydoor.render_text(obs)
    assert "carrying key: yes" in text and text.count("\n") >= 7


def test_game_killed_during_symbolic_state_ends_the_episode_at_the_next_step() -> None:
    import os
    import signal

    with make_harness("keydoor") as h:
        h.reset(seed=0)
        os.kill(h.pid, signal.SIGKILL)
        assert h.symbolic_state() is None
        _, _, terminated, truncated, info = h.step(0)
        assert truncated and not terminated
        assert info["harness_error"].startswith("game process exited with signal 9 (SIGKILL) during symbolic")
        obs, _ = h.reset(seed=0)
        assert h.symbolic_state() is not None and h.step(0)[4] == {"success": False}


def test_step_limit_truncates_and_reports_no_success() -> None:
    with make_harness("keydoor", size=9, max_steps=10) as h:
        obs, _ = h.reset(seed=0)
        assert obs["grid"].shape == (9, 9)
        results = [h.step(4) for _ in range(10)]  # pickup where there is no key: nothing happens
        assert [r[3] for r in results] == [False] * 9 + [True]
        assert not any(r[2] for r in results) and results[-1][4]["success"] is False
