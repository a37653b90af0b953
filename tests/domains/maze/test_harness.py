"""The maze: harness: predicates match MuJoCo positions, maps load, text and seeding."""

import os

import numpy as np
import pytest

from polar.domains.maze.maze_map import MazeMap
from polar.errors import ConfigError, HarnessError
from polar.harnesses import make_harness
from polar.harnesses.check import check_harness

SMALL = ["1 1 1 1 1", "1 r 0 0 1", "1 1 1 0 1", "1 g 0 0 1", "1 1 1 1 1"]  # the U maze, marked


@pytest.fixture(scope="module")
def medium():
    h = make_harness("maze:PointMaze_Medium-v3", position_noise=0.0)
    h.reset(seed=0)
    yield h
    h.close()


def _at_cell(state):
    cells = [p for p in state.predicates if p.startswith("at_cell(")]
    assert len(cells) == 1, cells
    return cells[0]


def _push(h, action, steps):
    """Push the ball for `steps` steps or until it changes cell; returns its at_cell then."""
    start = _at_cell(h.symbolic_state())
    for _ in range(steps):
        h.step(np.asarray(action, dtype=np.float32))
        if _at_cell(h.symbolic_state()) != start:
            break
    return _at_cell(h.symbolic_state())


# --- geometry ------------------------------------------------------------------------------


def test_cell_xy_round_trip_and_agree_with_the_package(medium):
    package = medium.point_env.maze
    for name in ("PointMaze_UMaze-v3", "PointMaze_Large-v3"):
        m = make_harness(f"maze:{name}").maze
        for r in range(m.height):
            for c in range(m.width):
                x, y = m.cell_to_xy((r, c))
                assert m.xy_to_cell(x, y) == (r, c)
                for dx, dy in ((-0.49, 0.49), (0.49, -0.49), (0.3, 0.1)):  # anywhere inside
                    assert m.xy_to_cell(x + dx, y + dy) == (r, c)
    m = medium.maze
    for r, c in m.free_cells:
        assert np.allclose(m.cell_to_xy((r, c)), package.cell_rowcol_to_xy(np.array([r, c])))
        x, y = m.cell_to_xy((r, c))
        assert tuple(package.cell_xy_to_rowcol(np.array([x + 0.2, y - 0.3]))) == (r, c)


def test_ball_placed_in_each_cell_gives_at_cell(medium):
    rng = np.random.default_rng(0)
    for r, c in medium.maze.free_cells:
        x, y = medium.maze.cell_to_xy((r, c))
        x, y = x + rng.uniform(-0.35, 0.35), y + rng.uniform(-0.35, 0.35)
        obs = medium.place_ball(x, y)
        state = medium.symbolic_state()
        assert _at_cell(state) == f"at_cell({r},{c})"
        assert state.agent["cell"] == [r, c]
        assert np.allclose(obs["achieved_goal"], [x, y])
        assert np.allclose(obs["observation"], [x, y, 0, 0])
        # the MuJoCo state agrees: one physics step at rest leaves the ball where it was
        obs, *_ = medium.step(np.zeros(2, np.float32))
        assert np.allclose(obs["achieved_goal"], [x, y], atol=1e-6)


def test_adjacency_matches_the_map_and_the_walls(medium):
    m = medium.maze
    raw = medium.point_env.maze.maze_map  # the package's own map
    expected = set()
    for r in range(len(raw)):
        for c in range(len(raw[0])):
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                if raw[r][c] != 1 and raw[r + dr][c + dc] != 1:
                    expected.add(f"adjacent({r},{c},{r + dr},{c + dc})")
    preds = {p for p in medium.symbolic_state().predicates if p.startswith("adjacent(")}
    assert preds == expected
    # physics: from (4,6) pushing north meets a wall, pushing west enters the free cell (4,5)
    assert "adjacent(4,6,3,6)" not in preds and "adjacent(4,6,4,5)" in preds
    medium.place_ball(*m.cell_to_xy((4, 6)))
    assert _push(medium, [0, 1], 60) == "at_cell(4,6)"
    assert medium.position()[1] < m.cell_to_xy((4, 6))[1] + 0.5  # stopped by the wall
    medium.place_ball(*m.cell_to_xy((4, 6)))
    assert _push(medium, [-1, 0], 40) == "at_cell(4,5)"


