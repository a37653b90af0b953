"""The skill runner on real harnesses: primitives judged by predicates, budgets, episode ends."""

from __future__ import annotations

import pytest

from polar.domains.minigrid.primitives import install_primitives
from polar.harnesses.registry import make_harness
from polar.skills.model import Hook, SkillError, SkillLoadError
from polar.skills.runner import evaluate_skill, run_skill
from polar.skills.store import SkillLibrary
from tests.skills.conftest import manifest, tiny_policy

DOORKEY = "minigrid:MiniGrid-DoorKey-5x5-v0"


def _act(h, name: str):
    return h.step(h.spec.action_meanings.index(name))


@pytest.fixture
def doorkey():
    h = make_harness(DOORKEY)
    obs, _ = h.reset(seed=0)
    st = h.symbolic_state()
    # The layout this test walks through (MiniGrid's seed 0): agent at (1,3) facing west, the
    # yellow key north of it at (1,2), the locked yellow door at (2,1).
    assert st.agent["pos"] == [1, 3] and st.agent["dir"] == "west"
    assert {(o.type, o.pos) for o in st.objects} >= {("key", (1, 2)), ("door", (2, 1))}
    yield h, obs
    h.close()


def test_primitives_succeed_only_when_their_effects_appear(library: SkillLibrary, doorkey) -> None:
    h, _ = doorkey
    install_primitives(library)
    pickup, drop, toggle = library.get("pickup"), library.get("drop"), library.get("toggle")

    out = run_skill(pickup, h, {"object": "key"}).outcome
    assert not out.success and out.steps == 1 and "carrying(key,any) not achieved" in out.reason

    _act(h, "right")  # now facing north, at the key
    out = run_skill(pickup, h, {"object": "ball"}).outcome  # picks up the key, not a ball
    assert not out.success and "carrying(key,yellow)" in out.predicates_after
    _act(h, "drop")  # put it back
    out = run_skill(pickup, h, {"object": "key", "color": "yellow"}).outcome
    assert out.success and out.reason == "effects achieved"
    assert "carrying(key,yellow)" not in out.predicates_before
    assert "carrying(key,yellow)" in out.predicates_after

    out = run_skill(toggle, h, {}).outcome  # facing an empty cell: nothing opens
    assert not out.success and "open(door,any,any,any) not achieved" in out.reason
    _act(h, "forward"), _act(h, "forward"), _act(h, "right")  # at (1,1) facing the door
    assert h.symbolic_state().holds("facing(door,yellow)")
    out = run_skill(toggle, h, {"color": "yellow"}).outcome  # carrying the yellow key: unlocks
    assert out.success and "locked(door,yellow)" in out.predicates_before
    assert "open(door,yellow)" in out.predicates_after
    assert "in_way(door,yellow)" in out.predicates_before and "in_way(door,yellow)" not in out.predicates_after

    out = run_skill(drop, h, {"object": "key"}).outcome  # the open door's cell is not empty
    assert not out.success and "not carrying(key,any) not achieved" in out.reason
    _act(h, "right")  # facing south: the empty cell (1,2)
    out = run_skill(drop, h, {"object": "key"}).outcome
    assert out.success and "carrying(key,yellow)" not in out.predicates_after


def _policy_skill(library: SkillLibrary, h, **kw):
    policy = tiny_policy(obs_space=h.observation_space, act_space=h.action_space)
    return library.register_policy(policy, **manifest(**kw)), policy


def test_runner_stops_at_its_budget(library: SkillLibrary, doorkey) -> None:
    h, obs = doorkey
    # The box never exists in DoorKey, so the termination cannot hold.
    skill, policy = _policy_skill(library, h, termination={"predicates": ["carrying(box,{color})"]}, step_budget=7)
    res = run_skill(skill, h, {}, obs=obs)
    assert res.outcome.steps == 7 and not res.outcome.success
    assert res.outcome.reason == "step budget (7) exhausted"
    assert res.outcome.affordance == pytest.approx(policy.value(obs))
    assert res.outcome.args == {"color": "any"}
    out = run_skill(skill, h, {"color": "red"}, budget=3, obs=res.obs).outcome
    assert out.steps == 3 and out.reason == "step budget (3) exhausted"


