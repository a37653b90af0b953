"""The reach skill's policy input, termination and training env (polar/domains/maze/reach.py)."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from polar.domains.maze.maze_map import MazeMap, random_maze
from polar.domains.maze.reach import (
    OBS_DIM,
    PATCH,
    THRESHOLD,
    ReachEnv,
    features,
    goal_reward,
    hook_done,
    hook_features,
    local_view,
)
from polar.errors import ConfigError, HarnessError
from polar.harnesses import make_harness


@pytest.fixture(scope="module")
def medium():
    h = make_harness("maze:PointMaze_Medium-v3", position_noise=0.0)
    h.reset(seed=0, options={"reset_cell": [4, 6], "goal_cell": [6, 6]})
    yield h
    h.close()


def test_local_view_reads_walls_velocity_and_offset(medium):
    m = medium.maze
    cx, cy = m.cell_to_xy((4, 6))
    v = local_view(m, cx + 0.2, cy - 0.1, 2.5, -5.0)
    assert v.shape == (OBS_DIM,) and v.dtype == np.float32
    assert np.allclose(v[:4], [0.5, -1.0, 0.2, -0.1])
    walls = v[4:].reshape(PATCH, PATCH)  # rows north to south, columns west to east
    half = PATCH // 2
    for i, dr in enumerate(range(-half, half + 1)):
        for j, dc in enumerate(range(-half, half + 1)):
            assert walls[i, j] == (0.0 if m.is_free((4 + dr, 6 + dc)) else 1.0), (dr, dc)
    assert walls[1, 1] == 0 and walls[0, 1] == 1 and walls[1, 2] == 1  # free here, walls north and east
    assert walls[1, 0] == 0 and walls[2, 1] == 0  # free west and south
    # at the map's edge, cells beyond it read as walls
    v = local_view(m, *m.cell_to_xy((1, 1)), 0, 0)
    assert v[4:].reshape(PATCH, PATCH)[0].tolist() == [1, 1, 1]


def test_features_frame_is_the_target_cell(medium):
    m = medium.maze
    obs = medium.place_ball(*m.cell_to_xy((4, 6)))
    x = hook_features(obs, {"row": 4, "col": 4}, harness=medium)
    assert np.array_equal(x["desired_goal"], [0, 0])
    assert np.allclose(x["achieved_goal"], [2.0, 0.0])  # two cells east of the target
    x = hook_features(obs, {}, harness=medium)  # the goal point, in its own cell's frame
    assert np.allclose(x["achieved_goal"], [0.0, 2.0]) and np.allclose(x["desired_goal"], [0, 0])
    with pytest.raises(ConfigError, match="is a wall"):
        hook_features(obs, {"row": 0, "col": 0}, harness=medium)
    with pytest.raises(ConfigError, match="both row and col"):
        hook_features(obs, {"row": 1}, harness=medium)
    with pytest.raises(HarnessError, match="needs a maze: harness"):
        hook_features(obs, {}, harness=None)
    grid = make_harness("minigrid:MiniGrid-Empty-5x5-v0")
    with pytest.raises(HarnessError, match="maze"):  # no "maze" capability
        hook_features(obs, {}, harness=grid)
    assert medium.capability("maze") is medium.maze and medium.capabilities() == {"maze"}
    with pytest.raises(HarnessError, match="no capability 'grid'"):
        medium.capability("grid")


def test_same_local_situation_in_two_mazes_gives_the_same_input():
    """No absolute position reaches the policy: Medium inside a larger, shifted map gives
    the same input for the same move, and Large shares local shapes with Medium."""
    medium = make_harness("maze:PointMaze_Medium-v3").maze
    rows = ["1" * 12] * 2 + ["111" + r.replace("#", "1").replace(".", "0") + "1" for r in medium.rows] + ["1" * 12]
    shifted = MazeMap.parse(rows)
    for r, c in medium.free_cells:
        xa, ya = medium.cell_to_xy((r, c))
        xb, yb = shifted.cell_to_xy((r + 2, c + 3))
        fa = features(medium, {"observation": np.array([xa + 0.1, ya, 1.0, 0.0])}, (xa + 1, ya))
        fb = features(shifted, {"observation": np.array([xb + 0.1, yb, 1.0, 0.0])}, (xb + 1, yb))
        for k in fa:
            assert np.allclose(fa[k], fb[k], atol=1e-6), (k, r, c)


def _patches(m):
    return {local_view(m, *m.cell_to_xy(c), 0, 0)[4:].tobytes() for c in m.free_cells}


def test_random_mazes_cover_the_local_shapes_of_held_out_mazes():
    """Why the recipe trains on random layouts: Medium alone shows the policy less than half
    of the local wall shapes of Large; 16 random 9x9 mazes show it nearly all of them."""
    large = _patches(make_harness("maze:PointMaze_Large-v3").maze)
    assert len(large & _patches(make_harness("maze:PointMaze_Medium-v3").maze)) < len(large) / 2
    rng = np.random.default_rng(0)
    seen = set().union(*(_patches(random_maze(rng, 9, 9, 0.2)) for _ in range(16)))
    assert len(large & seen) >= 0.9 * len(large)


def test_termination(medium):
    m = medium.maze
    medium.place_ball(*m.cell_to_xy((4, 5)))
    state = medium.symbolic_state()
    assert hook_done(state, {"row": 4, "col": 5}) and not hook_done(state, {"row": 4, "col": 6})
    assert not hook_done(state, {})
    medium.place_ball(*m.cell_to_xy((6, 6)))
    assert hook_done(medium.symbolic_state(), {})
    assert not hook_done(None, {})


def test_goal_reward_radius():
    ag = np.array([[0.0, 0.0], [0.0, 0.0]], np.float32)
    dg = np.array([[THRESHOLD - 0.01, 0.0], [0.0, THRESHOLD + 0.01]], np.float32)
    assert goal_reward(ag, dg).tolist() == [0.0, -1.0]


def _env(**kw):
    return ReachEnv(layouts=["maze:PointMaze_UMaze-v3", ["#####", "#...#", "#.#.#", "#...#", "#####"]], **kw)


def test_reach_env_goal_distance_frame_and_rewards():
    env = _env(goal_distance=[1, 2], max_steps=30, p_moving_start=0.0)
    for seed in range(6):
        x, info = env.reset(seed=seed)
        h = env.harness
        start = h.maze.xy_to_cell(*h.position())
        goal = h.maze.xy_to_cell(*h.goal_position())
        assert 1 <= h.maze.distances(start)[goal] <= 2
        p0, a0 = np.array(h.position()), x["achieved_goal"].copy()
        for t in range(30):
            x, r, term, trunc, info = env.step(env.action_space.sample())
            # one frame for the whole episode (what HER's relabelling relies on)
            assert np.allclose(x["achieved_goal"] - a0, np.array(h.position()) - p0, atol=1e-5)
            assert r == goal_reward(x["achieved_goal"], x["desired_goal"]) and info["success"] == (r == 0)
            assert not term and trunc == (t == 29)


def test_reach_env_seeding_and_checker():
    def trace(seed):
        env = _env()
        env.action_space.seed(seed)
        out = [env.reset(seed=seed)[0]["achieved_goal"]]
        out += [env.step(env.action_space.sample())[0]["achieved_goal"] for _ in range(20)]
        out.append(env.reset()[0]["desired_goal"])
        return np.concatenate(out)

    assert np.array_equal(trace(1), trace(1)) and not np.array_equal(trace(1), trace(2))
    check_env(_env(), skip_render_check=True)


def test_random_layouts_are_drawn_from_the_seed_and_connected():
    env = ReachEnv(random_layouts=3, random_size=[7, 9])
    env.reset(seed=5)
    maps = env.layouts[:]
    assert len(maps) == 3
    for rows in maps:
        m = MazeMap.parse(rows)
        assert (m.height, m.width) == (7, 9)
        assert len(m.distances(m.free_cells[0])) == len(m.free_cells)  # one connected maze
    env2 = ReachEnv(random_layouts=3, random_size=[7, 9])
    env2.reset(seed=5)
    assert env2.layouts == maps
    with pytest.raises(ConfigError, match="odd"):
        random_maze(np.random.default_rng(0), 8, 9)


def test_recipe_validates_and_her_reward_is_the_env_reward():
    """The recipe's HER reward (sparse, threshold 0.45) is the env's own reward."""
    import polar.rl.config as rl_config
    from polar.config import load_yaml
    from polar.rl.common.her import goal_reward_fn

    recipes = Path(__file__).resolve().parents[3] / "skills" / "recipes"
    cfg = load_yaml(recipes / "reach.yaml", rl_config.TrainConfig)
    check = load_yaml(recipes / "reach_check.yaml", rl_config.TrainConfig)
    assert check.sac.her == cfg.sac.her and check.network == cfg.network
    her = goal_reward_fn(cfg.sac.her)
    rng = np.random.default_rng(0)
    ag, dg = rng.uniform(-1, 1, (500, 2)).astype(np.float32), rng.uniform(-1, 1, (500, 2)).astype(np.float32)
    assert np.array_equal(her(ag, dg), goal_reward(ag, dg))


def test_shipped_reach_rolls_to_a_neighbouring_cell_in_an_open_maze():
    """The committed reach weights, loaded through the library and run by its runner: from
    the centre of a cell of PointMaze_Open, reach(row, col) of a random free neighbour ends
    in that cell within 40 steps (of its budget of 100). A loose bound on a handful of calls."""
    import torch

    from polar.skills import SkillLibrary, run_skill

    lib = SkillLibrary(Path(__file__).resolve().parents[3] / "skills")
    skill = lib.get("reach")
    assert skill.kind == "policy" and skill.features is not None
    h = make_harness("maze:PointMaze_Open-v3", position_noise=0.0)
    m = h.maze
    rng = np.random.default_rng(0)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    good, outcomes = 0, []
    try:
        for seed in range(8):
            start = m.free_cells[int(rng.integers(len(m.free_cells)))]
            near = [c for c in m.free_cells if abs(c[0] - start[0]) + abs(c[1] - start[1]) == 1]
            target = near[int(rng.integers(len(near)))]
            far = max(m.free_cells, key=lambda c: abs(c[0] - start[0]) + abs(c[1] - start[1]))
            # the harness's goal (which ends the episode) out of the way
            obs, _ = h.reset(seed=seed, options={"reset_cell": list(start), "goal_cell": list(far)})
            out = run_skill(skill, h, {"row": target[0], "col": target[1]}, obs=obs).outcome
            reached = m.xy_to_cell(*h.position()) == target
            good += bool(out.success and reached and out.steps <= 40)
            outcomes.append((start, target, out.reason, out.steps))
    finally:
        torch.set_num_threads(n)
        h.close()
    assert good >= 6, outcomes