def test_shortest_path_is_a_chain_of_adjacent_cells():
    m = make_harness("maze:PointMaze_Large-v3").maze
    path = m.shortest_path((1, 1), (7, 10))
    assert path[0] == (1, 1) and path[-1] == (7, 10)
    assert len(path) - 1 == m.distances((1, 1))[(7, 10)]
    assert all((a, b) in m.adjacency for a, b in zip(path, path[1:], strict=False))
    assert m.shortest_path((1, 1), (0, 0)) is None


# --- goal, success, reset options ---------------------------------------------------------


def test_goal_reached_terminates_with_success():
    h = make_harness("maze:PointMaze_UMaze-v3", position_noise=0.0)
    obs, _ = h.reset(seed=1, options={"reset_cell": [1, 1], "goal_cell": [1, 3]})
    assert np.allclose(obs["desired_goal"], h.maze.cell_to_xy((1, 3)))
    assert np.allclose(obs["achieved_goal"], h.maze.cell_to_xy((1, 1)))
    state = h.symbolic_state()
    assert "goal_cell(1,3)" in state.predicates and "at(goal)" not in state.predicates
    assert state.goal == ["at(goal)"] and state.objects[0].pos == (1, 3)
    x, y = h.maze.cell_to_xy((1, 3))
    h.place_ball(x - 0.6, y)  # in cell (1,2), 0.6 from the goal, rolling east
    _, r, term, trunc, info = h.step(np.array([1.0, 0.0], np.float32))
    assert (r, term, info["success"]) == (0.0, False, False)
    for _ in range(30):
        _, r, term, trunc, info = h.step(np.array([1.0, 0.0], np.float32))
        if term:
            break
    assert term and not trunc and info["success"] and r == 1.0
    assert "at(goal)" in h.symbolic_state().predicates
    assert "at_cell(1,3)" in h.symbolic_state().predicates


def test_bad_reset_options_are_clear_errors():
    h = make_harness("maze:PointMaze_UMaze-v3")
    with pytest.raises(HarnessError, match=r"goal_cell=\[2, 1\] is a wall"):
        h.reset(options={"goal_cell": [2, 1]})
    with pytest.raises(HarnessError, match="unknown reset option"):
        h.reset(options={"goal": [1, 1]})


def test_goal_distance_puts_the_goal_that_many_moves_away():
    h = make_harness("maze:PointMaze_Large-v3", goal_distance=[1, 2], position_noise=0.0)
    for seed in range(20):
        obs, _ = h.reset(seed=seed)
        start = h.maze.xy_to_cell(*obs["achieved_goal"])
        goal = h.maze.xy_to_cell(*obs["desired_goal"])
        assert 1 <= h.maze.distances(start)[goal] <= 2


# --- seeding -------------------------------------------------------------------------------


def _trace(seed, n=50):
    h = make_harness("maze:PointMaze_Medium-v3")
    h.action_space.seed(seed)
    out = [h.reset(seed=seed)[0]]
    for _ in range(n):
        out.append(h.step(h.action_space.sample())[0])
    out.append(h.reset()[0])  # the next unseeded reset continues the seeded RNG
    h.close()
    return np.concatenate([np.concatenate([o[k] for k in sorted(o)]) for o in out])


def test_seeded_rollouts_are_identical_and_seeds_differ():
    assert np.array_equal(_trace(3), _trace(3))
    assert not np.array_equal(_trace(3), _trace(4))


def test_harness_check_passes_on_a_custom_yaml(tmp_path):
    p = tmp_path / "tiny.yaml"
    rows = "\n".join(f'    - "{r}"' for r in SMALL)
    p.write_text(f"id: tiny\nbase: maze:custom\nkwargs:\n  maze_map:\n{rows}\n")
    report = check_harness(str(p), steps=100)
    assert report.passed, report.problems