def test_termination_already_holding_takes_no_step(library: SkillLibrary, doorkey) -> None:
    h, obs = doorkey
    _act(h, "right")
    obs, *_ = _act(h, "pickup")
    skill, _ = _policy_skill(library, h, parameters={"color": ["yellow", "red"]},
                             termination={"predicates": ["carrying(key,{color})"]})
    out = run_skill(skill, h, {"color": "yellow"}, obs=obs).outcome
    assert out.success and out.steps == 0 and out.reason == "termination already holds"
    out = run_skill(skill, h, {"color": "red"}, budget=2, obs=obs).outcome
    assert not out.success and out.steps == 2


def test_episode_end_stops_the_skill(library: SkillLibrary) -> None:
    h = make_harness("gym:CartPole-v1")
    obs, _ = h.reset(seed=0)
    skill = library.register_policy(
        tiny_policy(obs_space=h.observation_space, act_space=h.action_space),
        **manifest(harnesses=["gym:*"], parameters={}, termination={"predicates": ["balanced"]},
                   step_budget=1000))
    out = run_skill(skill, h, obs=obs).outcome
    # An untrained deterministic policy drops the pole long before CartPole's 500-step limit.
    assert out.terminated and out.reason == "episode terminated" and 0 < out.steps < 500
    assert out.reward == out.steps  # CartPole pays 1 per step
    h.close()


def test_a_deterministic_policy_caught_in_a_loop_takes_random_actions(library: SkillLibrary) -> None:
    """A policy that only ever turns left sees the same view again after four turns: from then
    on each repeat gets a random action (seeded by what was seen), so the agent gets moving,
    and the same start gives the same run."""
    import torch

    h = make_harness("minigrid:MiniGrid-Empty-8x8-v0")
    policy = tiny_policy(obs_space=h.observation_space, act_space=h.action_space)
    with torch.no_grad():
        policy.actor_head.weight.zero_()
        policy.actor_head.bias.copy_(torch.tensor([5.0, 0, 0, 0, 0, 0, 0]))  # always "left"
    skill = library.register_policy(policy, **manifest(parameters={}, termination={"predicates": ["at(goal)"]},
                                                       step_budget=60))
    runs = []
    for _ in range(2):
        obs, _ = h.reset(seed=3)
        start = h.symbolic_state().agent["pos"]
        out = run_skill(skill, h, obs=obs).outcome
        runs.append((h.symbolic_state().agent["pos"], out.steps))
    h.close()
    assert runs[0] == runs[1] and runs[0][0] != start


def test_runner_refuses_what_it_cannot_run(library: SkillLibrary, doorkey) -> None:
    h, obs = doorkey
    skill, _ = _policy_skill(library, h, harnesses=["gym:*"])
    with pytest.raises(SkillError, match="does not accept harness"):
        run_skill(skill, h, obs=obs)
    with pytest.raises(SkillLoadError, match="features.fn: 'os.path:join' is outside the allowed modules"):
        _policy_skill(library, h, features={"fn": "os.path:join"})  # refused at registration
    skill, _ = _policy_skill(library, h)
    edited = skill.model_copy(update={"features": Hook(fn="os.path:join")})  # e.g. an edited manifest
    edited._dir = skill.path
    with pytest.raises(SkillLoadError, match="outside the allowed modules"):
        run_skill(edited, h, obs=obs)
    with pytest.raises(SkillError, match="obs="):
        run_skill(skill, h)


def test_evaluate_measures_from_start_states(library: SkillLibrary) -> None:
    h = make_harness(DOORKEY)
    skill, _ = _policy_skill(library, h, termination={"predicates": ["carrying(box,{color})"]}, step_budget=3)
    h.close()
    rep = evaluate_skill(skill, DOORKEY, episodes=4, seed=10)
    m = rep.measurement
    assert m is not None and (m.successes, m.episodes) == (0, 4) and m.ci_low == 0.0 and 0.4 < m.ci_high < 0.6
    assert all(o.reason == "step budget (3) exhausted" for o in rep.outcomes)
    install_primitives(library)
    rep = evaluate_skill(library.get("toggle"), DOORKEY, episodes=3, seed=0)
    assert rep.skipped.get("preconditions unmet", 0) + len(rep.outcomes) == 3


