import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from polar.harnesses import HarnessEnv, make_harness, make_harness_env
from polar.harnesses.spaces import space_to_spec, spec_to_space

IDS = ["gym:CartPole-v1", "gym:Pendulum-v1", "minigrid:MiniGrid-DoorKey-8x8-v0",
       "minigrid:BabyAI-GoToRedBall-v0"]


@pytest.mark.parametrize("harness_id", IDS)
def test_env_checker_passes(harness_id):
    env = make_harness_env(harness_id)
    check_env(env, skip_render_check=True)
    env.close()


def _rollout(harness_id, seed, n=200):
    h = make_harness(harness_id)
    space = h.action_space
    space.seed(seed)
    obs, _ = h.reset(seed=seed)
    out = [obs]
    for _ in range(n):
        obs, r, term, trunc, _ = h.step(space.sample())
        out.append((obs, r, term, trunc))
        if term or trunc:
            out.append(h.reset()[0])
    h.close()
    return out


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("harness_id", ["gym:CartPole-v1", "minigrid:MiniGrid-DoorKey-8x8-v0"])
def test_seeding_gives_identical_rollouts(harness_id):
    assert _same(_rollout(harness_id, 3), _rollout(harness_id, 3))
    assert not _same(_rollout(harness_id, 3), _rollout(harness_id, 4))


def test_spec_is_serialisable_and_spaces_round_trip():
    for harness_id in IDS:
        h = make_harness(harness_id)
        data = h.spec.model_dump(mode="json")
        assert spec_to_space(data["action_space"]) == h.action_space
        assert space_to_spec(spec_to_space(data["observation_space"])) == h.spec.observation_space
        assert h.spec.describe().startswith(f"Harness: {harness_id}")
        h.close()


def test_gym_spec_content():
    h = make_harness("gym:CartPole-v1")
    assert h.spec.max_steps == 500
    assert "pole" in h.spec.description.lower()
    assert h.spec.action_space.n == 2


def test_harness_env_is_a_gymnasium_env():
    h = make_harness("gym:CartPole-v1")
    env = HarnessEnv(h)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
