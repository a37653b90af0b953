"""The option env over the shipped skills: options from the grid, the right order solves
DoorKey, every primitive step is counted, and the episode caps hold."""

from __future__ import annotations

import pickle

import pytest

from polar.errors import ConfigError
from polar.harnesses.registry import make_harness
from polar.skills.options import PRIMITIVE_STEPS, OptionEnv, default_options, describe
from polar.skills.store import SkillLibrary

DOORKEY = "minigrid:MiniGrid-DoorKey-5x5-v0"
ORDER = ["goto(color=yellow, object=key)", "pickup()", "goto(color=yellow, object=door)", "toggle()",
         "goto(object=goal)"]


@pytest.fixture(scope="module")
def options() -> list[dict]:
    h = make_harness(DOORKEY)
    try:
        return default_options(h, SkillLibrary(), range(1000, 1008))
    finally:
        h.close()


def test_default_options_name_the_objects_in_the_grid(options: list[dict]) -> None:
    assert [describe(o) for o in options] == [
        "goto(color=yellow, object=door)", "goto(color=yellow, object=key)", "goto(object=goal)",
        "pickup()", "drop()", "toggle()"]


def test_the_right_order_solves_doorkey_and_every_step_is_counted(options: list[dict]) -> None:
    names = [describe(o) for o in options]
    env = OptionEnv(DOORKEY, options, counter="test-order")
    PRIMITIVE_STEPS.pop("test-order", None)
    obs, _ = env.reset(seed=3)
    assert obs["last_option"] == len(options) and env.observation_space.contains(obs)
    total, taken = 0.0, 0
    for name in ORDER:
        obs, r, term, trunc, info = env.step(names.index(name))
        total += r
        taken += info["primitive_steps"]
        assert env.last_outcome is not None and env.last_outcome.success, (name, env.last_outcome)
        assert obs["last_option"] == names.index(name) and obs["last_success"] == 1
    assert term and not trunc and info["success"] is True
    assert total == pytest.approx(1 - 0.9 * taken / env.harness.spec.max_steps)  # the harness's own reward
    assert env.primitive_steps == taken == env.harness.steps == PRIMITIVE_STEPS["test-order"]
    env2 = pickle.loads(pickle.dumps(env))  # checkpoints pickle serial vector envs
    assert env2.library.root == env.library.root and env2.options == env.options


def test_caps_and_absent_objects(options: list[dict]) -> None:
    names = [describe(o) for o in options]
    env = OptionEnv(DOORKEY, [*options, {"skill": "goto", "args": {"object": "ball"}}], max_options=3)
    env.reset(seed=3)
    _, _, term, trunc, info = env.step(len(options))  # there is no ball: fails at once
    assert env.last_outcome is not None and not env.last_outcome.success
    assert env.last_outcome.reason == "no ball in the grid" and info["primitive_steps"] == 0
    env.step(names.index("drop()"))
    _, _, term, trunc, info = env.step(names.index("toggle()"))
    assert trunc and not term and info["success"] is False  # three option calls: cut
    capped = OptionEnv(DOORKEY, options, max_steps=4, option_steps=3)
    capped.reset(seed=3)
    _, _, term, trunc, info = capped.step(names.index("goto(object=goal)"))  # behind the locked door
    assert info["primitive_steps"] == 3
    _, _, term, trunc, info = capped.step(names.index("goto(object=goal)"))
    assert capped.harness.steps == 4 and trunc and info["success"] is False
    with pytest.raises(ConfigError, match="empty"):
        OptionEnv(DOORKEY, [])
    with pytest.raises(ConfigError, match="controller"):
        OptionEnv(DOORKEY, options, controller="x-ray")


def test_full_controller_sees_the_whole_grid(options: list[dict]) -> None:
    env = OptionEnv(DOORKEY, options, controller="full")
    obs, _ = env.reset(seed=3)
    assert obs["image"].shape == (5, 5, 3)
