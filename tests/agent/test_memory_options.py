"""The option env over the agent's memory (`hrl-memory`, docs/memory.md): its options come from
the library's declarations, it runs with the simulator's grid and symbolic state out of reach,
an option not applicable over the memory fails at once and the controller sees which are."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from polar.agent.memory import MemoryHarness
from polar.agent.memory_options import MemoryOptionEnv, memory_options
from polar.errors import ConfigError, HarnessError
from polar.harnesses.registry import make_harness
from polar.skills.options import PRIMITIVE_STEPS, describe
from tests.agent.test_memory import NoSimulatorState, _memory_library

DOORKEY = "minigrid:MiniGrid-DoorKey-8x8-v0"
# seed 7: explore finds the key, goto and pick it up, unlock the door (the goal comes into view
# through it: exploring for it no longer applies), goto the goal
ORDER = ["explore(object=key)", "goto(color=yellow, object=key)", "pickup(object=key)",
         "goto(color=yellow, object=door)", "unlock()", "goto(object=goal)"]


@pytest.fixture(scope="module")
def library():
    return _memory_library()


@pytest.fixture(scope="module")
def options(library) -> list[dict]:
    h = make_harness(DOORKEY, odometry=True)
    try:
        return memory_options(library, h.spec)
    finally:
        h.close()


def _env(options: list[dict], library, **kw) -> MemoryOptionEnv:
    """The env over a harness whose grid capability and symbolic state raise when read."""
    harness = NoSimulatorState(make_harness(DOORKEY, odometry=True))
    return MemoryOptionEnv(harness, options, skills=str(library.root), **kw)


def test_options_are_every_declared_type_and_colour(options: list[dict]) -> None:
    names = [describe(o) for o in options]
    types, colors = ["key", "door", "ball", "box", "goal"], ["red", "green", "blue", "purple", "yellow", "grey"]
    assert names[:5] == [f"explore(object={t})" for t in types]
    assert {f"goto(object={t})" for t in types} <= set(names)
    assert {f"goto(color={c}, object={t})" for t in types for c in colors} <= set(names)
    assert names[-9:] == ["pickup(object=key)", "pickup(object=ball)", "pickup(object=box)", "drop()", "forward()",
                          "left()", "right()", "toggle()", "unlock()"]  # the turns: to face a free cell to drop
    assert len(names) == len(set(names)) == 5 + 5 + 30 + 3 + 6


def test_the_order_solves_doorkey_over_the_memory_alone(options: list[dict], library) -> None:
    names = [describe(o) for o in options]
    env = _env(options, library, counter="test-memory-order")
    PRIMITIVE_STEPS.pop("test-memory-order", None)
    obs, _ = env.reset(seed=7)
    assert env.observation_space.contains(obs)
    assert isinstance(env.harness.inner, MemoryHarness)
    taken = 0
    for name in ORDER:
        k = names.index(name)
        assert obs["action_mask"][k] == 1, name  # the controller is shown it applies
        obs, r, term, trunc, info = env.step(k)
        taken += info["primitive_steps"]
        assert env.last_outcome is not None and env.last_outcome.success, (name, env.last_outcome)
        if name == "unlock()":
            assert obs["action_mask"][names.index("explore(object=goal)")] == 0  # seen: its termination holds
    assert term and not trunc and info["success"] is True and r > 0
    assert env.primitive_steps == taken == env.harness.steps == PRIMITIVE_STEPS["test-memory-order"]
    env2 = pickle.loads(pickle.dumps(env))  # checkpoints pickle serial vector envs
    assert env2.options == env.options and env2.library.root == env.library.root


def test_not_applicable_fails_at_once_and_is_masked(options: list[dict], library) -> None:
    names = [describe(o) for o in options]
    env = _env(options, library, max_options=3)
    obs, _ = env.reset(seed=7)
    available = {names[i] for i in np.flatnonzero(obs["action_mask"])}
    # seed 7 starts with the door in view, not the key: nothing is faced, the key is unknown
    assert "goto(color=yellow, object=key)" not in available and "explore(object=key)" in available
    assert not available & {"pickup(object=key)", "drop()", "toggle()", "unlock()", "goto(object=goal)"}
    for name in ("goto(color=red, object=ball)", "pickup(object=key)"):
        _, _, term, trunc, info = env.step(names.index(name))
        assert env.last_outcome is not None and not env.last_outcome.success
        assert env.last_outcome.reason.startswith("not applicable over the memory: precondition")
        assert info["primitive_steps"] == 0
    _, _, term, trunc, info = env.step(names.index("drop()"))
    assert trunc and not term and info["success"] is False and env.harness.steps == 0


def test_a_state_s_predicates_are_built_once(options: list[dict], library, monkeypatch) -> None:
    """The mask the controller observed answers the next option's refusal: the memory's predicates
    are built again only for an option the mask refuses (for its reason) and after the option's steps."""
    names = [describe(o) for o in options]
    env = _env(options, library)
    obs, _ = env.reset(seed=7)
    calls: list[int] = []
    real = MemoryHarness.symbolic_state
    monkeypatch.setattr(MemoryHarness, "symbolic_state", lambda self: calls.append(1) or real(self))
    explore, goto_key = names.index("explore(object=key)"), names.index("goto(color=yellow, object=key)")
    assert env.refusal(options[explore]) is None and calls == []
    assert env.refusal(options[goto_key]).startswith("not applicable over the memory") and len(calls) == 1
    obs, *_ = env.step(explore)
    assert env.last_outcome is not None and env.last_outcome.success
    assert obs["action_mask"][goto_key] == 1  # the key seen: the new state's mask, not the old one
    assert np.array_equal(obs["action_mask"], env.available())
    calls.clear()
    assert env.refusal(options[goto_key]) is None and calls == []


def test_refused_without_a_memory_or_with_the_full_grid(options: list[dict], library) -> None:
    with pytest.raises(HarnessError, match="memory reader"):
        MemoryOptionEnv(DOORKEY, options, skills=str(library.root))  # no odometry: no pose to map with
    with pytest.raises(ConfigError, match="controller"):
        MemoryOptionEnv(DOORKEY, options, skills=str(library.root), harness_kwargs={"odometry": True},
                        controller="full")


def test_the_mask_key_is_the_one_ppo_reads() -> None:
    from polar.agent.memory_options import MASK_KEY
    from polar.rl.ppo.ppo_policy import MASK_KEY as PPO_MASK_KEY

    assert MASK_KEY == PPO_MASK_KEY


def test_the_suite_refuses_a_memory_controller_on_the_full_grid() -> None:
    from polar.evals.suite import load_suite

    agent = {"name": "hrl-memory", "kind": "hrl", "memory": True, "skills": "skills_memory", "train_steps": 8}
    suite = {"name": "m", "seeds": [0], "episodes": 1, "harnesses": [{"id": DOORKEY, "kwargs": {"odometry": True}}]}
    assert load_suite({**suite, "agents": [agent]}).agents[0].memory is True
    with pytest.raises(ConfigError, match="controller: over the agent's memory"):
        load_suite({**suite, "agents": [{**agent, "controller": "full"}]})