def test_feature_hook_and_code_termination_from_the_goto_module(library: SkillLibrary, doorkey) -> None:
    goto = pytest.importorskip("polar.domains.minigrid.goto")
    h, obs = doorkey
    policy = tiny_policy(obs_space=goto.observation_space(), act_space=goto.gym.spaces.Discrete(3))
    skill = library.register_policy(policy, **manifest(
        name="goto_untrained", parameters={"object": ["key", "door", "goal"], "color": ["yellow", "red"]},
        features={"fn": "polar.domains.minigrid.goto:hook_features"},
        termination={"check": "polar.domains.minigrid.goto:hook_done"}, step_budget=5))
    want = policy.value(goto.features(h.capability("grid"), "door", None))
    out = run_skill(skill, h, {"object": "door"}, obs=obs).outcome
    assert out.affordance == pytest.approx(want)
    assert out.steps == 5 or out.success  # an untrained policy rarely faces the door in 5 steps
    h.reset(seed=0)
    _act(h, "right")  # facing the key: the code-defined termination holds at once
    out = run_skill(skill, h, {"object": "key", "color": "yellow"}, obs=obs).outcome
    assert out.success and out.steps == 0
    out = run_skill(skill, h, {"object": "key", "color": "red"}, obs=obs).outcome
    assert not out.success


def test_a_bad_hook_is_refused_at_registration_and_uses_no_version(library: SkillLibrary, doorkey) -> None:
    h, _ = doorkey
    _policy_skill(library, h)  # reach@1
    for hook in ({"features": {"fn": "os.path:join"}}, {"termination": {"check": "polar.nowhere:f"}},
                 {"features": {"fn": "hooks.missing:features"}}):
        with pytest.raises(SkillLoadError, match="outside the allowed modules|cannot import|no hook file"):
            _policy_skill(library, h, **hook)
    assert library.versions("reach") == [1]
    assert _policy_skill(library, h)[0].version == 2  # the refused ones took no number


def test_hooks_from_the_library_hooks_folder(library: SkillLibrary, doorkey) -> None:
    """A user's own feature and termination hooks live in `<library>/hooks/*.py`."""
    h, obs = doorkey
    (library.root / "hooks").mkdir(parents=True)
    (library.root / "hooks" / "my_game.py").write_text(
        "CALLS = []\n"
        "def features(obs, args, harness=None):\n"
        "    CALLS.append(harness.capability('grid').agent_dir)\n"
        "    return obs\n"
        "def facing_key(state, args, obs, info):\n"
        "    return 'facing(key,yellow)' in state.predicates\n")
    skill, _ = _policy_skill(library, h, features={"fn": "hooks.my_game:features"},
                             termination={"check": "hooks.my_game:facing_key"}, step_budget=3)
    out = run_skill(library.get(skill.ref), h, {}, obs=obs).outcome
    assert out.steps == 3 or out.success  # the hook ran on the real harness
    h.reset(seed=0)
    _act(h, "right")  # facing the key: the user's termination check holds at once
    assert run_skill(library.get(skill.ref), h, {}, obs=obs).outcome.reason == "termination already holds"
    with pytest.raises(SkillLoadError, match="plain module name"):
        _policy_skill(library, h, features={"fn": "hooks.../etc/passwd:x"})


def test_a_policy_bug_is_the_skills_failure_not_the_harness(library: SkillLibrary, doorkey) -> None:
    h, obs = doorkey
    (library.root / "hooks").mkdir(parents=True)
    (library.root / "hooks" / "buggy.py").write_text(
        "def features(obs, args, harness=None):\n"
        "    if harness.capability('grid').step_count > 1:\n"
        "        raise KeyError('image')\n"
        "    return obs\n")
    skill, _ = _policy_skill(library, h, features={"fn": "hooks.buggy:features"}, step_budget=10)
    out = run_skill(skill, h, {}, obs=obs).outcome
    assert not out.success and out.cause == "skill-error" and out.harness_error is None
    assert out.reason.startswith("skill-error: KeyError") and out.steps == 2 and out.error_type == "KeyError"


def test_a_termination_check_that_raises_is_a_skill_error_after_the_steps_it_took(library: SkillLibrary,
                                                                                  doorkey) -> None:
    h, obs = doorkey
    (library.root / "hooks").mkdir(parents=True)
    (library.root / "hooks" / "check.py").write_text(
        "CALLS = []\n"
        "def done(state, args, obs, info):\n"
        "    CALLS.append(state)\n"
        "    if len(CALLS) == 3:\n"
        "        raise ValueError('x' * 1000)\n"
        "    return False\n")
    # no termination predicate: the check alone decides; it runs before the first step and
    # after each, and raises after the second
    skill, _ = _policy_skill(library, h, termination={"check": "hooks.check:done"}, step_budget=10)
    out = run_skill(skill, h, {}, obs=obs).outcome
    assert not out.success and out.cause == "skill-error" and out.error_type == "ValueError"
    assert out.steps == 2 and out.reason.startswith("skill-error: ValueError: xxx")
    assert out.reason.endswith("... (1000 characters)") and len(out.reason) < 400
