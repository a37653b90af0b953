"""goto(object, color): features, the training env's reward/termination, the shipped skill."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from minigrid.core.world_object import Ball, Door, Key, Wall

from polar.domains.minigrid import goto, goto_env
from polar.domains.minigrid.goto import COLORS, CROP, TARGET_TYPES, features, succeeded
from polar.domains.minigrid.goto_env import GotoEnv, reachable
from polar.errors import ConfigError

R = CROP // 2
N_TYPES = len(TARGET_TYPES)
REL = N_TYPES + len(COLORS) + 1  # first slot after the one-hots: ahead, right, dist, out, none


def empty_env(size: int = 8):
    import minigrid  # noqa: F401

    env = gym.make(f"MiniGrid-Empty-{size}x{size}-v0").unwrapped
    env.reset(seed=0)
    return env


def quiet_env(layout: str = "MiniGrid-Empty-8x8-v0") -> GotoEnv:
    """A GotoEnv with every randomisation off, so tests can script the state."""
    return GotoEnv(layouts=[layout], p_open_doors=0, p_carry_key=0, p_distractors=0,
                   p_move_agent=0, p_any_color=0, p_far=0)


def set_scene(env: GotoEnv, agent=(1, 1), d=0, target=("ball", "red"), objects=()):
    base = env.base
    base.agent_pos, base.agent_dir = agent, d
    for (x, y), obj in objects:
        base.grid.set(x, y, obj)
    env.target, env.t = target, 0


# ---- features ----------------------------------------------------------------------------


def test_crop_puts_the_object_where_the_agent_sees_it_for_every_direction():
    env = empty_env()
    env.agent_pos = (3, 3)
    env.grid.set(5, 3, Ball("red"))  # 2 cells east of the agent
    for d, (row, col) in enumerate([(R - 2, R), (R, R - 2), (R + 2, R), (R, R + 2)]):
        # east: ahead; south: on the left; west: behind; north: on the right
        env.agent_dir = d
        f = features(env, "ball", "red")
        g = f["grid"]
        assert g.shape == (CROP, CROP, 4) and g.dtype == np.uint8
        assert g[row, col, 0] == goto.OBJECT_TO_IDX["ball"] and g[row, col, 1] == goto.COLOR_TO_IDX["red"]
        assert g[..., 3].sum() == 1 and g[row, col, 3] == 1
        ahead, right = f["target"][REL:REL + 2] * goto.REL_SCALE
        assert (round(ahead), round(right)) == (R - row, col - R)


def test_turning_rotates_the_crop():
    env = empty_env()
    env.agent_pos = (2, 4)
    env.grid.set(4, 2, Key("yellow"))
    env.agent_dir = 0
    east = features(env, "key", None)["grid"]
    env.agent_dir = 1  # turned right: the world turns left in the agent's view
    south = features(env, "key", None)["grid"]
    assert np.array_equal(south, np.rot90(east, k=1))  # counter-clockwise
    assert not np.array_equal(south, east)


def test_outside_the_grid_reads_as_wall():
    env = empty_env(5)
    env.agent_pos, env.agent_dir = (1, 1), 3  # north-west corner, facing north
    g = features(env, "goal", None)["grid"]
    wall = goto.OBJECT_TO_IDX["wall"]
    assert (g[:R, :, 0] == wall).all()  # everything ahead (north) is wall or beyond the grid
    assert g[R, R, 0] == goto.OBJECT_TO_IDX["empty"]


def test_target_one_hot_and_mask_follow_the_arguments():
    env = empty_env()
    env.agent_pos, env.agent_dir = (1, 1), 0
    env.grid.set(3, 1, Key("yellow"))
    env.grid.set(1, 3, Key("blue"))
    f = features(env, "key", "yellow")["target"]
    assert f[TARGET_TYPES.index("key")] == 1 and f[:N_TYPES].sum() == 1
    assert f[N_TYPES + COLORS.index("yellow")] == 1 and f[N_TYPES:REL].sum() == 1
    assert features(env, "key", "yellow")["grid"][..., 3].sum() == 1
    anyc = features(env, "key", None)
    assert anyc["target"][N_TYPES + len(COLORS)] == 1  # the "any colour" slot
    assert anyc["grid"][..., 3].sum() == 2
    missing = features(env, "box", "red")["target"]
    assert missing[REL + 4] == 1 and not missing[REL:REL + 4].any()  # "no such object" flag


def test_far_target_sets_the_out_of_crop_flag_and_clips():
    env = empty_env(16)
    env.agent_pos, env.agent_dir = (1, 1), 0
    env.grid.set(14, 1, Ball("green"))  # 13 ahead
    f = features(env, "ball", "green")
    assert f["grid"][..., 3].sum() == 0
    assert f["target"][REL] == 1.0 and f["target"][REL + 3] == 1.0


def test_check_args():
    assert goto.check_args({"object": "key"}) == ("key", None, None)
    assert goto.check_args({"object": "goal", "color": "green"}) == ("goal", None, None)
    assert goto.check_args({"object": "door", "x": 4, "y": "2"}) == ("door", None, (4, 2))
    with pytest.raises(ConfigError, match="object='keys'"):
        goto.check_args({"object": "keys"})
    with pytest.raises(ConfigError, match="color='pink'"):
        goto.check_args({"object": "key", "color": "pink"})
    with pytest.raises(ConfigError, match="both 'x' and 'y'"):
        goto.check_args({"object": "key", "x": 3})


def test_a_position_picks_one_of_several_same_coloured_objects():
    """Two green doors: with x, y only the named one is in the target mask and the offset,
    and only facing that one ends the skill."""
    from polar.harnesses.registry import make_harness

    h = make_harness("minigrid:MiniGrid-Empty-8x8-v0")
    h.reset(seed=0)
    env = h.capability("grid")
    env.agent_pos, env.agent_dir = np.array((3, 3)), 0  # facing east
    env.grid.set(4, 3, Door("green"))  # 1 ahead
    env.grid.set(3, 6, Door("green"))  # 3 to the right (south)
    both = features(env, "door", "green")
    assert both["grid"][..., 3].sum() == 2 and both["target"][REL:REL + 2].tolist() == [1 / 8, 0.0]
    far = features(env, "door", "green", at=(3, 6))
    assert far["grid"][..., 3].sum() == 1 and far["target"][REL:REL + 2].tolist() == [0.0, 3 / 8]
    assert goto.hook_features({}, {"object": "door", "color": "green", "x": 3, "y": 6}, harness=h)["grid"][..., 3].sum() == 1
    state = h.symbolic_state()
    assert {"facing(door,green,4,3)", "facing(door,green)"} <= set(state.predicates)
    assert goto.hook_done(state, {"object": "door", "color": "green"})
    assert goto.hook_done(state, {"object": "door", "color": "green", "x": 4, "y": 3})
    assert not goto.hook_done(state, {"object": "door", "color": "green", "x": 3, "y": 6})
    assert succeeded(env, "door", "green", at=(4, 3)) and not succeeded(env, "door", "green", at=(3, 6))


# ---- the training env --------------------------------------------------------------------


def test_success_facing_the_target_terminates_with_minigrid_reward():
    env = quiet_env()
    env.reset(seed=0)
    set_scene(env, (1, 1), 0, ("ball", "red"), [((3, 1), Ball("red"))])
    _, r, term, trunc, info = env.step(2)  # forward: now facing the ball
    assert term and not trunc and info["success"]
    assert r == pytest.approx(1 - 0.9 * 1 / env.limit)


def test_wrong_colour_is_not_success_and_time_limit_truncates():
    env = quiet_env()
    env.reset(seed=0)
    set_scene(env, (1, 1), 0, ("ball", "blue"), [((2, 1), Ball("red"))])
    assert not succeeded(env.base, "ball", "blue") and succeeded(env.base, "ball", None)
    for t in range(env.limit):
        _, r, term, trunc, info = env.step(0)  # spin in place
        assert r == 0 and not term
        assert trunc == (t == env.limit - 1)
    assert info["success"] is False


def test_goal_needs_standing_on_it_and_an_unwanted_goal_ends_as_failure():
    env = quiet_env("MiniGrid-Empty-5x5-v0")  # goal at (3, 3)
    env.reset(seed=0)
    set_scene(env, (1, 3), 0, ("goal", None))
    _, r, term, _, _ = env.step(2)  # (2, 3): facing the goal is not enough
    assert not term and r == 0
    _, r, term, _, info = env.step(2)
    assert term and info["success"] and r == pytest.approx(1 - 0.9 * 2 / env.limit)
    env.reset(seed=1)
    set_scene(env, (2, 3), 0, ("ball", "red"), [((1, 1), Ball("red"))])
    _, r, term, _, info = env.step(2)  # walked onto the goal while looking for the ball
    assert term and not info["success"] and r == 0


def test_closed_door_blocks_reachability_and_facing_a_door_counts():
    env = quiet_env()
    env.reset(seed=0)
    wall = [((4, y), Wall()) for y in range(1, 7) if y != 3]
    set_scene(env, (2, 3), 0, ("door", "yellow"), [*wall, ((4, 3), Door("yellow", is_locked=True))])
    reach = reachable(env.base)
    assert reach[3, 3] and not reach[5, 3]
    _, _, term, _, info = env.step(2)
    assert term and info["success"]


def test_reset_samples_reachable_unsolved_targets_that_exist():
    env = GotoEnv(layouts=["MiniGrid-DoorKey-5x5-v0", "MiniGrid-DoorKey-8x8-v0", "BabyAI-GoToLocal-v0"])
    seen = set()
    obs, _ = env.reset(seed=3)
    for _ in range(150):
        obj, color = env.target
        base = env.base
        assert not succeeded(base, obj, color)
        assert obs["grid"].shape == (CROP, CROP, 4) and env.observation_space.contains(obs)
        reach = reachable(base)
        ok = False
        for idx, o in enumerate(base.grid.grid):
            if o is not None and o.type == obj and (color is None or o.color == color):
                x, y = idx % base.width, idx // base.width
                ok |= goto_env._can_reach(base, reach, (x, y), obj)
        assert ok, (obj, color)
        seen.add(obj)
        obs, _ = env.reset()
    assert seen == set(TARGET_TYPES)


def test_entry_point_harness_id_builds_the_env_without_registration():
    from polar.harnesses.registry import make_harness

    before = set(gym.registry)
    h = make_harness("gym:polar.domains.minigrid.goto_env:GotoEnv", layouts=["MiniGrid-DoorKey-5x5-v0"])
    obs, _ = h.reset(seed=0)
    assert h.action_space.n == 3 and obs["target"].shape == (goto.TARGET_DIM,)
    assert set(gym.registry) == before  # nothing registered as a side effect
    h.close()


# ---- the library hooks and the shipped skill --------------------------------------------


def test_hook_done_agrees_with_the_direct_success_test_on_a_random_walk():
    from polar.harnesses.registry import make_harness

    h = make_harness("minigrid:MiniGrid-DoorKey-8x8-v0")
    rng = np.random.default_rng(0)
    cases = [{"object": "key"}, {"object": "door", "color": "any"}, {"object": "goal"},
             {"object": "key", "color": "red"}]
    hits = 0
    for ep in range(6):
        h.reset(seed=ep)
        goto_env.GotoEnv._place(h.capability("grid"), Ball("blue"), rng)
        for _ in range(60):
            h.step(int(rng.integers(3)))
            state = h.symbolic_state()
            for args in cases:
                obj, color, at = goto._bound_args(args)
                expect = succeeded(h.capability("grid"), obj, color, at)
                assert goto.hook_done(state, args) == expect, (args, state.predicates)
                hits += expect
    assert hits > 0  # the walk did face a key or the door at least once


def test_hook_features_needs_the_harness():
    from polar.skills.model import SkillError

    with pytest.raises(SkillError, match="harness"):
        goto.hook_features({}, {"object": "key"})


@pytest.fixture
def one_thread():
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)  # one small forward pass per step; extra threads only contend
    yield
    torch.set_num_threads(n)


def test_shipped_skill_reaches_the_key_on_doorkey_8x8(one_thread):
    """The committed weights, loaded through the library and run by its runner. Success alone
    would not catch broken weights (a random walk finds the key in 8x8 most of the time), so
    each success must also be near the shortest path."""
    from pathlib import Path

    from polar.domains.minigrid.goto_eval import optimal_steps
    from polar.harnesses.registry import make_harness
    from polar.skills import SkillLibrary, run_skill

    lib = SkillLibrary(Path(__file__).resolve().parents[3] / "skills")
    skill = lib.get("goto")
    assert skill.kind == "policy" and skill.features is not None
    h = make_harness("minigrid:MiniGrid-DoorKey-8x8-v0")
    good, reasons = 0, []
    for seed in range(500, 512):
        obs, _ = h.reset(seed=seed)
        best = optimal_steps(h.capability("grid"), "key", None)
        out = run_skill(skill, h, {"object": "key"}, obs=obs).outcome
        assert out.steps <= skill.step_budget and out.affordance is not None
        good += out.success and out.steps <= best + 3
        reasons.append((out.reason, out.steps, best))
    assert good >= 10, reasons
