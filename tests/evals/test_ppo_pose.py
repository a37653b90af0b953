"""The recurrent PPO control given the memory arms' pose (issue 41, docs/memory.md): the memory
suite's `ppo-lstm-pose-1m` is the flagship's `ppo-lstm-1m` on harnesses with `odometry: true`,
and the pose reaches the policy it trains: `agent_pos` and `agent_dir` are inputs of the
encoder, and moving the pose alone changes what the policy does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from polar.evals.runner import run_suite
from polar.evals.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
ARM = "ppo-lstm-pose-1m"


def _agent(suite_file: str, name: str):
    suite = load_suite(ROOT / "evals" / suite_file)
    return suite, next(a for a in suite.agents if a.name == name)


def test_the_arm_is_the_flagship_recurrent_control_on_harnesses_with_odometry() -> None:
    suite, arm = _agent("memory.yaml", ARM)
    _, flagship = _agent("doorkey.yaml", "ppo-lstm-1m")
    # the same recipe (ppo-1m's hyper-parameters plus the LSTM), budget and curve: only the pose differs
    assert (arm.algo, arm.recipe, arm.train_steps, arm.recipes, dict(arm.overrides), arm.observes) == \
           (flagship.algo, flagship.recipe, flagship.train_steps, flagship.recipes, dict(flagship.overrides),
            flagship.observes)
    assert arm.recipe == "ppo_lstm_minigrid"
    assert all(h.kwargs.get("odometry") is True for h in suite.harnesses)
    assert [h.label for h in suite.harnesses] == [h.label for h in load_suite(ROOT / "evals" / "doorkey.yaml").harnesses]


def test_the_pose_reaches_the_trained_recurrent_policy(tmp_path: Path) -> None:
    """The arm as the suite writes it, trained briefly through the real engine on DoorKey-5x5
    with odometry: the saved policy is recurrent and reads the pose."""
    torch.set_num_threads(1)
    _, arm = _agent("memory.yaml", ARM)
    small = {**arm.model_dump(mode="json", exclude_unset=True), "train_steps": 512, "eval_every": 0,
             "overrides": {"ppo": {"num_envs": 2, "num_steps": 128, "num_minibatches": 2}}}
    suite = {"name": "pose", "agents": [small], "seeds": [0], "episodes": 1,
             "harnesses": [{"id": "minigrid:MiniGrid-DoorKey-5x5-v0", "kwargs": {"odometry": True}, "max_steps": 30}]}
    res = run_suite(suite, tmp_path, progress=False)
    [row] = res.rows
    assert row.train_env_steps == 512 and row.observes == "view"

    from polar.rl.policy import load_policy

    policy = load_policy(tmp_path / "work" / ARM / "DoorKey-5x5" / "seed-0" / "train")
    assert policy.recurrent
    kinds = policy.observation_kinds
    assert kinds["agent_pos"] == "multi_discrete" and kinds["agent_dir"] == "discrete"
    assert kinds["image"] == "index_grid" and "mission" not in kinds

    # The same view at two poses: the policy's action distribution differs, so the pose is read.
    from polar.harnesses.registry import make_harness

    harness = make_harness("minigrid:MiniGrid-DoorKey-5x5-v0", odometry=True)
    obs, _ = harness.reset(seed=0)
    harness.close()
    moved = {**obs, "agent_pos": np.array([3, 3]) if tuple(obs["agent_pos"]) != (3, 3) else np.array([1, 1])}

    first = _action_probs(policy, obs)
    second = _action_probs(policy, moved)
    assert not torch.allclose(first, second)


def _action_probs(policy, obs: dict) -> torch.Tensor:
    """The policy's action probabilities for `obs` as an episode's first observation."""
    from polar.rl.common.observations import add_batch_dim, canonical_obs

    space = policy.observation_space
    tensors = policy.prepare(canonical_obs(add_batch_dim(obs, space), space))
    policy.reset()
    with torch.no_grad():
        head, _ = policy(tensors)
    return torch.softmax(head, -1)
