"""The shared episode loop and the success judge, on real harnesses."""

from __future__ import annotations

import numpy as np
import pytest

from polar.harnesses.base import SuccessRule
from polar.harnesses.registry import make_harness
from polar.harnesses.rollout import judge, play_episode, rollout


class _CrashingHarness:
    """A real MiniGrid harness whose game dies mid-episode (as a crashed game process would)."""

    def __init__(self, crash_at: int) -> None:
        self.inner = make_harness("minigrid:MiniGrid-Empty-5x5-v0")
        self.spec = self.inner.spec
        self.action_space = self.inner.action_space
        self.crash_at, self.t = crash_at, 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.t += 1
        if self.t == self.crash_at:
            raise BrokenPipeError("game process exited with code -9")
        return self.inner.step(action)


def test_a_harness_crash_is_attributed_to_the_harness() -> None:
    h = _CrashingHarness(crash_at=3)
    rec = play_episode(h, lambda _o: 2, agent="random", task="get to the goal", env_seed=0,
                       max_steps=None, episode_id="x")
    assert not rec.success and rec.failure_cause == "harness-error"
    assert "BrokenPipeError: game process exited" in rec.failure_detail
    assert rec.env_steps == 2


def test_success_is_read_from_the_harness() -> None:
    h = make_harness("minigrid:MiniGrid-Empty-5x5-v0")
    # Empty-5x5 starts at (1,1) facing east with the goal at (3,3): fwd, fwd, right, fwd, fwd
    plan = iter([2, 2, 1, 2, 2])
    rec = play_episode(h, lambda _o: next(plan), agent="scripted", task="get to the goal",
                       env_seed=0, max_steps=None, episode_id="y")
    assert rec.success and rec.failure_cause is None and rec.env_steps == 5
    assert rec.episode_return > 0.9


def test_random_cartpole_is_not_a_success() -> None:
    """CartPole reports no success: a pole that fell (terminated) is a failure under the
    spec's survival rule, not a success."""
    h = make_harness("gym:CartPole-v1")
    assert h.spec.success == SuccessRule(kind="survive")
    space = h.action_space
    space.seed(0)
    recs = [play_episode(h, lambda _o: space.sample(), agent="random", task="balance", env_seed=s,
                         max_steps=None, episode_id=str(s)) for s in range(10)]
    assert all(r.success is False and r.terminated and r.failure_cause == "task-failed" for r in recs)


def test_surviving_to_the_limit_is_a_success_and_a_shorter_cap_is_not() -> None:
    def balance(obs):
        return 1 if obs[2] + 0.5 * obs[3] > 0 else 0

    h = make_harness("gym:CartPole-v1")
    rec = play_episode(h, balance, agent="code", task="balance", env_seed=0, max_steps=None, episode_id="a")
    assert rec.success and rec.env_steps == 500 and rec.truncated and not rec.terminated
    capped = play_episode(h, balance, agent="code", task="balance", env_seed=0, max_steps=100, episode_id="b")
    assert capped.success is False and capped.failure_cause == "step-limit" and capped.env_steps == 100


def test_a_return_threshold_is_judged_on_whole_episodes_only() -> None:
    """MountainCar's rule is a return of -110 over the episode (-1 per step): an episode cut
    by Polar's cap after 50 steps, or one whose agent never acted, is not a success however
    high its partial return; one that reaches the flag is."""
    def swing(obs):  # push the way the car moves: reaches the flag in about 120 steps
        return 2 if obs[1] >= 0 else 0

    h = make_harness("gym:MountainCar-v0")
    assert h.spec.success == SuccessRule(kind="min_return", threshold=-110.0)
    capped = play_episode(h, swing, agent="code", task="flag", env_seed=0, max_steps=50, episode_id="a")
    assert capped.episode_return == -50.0 and capped.success is False and capped.failure_cause == "step-limit"
    whole = play_episode(h, swing, agent="code", task="flag", env_seed=0, max_steps=None, episode_id="b")
    assert whole.terminated and whole.success == (whole.episode_return >= -110)  # at the flag, in time or not
    assert judge(h.spec, info={}, terminated=True, truncated=False, episode_return=-100.0).success
    assert not judge(h.spec, info={}, terminated=False, truncated=False, episode_return=0.0).success


def test_success_is_unknown_where_nothing_can_tell() -> None:
    h = make_harness("gym:Pendulum-v1")  # no info["success"], no reward_threshold, no goal
    assert h.spec.success is None
    rec = play_episode(h, lambda _o: np.zeros(1, np.float32), agent="zero", task="swing up", env_seed=0,
                       max_steps=None, episode_id="p")
    assert rec.success is None and rec.failure_cause is None and rec.env_steps == 200


def test_judge_order_info_then_rule_then_goal() -> None:
    h = make_harness("minigrid:MiniGrid-Empty-5x5-v0")
    h.reset(seed=0)
    spec = h.spec
    # the harness's own signal at the end of the episode wins
    assert judge(spec, info={"success": True}, terminated=True, truncated=False, episode_return=0.0,
                 state=h.symbolic_state) == (True, "harness")
    # mid-episode on a harness that reports success: not yet, says the harness
    assert judge(spec, info={}, terminated=False, truncated=False, episode_return=0.0,
                 state=h.symbolic_state) == (False, "harness")
    silent = spec.model_copy(update={"reports_success": False})  # a game that reports nothing
    assert judge(silent, info={}, terminated=False, truncated=False, episode_return=0.0,
                 state=h.symbolic_state) == (False, "goal-predicates")
    ruled = spec.model_copy(update={"reports_success": False, "success": SuccessRule(kind="min_return", threshold=0.5)})
    assert judge(ruled, info={}, terminated=True, truncated=False, episode_return=0.7) == (True, "harness-rule")
    # a report at the episode's end beats the rule even where the spec did not declare one
    assert judge(ruled, info={"success": False}, terminated=True, truncated=False,
                 episode_return=0.7) == (False, "harness")
    bare = spec.model_copy(update={"reports_success": False})
    assert judge(bare, info={}, terminated=True, truncated=False, episode_return=1.0) == (None, None)


def test_rollout_stop_test_cap_and_policy_errors() -> None:
    h = make_harness("gym:CartPole-v1")
    obs, _ = h.reset(seed=0)
    r = rollout(h, lambda _o: 0, obs, max_steps=3)
    assert r.steps == 3 and not r.ended and r.reward == 3.0
    r = rollout(h, lambda _o: 1, r.obs, max_steps=None, stop=lambda o, _i: o[1] > 0.5)
    assert r.stopped and r.steps >= 1
    assert rollout(h, lambda _o: 1, r.obs, max_steps=5, stop=lambda _o, _i: True).steps == 0
    r = rollout(h, lambda _o: 1 / 0, r.obs, max_steps=5)  # a policy bug: not the harness's failure
    assert isinstance(r.act_error, ZeroDivisionError) and r.harness_error is None and r.steps == 0
    with pytest.raises(ZeroDivisionError):
        r.raise_act_error()
