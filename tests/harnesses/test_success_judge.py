"""Where the environment reports success it decides; goal predicates only where it reports
nothing. On real harnesses: MiniGrid's GoToDoor (rewards only `done` facing the target door)
and a gym-style env reporting `info["is_success"]`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from polar.harnesses.registry import make_harness
from polar.harnesses.rollout import judge, judged_by, play_episode, reported_success
from polar.predicates import holds

GOTODOOR = "minigrid:MiniGrid-GoToDoor-8x8-v0"


def _face_target_door(h: Any) -> None:
    """Put the agent on the cell inside the room next to the mission's door, facing it."""
    u = h.capability("grid")
    tx, ty = (int(v) for v in u.target_pos)
    if ty == 0:
        u.agent_pos, u.agent_dir = (tx, 1), 3
    elif ty == u.height - 1:
        u.agent_pos, u.agent_dir = (tx, ty - 1), 1
    elif tx == 0:
        u.agent_pos, u.agent_dir = (1, ty), 2
    else:
        u.agent_pos, u.agent_dir = (tx - 1, ty), 0


def test_gotodoor_declares_its_done_action_and_that_its_reward_marks_success() -> None:
    with make_harness(GOTODOOR) as h:
        assert h.spec.reports_success and h.spec.reward_marks_success and h.spec.done_action == "done"
        assert "takes 'done'" in h.spec.describe()
    with make_harness("minigrid:MiniGrid-DoorKey-5x5-v0") as h:  # reaching the goal ends it: no done
        assert h.spec.done_action is None and "Done:" not in h.spec.describe()


def test_facing_the_door_is_not_success_until_the_environment_says_so() -> None:
    with make_harness(GOTODOOR) as h:
        for seed in range(3):
            h.reset(seed=seed)
            _face_target_door(h)
            state = h.symbolic_state()
            assert state.goal and all(holds(g, state.predicates) for g in state.goal), state.goal
            # the goal predicates hold, the environment has not rewarded anything: not success
            assert judge(h.spec, info={}, terminated=False, truncated=False, episode_return=0.0,
                         state=h.symbolic_state) == (False, "harness")
            _, reward, terminated, truncated, info = h.step(h.spec.action_meanings.index("done"))
            assert terminated and reward > 0 and info["success"] is True
            assert judge(h.spec, info=info, terminated=terminated, truncated=truncated,
                         episode_return=reward, state=h.symbolic_state) == (True, "harness")


def test_done_away_from_the_door_ends_the_episode_as_a_failure() -> None:
    with make_harness(GOTODOOR) as h:
        done = h.spec.action_meanings.index("done")
        rec = play_episode(h, lambda _o: done, agent="scripted", task="go to the door", env_seed=0,
                           max_steps=None, episode_id="d")
    assert rec.success is False and rec.terminated and rec.episode_return == 0.0
    assert rec.failure_cause == "task-failed" and rec.env_steps == 1


class ReportsIsSuccess(gym.Env):
    """A gym-style env (Gymnasium-Robotics' convention): `info["is_success"]` as a 0/1 float at
    every step, no reward. Action 1 reaches the target and ends the episode; action 0 waits
    (up to 5 steps, then the env truncates)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {"is_success": 0.0}

    def step(self, action: Any):
        self.t += 1
        reached = int(action) == 1
        return (np.full(1, float(reached), np.float32), 0.0, reached, self.t >= 5,
                {"is_success": float(reached)})


def test_a_gym_env_reporting_is_success_decides() -> None:
    with make_harness(f"gym:{__name__}:ReportsIsSuccess") as h:
        assert not h.spec.reports_success and h.spec.success is None  # nothing declared
        won = play_episode(h, lambda _o: 1, agent="scripted", task="reach", env_seed=0, max_steps=None,
                           episode_id="w")
        waited = play_episode(h, lambda _o: 0, agent="scripted", task="reach", env_seed=1, max_steps=None,
                              episode_id="l")
    assert won.success is True and won.episode_return == 0.0
    assert waited.success is False and waited.truncated and waited.failure_cause == "step-limit"
    assert reported_success({"is_success": 0.0}) is False and reported_success({}) is None


def test_describe_says_what_judges_success() -> None:
    import json
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "polar", "harness", "describe", GOTODOOR, "--json"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stdout)["success_judged_by"]
    assert said.startswith("the environment") and "'done'" in said
    with make_harness("gym:CartPole-v1") as h:
        assert judged_by(h.spec, has_goal=False).startswith("the spec's success rule: the episode reaches")
    with make_harness("gym:Pendulum-v1") as h:
        assert judged_by(h.spec, has_goal=False).startswith("nothing: success is unknown")
    with make_harness(GOTODOOR) as h:
        silent = h.spec.model_copy(update={"reports_success": False})
        assert judged_by(silent, has_goal=True).startswith("the goal predicates")
