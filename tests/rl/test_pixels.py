"""PPO learns from pixels through the Nature-CNN encoder (issue: images were index grids)."""

import pytest

from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer


def test_ppo_learns_from_pixels(tmp_path):
    # The bright patch's side decides the rewarded action; noise and patch look alike to an
    # index-grid encoder (ids clamped to 15), so only the pixel encoder can learn this.
    cfg = TrainConfig(harness="gym:tests.rl.rl_scripted_envs:PolarPixelSide-v0", steps=24 * 128, seed=0,
                      progress=False, eval_episodes=50, network=dict(hidden=[64], image_features=64),
                      ppo=dict(num_envs=8, num_steps=16, num_minibatches=2, update_epochs=4, learning_rate=1e-3))
    trainer = Trainer(cfg, tmp_path)
    assert trainer.policy.observation_kinds == {"obs": "image"}
    res = trainer.run()
    assert res["success_rate"] >= 0.9, res  # chance: 0.5


@pytest.mark.slow
def test_ppo_learns_minigrid_from_rgb_pixels(tmp_path):
    # MiniGrid's RGB partial view (56x56 pixels) through the harness kwarg `rgb: true`.
    cfg = TrainConfig(harness="minigrid:MiniGrid-Empty-5x5-v0", harness_kwargs={"rgb": True}, steps=40_000,
                      seed=0, progress=False, eval_episodes=20, network=dict(hidden=[64], image_features=128),
                      ppo=dict(num_envs=8, num_steps=128, num_minibatches=4, update_epochs=4, learning_rate=5e-4,
                               ent_coef=0.01))
    trainer = Trainer(cfg, tmp_path)
    assert trainer.policy.observation_kinds["image"] == "image"
    res = trainer.run()
    assert res["success_rate"] >= 0.9, res
