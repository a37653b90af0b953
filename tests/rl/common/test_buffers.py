"""The replay buffer: HER relabelling against hand-computed transitions, dict observations,
compact storage, and an exact round trip through a checkpoint."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.common.batches import EpisodeStats, Transitions
from polar.rl.common.buffers import ReplayBuffer
from polar.rl.common.her import HERConfig

GOAL_SPACE = gym.spaces.Dict({
    "observation": gym.spaces.Box(-100, 100, (2,), np.float32),
    "achieved_goal": gym.spaces.Box(-100, 100, (2,), np.float32),
    "desired_goal": gym.spaces.Box(-100, 100, (2,), np.float32),
})
FAR = np.array([9.0, 9.0], np.float32)  # the real goal: never reached


def episode_steps(column_starts: list[int], steps: int, ends: set[int], columns: int = 1):
    """Transitions [1, N] per step. Column c at step t is at position p = start_c + t: its obs
    is [p, c], its next obs achieves goal [p + 1, c]; the episode is truncated after the
    steps in `ends`; the real reward is -1 (the far goal)."""
    for t in range(steps):
        obs, nxt = {}, {}
        pos = np.array([s + t for s in column_starts], np.float32)
        col = np.arange(columns, dtype=np.float32)
        obs["observation"] = np.stack([pos, col], -1)[None]
        obs["achieved_goal"] = obs["observation"].copy()
        obs["desired_goal"] = np.tile(FAR, (1, columns, 1))
        nxt["observation"] = np.stack([pos + 1, col], -1)[None]
        nxt["achieved_goal"] = nxt["observation"].copy()
        nxt["desired_goal"] = obs["desired_goal"].copy()
        trunc = np.full((1, columns), t in ends)
        yield Transitions(obs, np.zeros((1, columns, 2), np.float32), np.full((1, columns), -1.0, np.float32), nxt,
                          np.zeros((1, columns), bool), trunc, np.ones((1, columns), bool), EpisodeStats())


def fill(buf: ReplayBuffer, *args, **kw) -> None:
    for tr in episode_steps(*args, **kw):
        buf.add(tr)


def test_her_future_relabelling_matches_hand_computed_transitions():
    # One episode of 4 steps (positions 0..3, truncated after the last), then 2 steps of a
    # running episode (positions 4, 5). Relabelled nearly always (k = 10_000).
    buf = ReplayBuffer(GOAL_SPACE, 2, capacity=16, columns=1, seed=0,
                       her=HERConfig(k=10_000, reward="sparse", threshold=0.1))
    fill(buf, [0], 6, ends={3})
    s = buf.sample(4000)
    assert torch.equal(s.obs["desired_goal"], s.next_obs["desired_goal"])  # both sides relabelled
    kept = (s.obs["desired_goal"] == torch.as_tensor(FAR)).all(-1).numpy()
    assert kept.sum() < 10  # real goals: 1 in 10_001
    pos = s.obs["observation"][~kept, 0].numpy()
    goal = s.obs["desired_goal"][~kept, 0].numpy()
    for p in range(6):
        at = pos == p
        episode_end = 4 if p < 4 else 6  # one past the last achieved position (running: so far)
        # Future strategy: the achieved goal of a transition at or after it, same episode.
        assert set(goal[at]) == {float(q) for q in range(p + 1, episode_end + 1)}, p
        # Uniform over those: each of the m candidates about 1/m of the time.
        counts = np.array([np.sum(goal[at] == q) for q in range(p + 1, episode_end + 1)])
        assert counts.min() > 0.6 * counts.mean()
    # Reward -(distance > 0.1): 0 exactly when the new goal is the one this step achieved.
    np.testing.assert_array_equal(s.rewards.numpy()[~kept], np.where(goal == pos + 1, 0.0, -1.0))
    # Goals keep the column's second coordinate: relabelled from this column only.
    assert (s.obs["desired_goal"][~kept, 1] == 0).all()


def test_her_final_strategy_and_the_real_fraction():
    buf = ReplayBuffer(GOAL_SPACE, 2, capacity=16, columns=1, seed=1,
                       her=HERConfig(k=4, strategy="final", reward="sparse01", threshold=0.1))
    fill(buf, [0], 4, ends={3})
    s = buf.sample(5000)
    goal, pos = s.obs["desired_goal"].numpy(), s.obs["observation"][:, 0].numpy()
    real = (goal == FAR).all(-1)
    assert abs(real.mean() - 1 / 5) < 0.03  # k = 4: one real transition for four relabelled
    np.testing.assert_array_equal(goal[~real, 0], np.full((~real).sum(), 4.0))  # the final achieved goal
    expected = np.where(real, -1.0, (pos == 3).astype(np.float32))  # real: the stored reward
    np.testing.assert_array_equal(s.rewards.numpy(), expected)


def test_columns_ring_wraparound_and_episode_boundaries():
    # Two columns, capacity 4 rows each; 7 steps with an episode end after step 2: the ring
    # has overwritten steps 0..2 and future goals never cross into the next episode.
    buf = ReplayBuffer(GOAL_SPACE, 2, capacity=8, columns=2, seed=2,
                       her=HERConfig(k=10_000, reward="sparse", threshold=0.1))
    fill(buf, [0, 100], 7, ends={2}, columns=2)
    assert buf.size == 8 and list(buf.count) == [7, 7]
    s = buf.sample(3000)
    kept = (s.obs["desired_goal"] == torch.as_tensor(FAR)).all(-1).numpy()
    pos, col = s.obs["observation"][~kept, 0].numpy(), s.obs["observation"][~kept, 1].numpy()
    goal = s.obs["desired_goal"][~kept].numpy()
    assert set(pos) == {3, 4, 5, 6, 103, 104, 105, 106}  # only what is still stored
    assert (goal[:, 1] == col).all()
    assert (goal[:, 0] >= pos + 1).all() and (goal[:, 0] <= np.where(col == 0, 7, 107)).all()


def test_dict_observations_dtypes_and_bytes_per_transition():
    f32 = ReplayBuffer(GOAL_SPACE, 2, capacity=10, columns=1, seed=0, her=HERConfig())
    f16 = ReplayBuffer(GOAL_SPACE, 2, capacity=10, columns=1, seed=0, her=HERConfig(), float_dtype="float16")
    # obs + next obs (3 keys x 2 floats each), action (2), reward (4 B), terminated (1 B),
    # episode end (8 B): 2*24 + 8 + 4 + 1 + 8 = 69 B in float32, 2*12 + 4 + 4 + 1 + 8 = 41 B in float16.
    assert f32.bytes_per_transition() == 69 and f16.bytes_per_transition() == 41
    images = ReplayBuffer(gym.spaces.Box(0, 255, (84, 84, 3), np.uint8), 1, capacity=10, columns=1, seed=0)
    assert images.obs["obs"].dtype == np.uint8 and images.bytes_per_transition() == 2 * 84 * 84 * 3 + 4 + 4 + 1
    fill(f16, [0], 3, ends={2})
    s = f16.sample(8)
    assert s.obs["observation"].dtype == torch.float32 and s.actions.dtype == torch.float32
    bad = next(episode_steps([70_000], 1, ends=set()))
    with pytest.raises(ValueError, match="beyond float16"):
        f16.add(bad)


def test_her_needs_the_goal_keys():
    from polar.errors import ConfigError

    with pytest.raises(ConfigError, match="desired_goal"):
        ReplayBuffer(gym.spaces.Box(-1, 1, (3,), np.float32), 1, 10, 1, 0, her=HERConfig())


def test_buffer_round_trips_through_a_checkpoint_bit_for_bit(tmp_path):
    from polar.rl.common.checkpoint import load_checkpoint, save_checkpoint
    from polar.rl.policy import make_policy

    her = HERConfig(k=4, reward="sparse", threshold=0.1)
    buf = ReplayBuffer(GOAL_SPACE, 2, capacity=12, columns=2, seed=5, her=her, float_dtype="float16")
    fill(buf, [0, 50], 9, ends={3, 7}, columns=2)  # wrapped, one episode running
    buf.sample(7)  # the generator has moved
    policy = make_policy("sac", GOAL_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32))
    path = save_checkpoint(tmp_path, "ckpt-1", policy, {"step": 1}, replay=buf.state())
    _, _, _, replay = load_checkpoint(path)
    back = ReplayBuffer(GOAL_SPACE, 2, capacity=12, columns=2, seed=999, her=her, float_dtype="float16")
    back.load_state(replay)
    arrays = lambda b: {**{f"o.{k}": v for k, v in b.obs.items()}, **{f"n.{k}": v for k, v in b.next_obs.items()},  # noqa: E731
                        "a": b.actions, "r": b.rewards, "t": b.terminated, "c": b.count,
                        "e": b.episode_end, "s": b.episode_start}
    for k, v in arrays(buf).items():
        w = arrays(back)[k]
        assert v.dtype == w.dtype and v.tobytes() == w.tobytes(), k
    for _ in range(3):  # and it goes on identically
        a, b = buf.sample(16), back.sample(16)
        for x, y in zip(a, b, strict=True):
            xs, ys = (x.values(), y.values()) if isinstance(x, dict) else ([x], [y])
            assert all(torch.equal(p, q) for p, q in zip(xs, ys, strict=True))


def test_ending_a_columns_episode_keeps_her_goals_on_its_side():
    # Column 1's env is replaced after 3 steps (a Ray worker lost): its stored episode ends
    # there, so the new env's positions (100+) are never goals for the old transitions.
    buf = ReplayBuffer(GOAL_SPACE, 2, capacity=40, columns=2, seed=3,
                       her=HERConfig(k=10_000, reward="sparse", threshold=0.1))
    fill(buf, [0, 0], 3, ends=set(), columns=2)
    buf.end_episodes([1])
    fill(buf, [3, 100], 3, ends=set(), columns=2)
    s = buf.sample(4000)
    kept = (s.obs["desired_goal"] == torch.as_tensor(FAR)).all(-1).numpy()
    pos, col = s.obs["observation"][~kept, 0].numpy(), s.obs["observation"][~kept, 1].numpy()
    goal = s.obs["desired_goal"][~kept, 0].numpy()
    old = (col == 1) & (pos < 100)
    assert old.any() and goal[old].max() == 3  # the old episode's own last achieved goal
    assert goal[(col == 0) & (pos < 3)].max() == 6  # column 0's episode runs on
    assert goal[(col == 1) & (pos >= 100)].min() >= 101
