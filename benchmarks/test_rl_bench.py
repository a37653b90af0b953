"""`make bench`: the learning targets of issue 3 (2 of 3 seeds per task)."""

import pytest
from rl_learning import main as learning_main

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("task", ["ppo_cartpole", "sac_pendulum", "ppo_doorkey5x5", "ppo_lstm_minigrid"])
def test_learning_target_two_of_three_seeds(task, tmp_path):
    assert learning_main(["--task", task, "--seeds", "0", "1", "2", "--out", str(tmp_path)]) == 0
