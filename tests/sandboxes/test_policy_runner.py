"""Policy code driving a real harness through the sandbox, with outcomes for the planner."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from polar.harnesses.registry import make_harness
from polar.sandboxes.base import SandboxLimits, SandboxOutputError
from polar.sandboxes.policy_runner import coerce_action, run_policy
from polar.sandboxes.profiles import SandboxProfile, resolve_sandbox

BALANCE = """
def act(obs):
    x, v, angle, omega = obs
    return 1 if angle + 0.5 * omega > 0 else 0
"""


@pytest.mark.parametrize("backend", ["restricted", "process"])
def test_balancing_policy_beats_random(backend: str) -> None:
    with make_harness("gym:CartPole-v1") as harness:
        out = run_policy(BALANCE, harness, profile=SandboxProfile(backend=backend), seed=0).outcome
    assert out.error_type is None, out.reason
    assert out.steps > 100 and out.reward == out.steps  # random play lasts ~20 steps
    assert out.stopped_by in ("terminated", "truncated")


def test_the_profiles_limits_reach_the_run(tmp_path) -> None:
    path = tmp_path / "tight.yaml"
    path.write_text("backend: restricted\nlimits:\n  max_env_steps: 30\n  timeout_s: 0.3\n")
    profile = resolve_sandbox(str(path))
    with make_harness("gym:CartPole-v1") as harness:
        capped = run_policy(BALANCE, harness, profile=profile, seed=0, max_steps=500).outcome
        slow = run_policy("def act(obs):\n    while True:\n        pass\n", harness,
                          profile=profile, seed=0).outcome
    assert capped.steps == 30 and capped.stopped_by == "step_limit" and capped.error_type is None
    assert slow.error_type == "SandboxTimeout" and "0.3 s" in slow.reason


def test_failures_become_outcomes() -> None:
    with make_harness("gym:CartPole-v1") as harness:
        bad_action = run_policy("def act(obs):\n    return 7\n", harness, seed=0).outcome
        missing = run_policy("def policy(obs):\n    return 0\n", harness).outcome
        slow = run_policy("def act(obs):\n    while True:\n        pass\n", harness,
                          profile=SandboxProfile(limits=SandboxLimits(timeout_s=0.3))).outcome
    assert bad_action.error_type == "SandboxOutputError" and "outside the action space" in bad_action.reason
    assert bad_action.steps == 0 and "Discrete(2)" in bad_action.reason
    assert missing.error_type == "SandboxOutputError" and "'act'" in missing.reason
    assert slow.error_type == "SandboxTimeout"


def test_minigrid_dict_observation_arrives_as_plain_data() -> None:
    src = ("def act(obs):\n"
           "    assert isinstance(obs['image'], list) and len(obs['image']) == 7\n"
           "    return 2\n")  # always 'forward'
    with make_harness("minigrid:MiniGrid-Empty-5x5-v0") as harness:
        out = run_policy(src, harness, seed=1, max_steps=5).outcome
    assert out.error_type is None, out.reason
    assert out.steps >= 1


def test_coerce_action_per_space() -> None:
    box = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    assert coerce_action([0.5, -0.5], box).dtype == np.float32
    clipped = coerce_action([2.0, -7], box)  # a continuous force beyond the limit: clipped
    assert clipped.dtype == np.float32 and clipped.tolist() == [1.0, -1.0]
    with pytest.raises(SandboxOutputError, match="finite"):
        coerce_action([float("nan"), 0.0], box)
    with pytest.raises(SandboxOutputError, match="outside"):  # integer boxes are not clipped
        coerce_action([5], gym.spaces.Box(0, 3, shape=(1,), dtype=np.int64))
    with pytest.raises(SandboxOutputError, match="shape"):
        coerce_action([0.0], box)
    with pytest.raises(SandboxOutputError, match="integer"):
        coerce_action(True, gym.spaces.Discrete(3))
    assert coerce_action({"a": 1}, gym.spaces.Dict({"a": gym.spaces.Discrete(2)})) == {"a": 1}


def test_a_game_that_dies_under_the_code_is_a_harness_error_not_ok() -> None:
    """The code ran fine; the game died: the outcome says so (never "ok")."""
    with make_harness("gym:CartPole-v1") as harness:
        steps = 0
        step = harness.step

        def dying_step(action):
            nonlocal steps
            steps += 1
            if steps == 4:
                raise BrokenPipeError("game process exited with signal 9")
            return step(action)

        harness.step = dying_step
        out = run_policy(BALANCE, harness, profile=SandboxProfile(backend="restricted"), seed=0).outcome
    assert not out.success and out.cause == "harness-error" and out.stopped_by == "error"
    assert out.steps == 3 and "BrokenPipeError" in out.harness_error and out.error_type is None


CONTROLLER = """
def act(obs):
    x, y, vx, vy = obs["observation"]
    gx, gy = obs["desired_goal"]
    return [3.0 * (gx - x) - 0.5 * vx, 3.0 * (gy - y) - 0.5 * vy]
"""


def test_a_proportional_controller_rolls_the_maze_ball_to_the_goal() -> None:
    """Policy code on continuous control: act(obs) gets PointMaze's goal-conditioned dict as
    lists and returns a 2-D force (beyond [-1, 1] at first: clipped), in the process sandbox."""
    with make_harness("maze:PointMaze_Open-v3") as harness:
        obs, _ = harness.reset(seed=0)
        start = float(np.hypot(*(obs["achieved_goal"] - obs["desired_goal"])))
        r = run_policy(CONTROLLER, harness, profile=SandboxProfile(backend="process"), obs=obs, max_steps=200)
        end = float(np.hypot(*(np.array(harness.position()) - np.array(harness.goal_position()))))
    out = r.outcome
    assert out.error_type is None and out.success and out.stopped_by == "terminated", out.reason
    assert start > 1.0 and end <= 0.45 and out.steps < 100 and out.reward == 1.0
