"""The one-pass MiniGrid observation must equal MiniGrid's own on every step."""

import numpy as np
import pytest
from minigrid.core.actions import Actions
from minigrid.minigrid_env import MiniGridEnv
from minigrid.wrappers import FullyObsWrapper

from polar.domains.minigrid.obs import full_grid, gen_obs, view_offsets
from polar.harnesses import make_harness

# Doors locked and open, keys carried, boxes, repeated colours, lava, several rooms, a 5x5 view,
# see-through walls, a grid narrower than the view (every view crosses the border).
CASES = [
    ("MiniGrid-DoorKey-8x8-v0", {}),
    ("MiniGrid-KeyCorridorS3R3-v0", {}),
    ("MiniGrid-BlockedUnlockPickup-v0", {}),
    ("MiniGrid-MultiRoom-N4-S5-v0", {}),
    ("MiniGrid-LavaCrossingS9N2-v0", {}),
    ("BabyAI-GoToSeqS5R2-v0", {}),
    ("MiniGrid-DoorKey-5x5-v0", {"agent_view_size": 5}),
    ("MiniGrid-DoorKey-6x6-v0", {"see_through_walls": True}),
]
# Mostly forward, turns, pick-ups and toggles, so that doors open and objects get carried.
ACTIONS = [Actions.forward] * 4 + [Actions.left, Actions.right, Actions.pickup, Actions.drop, Actions.toggle] * 2


def _play(harness, steps: int, check) -> int:
    rng = np.random.default_rng(0)
    harness.reset(seed=3)
    u = harness.capability("grid")
    carried = 0
    for _ in range(steps):
        check(u)
        carried += u.carrying is not None
        _, _, terminated, truncated, _ = harness.step(ACTIONS[rng.integers(len(ACTIONS))])
        if terminated or truncated:
            harness.reset()
    return carried


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_view_equals_minigrids_own(env_id, kwargs):
    def check(u):
        want = MiniGridEnv.gen_obs(u)
        got = gen_obs(u)
        assert got["image"].dtype == want["image"].dtype == np.uint8
        np.testing.assert_array_equal(got["image"], want["image"])
        assert (got["direction"], got["mission"]) == (want["direction"], want["mission"])

    carried = _play(make_harness(f"minigrid:{env_id}", **kwargs), 1500, check)
    if "DoorKey" in env_id or "Blocked" in env_id:
        assert carried > 0  # the carried-object cell was exercised


@pytest.mark.parametrize("env_id", ["MiniGrid-DoorKey-8x8-v0", "MiniGrid-KeyCorridorS3R3-v0"])
def test_full_grid_equals_fully_obs_wrapper(env_id):
    def check(u):
        np.testing.assert_array_equal(full_grid(u), FullyObsWrapper(u).observation({})["image"])

    _play(make_harness(f"minigrid:{env_id}", full_grid=True), 800, check)


def test_the_harness_uses_the_fast_view_and_can_turn_it_off():
    fast = make_harness("minigrid:MiniGrid-DoorKey-8x8-v0")
    slow = make_harness("minigrid:MiniGrid-DoorKey-8x8-v0", fast_obs=False)
    assert "gen_obs" in vars(fast.capability("grid")) and "gen_obs" not in vars(slow.capability("grid"))
    a, _ = fast.reset(seed=5)
    b, _ = slow.reset(seed=5)
    for action in ACTIONS * 20:
        np.testing.assert_array_equal(a["image"], b["image"])
        a, *_ = fast.step(action)
        b, *_ = slow.step(action)


def test_view_offsets_put_the_agent_at_the_bottom_middle_facing_up():
    for direction, (dx, dy) in enumerate([(1, 0), (0, 1), (-1, 0), (0, -1)]):
        offsets = view_offsets(7, direction)
        assert offsets[3 * 7 + 6] == (0, 0)  # column 3, row 6: the agent
        assert offsets[3 * 7 + 5] == (dx, dy)  # the cell in front of it


def test_gotos_training_env_steps_its_minigrid_envs_with_the_fast_view():
    from polar.domains.minigrid.goto_env import GotoEnv

    env = GotoEnv()
    env.reset(seed=0)
    assert env.base is not None and "gen_obs" in vars(env.base)