# --- custom maps, text -----------------------------------------------------------------------


def test_custom_yaml_map_loads_with_its_start_and_goal(tmp_path):
    p = tmp_path / "u.yaml"
    rows = "\n".join(f"    - {r.replace(' ', '')}" for r in SMALL)  # unquoted digits too
    p.write_text(f"id: my-u\ndescription: a marked U\nbase: maze:custom\nkwargs:\n"
                 f"  max_episode_steps: 123\n  maze_map:\n{rows}\n")
    h = make_harness(str(p))
    assert h.spec.id == "my-u" and h.spec.max_steps == 123
    assert h.spec.extra["maze"]["rows"] == ["#####", "#r..#", "###.#", "#g..#", "#####"]
    for seed in range(5):
        h.reset(seed=seed)
        s = h.symbolic_state()
        assert "at_cell(1,1)" in s.predicates and "goal_cell(3,1)" in s.predicates


def test_shipped_spiral_maze():
    h = make_harness("maze_spiral")
    assert h.spec.max_steps == 1500 and h.spec.id == "maze_spiral"
    assert len(h.maze.shortest_path((1, 1), (5, 3))) - 1 == 30


def test_render_text_marks_agent_and_goal():
    h = make_harness("maze:custom", maze_map=SMALL, position_noise=0.0)
    obs, _ = h.reset(seed=0)
    assert h.render_text(obs) == "\n".join([
        "Maze 5x5 (row, column; row 0 at the top; # wall, . free, A you, G goal, * you on the goal):",
        "     0 1 2 3 4",
        "  0  # # # # #",
        "  1  # A . . #",
        "  2  # # # . #",
        "  3  # G . . #",
        "  4  # # # # #",
        "You: cell (1,1), x=-1.00 y=1.00, velocity (0.00, 0.00). Free neighbouring cells: east (1,2).",
        "Goal: cell (3,1), x=-1.00 y=-1.00; distance 2.00 (reached within 0.45).",
    ])
    obs = h.place_ball(-1.0, -0.9)
    assert "  3  # * . . #" in h.render_text(obs)


@pytest.mark.parametrize(("rows", "match"), [
    (["111", "1x1", "111"], r"row 1, column 1: 'x' is not a maze cell"),
    (["1111", "101", "1111"], "row 1 has 3 cells, row 0 has 4"),
    (["1111", "1000", "1111"], "row 1, column 3 is on the border"),
    (["111", "101", "111"], "needs a start cell other than goal cell"),
    ("1111", "expected a non-empty list of rows"),
])
def test_bad_maps_name_the_problem(rows, match):
    with pytest.raises(ConfigError, match=match):
        make_harness("maze:custom", maze_map=rows)


def test_unknown_maze_id_lists_the_known_ones():
    with pytest.raises(HarnessError, match="maze:PointMaze_Large-v3"):
        make_harness("maze:PointMaze_Huge-v3")
    with pytest.raises(ConfigError, match="maze_map"):
        make_harness("maze:custom")


def test_no_generated_model_file_is_left_behind():
    h = make_harness("maze:PointMaze_UMaze-v3")
    assert not os.path.exists(h.point_env.tmp_xml_file_path)
    h.close()


def test_package_maps_parse_like_strings():
    a = MazeMap.parse([[1, 1, 1, 1], [1, "r", 0, 1], [1, 0, "g", 1], [1, 1, 1, 1]])
    b = MazeMap.parse(["####", "#r.#", "#.g#", "####"])
    assert a == b and a.start_cells == ((1, 1),) and a.goal_cells == ((2, 2),)
    assert a.to_package() == [[1, 1, 1, 1], [1, "r", 0, 1], [1, 0, "g", 1], [1, 1, 1, 1]]
    open_ = MazeMap.parse(["####", "#..#", "####"])
    assert open_.start_cells == open_.goal_cells == ((1, 1), (1, 2))
