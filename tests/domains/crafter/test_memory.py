"""Crafter's view in the agent's own memory (polar/domains/crafter/memory_reader.py): the map
built from a walk is the world on every cell seen and unknown elsewhere; the scripted skills
walk to remembered water when none is in view, reading only the view and the memory."""

from __future__ import annotations

import pytest

pytest.importorskip("crafter")

from polar.agent.memory import MemoryHarness  # noqa: E402
from polar.domains.crafter import skills, view  # noqa: E402
from polar.domains.crafter.memory_reader import thing_of, walk_to_remembered  # noqa: E402
from polar.domains.crafter.moves import explore_act  # noqa: E402
from polar.errors import HarnessError  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402


def _window(pos: tuple[int, int]) -> set[tuple[int, int]]:
    return {(pos[0] + i - 4, pos[1] + j - 3) for i in range(9) for j in range(7)
            if 0 <= pos[0] + i - 4 < 64 and 0 <= pos[1] + j - 3 < 64}


def test_odometry_is_declared_and_off_by_default():
    plain = make_harness("crafter:")
    assert "pose" not in plain.observation_space.spaces and "memory_reader" not in plain.capabilities()
    with pytest.raises(HarnessError, match="memory reader"):
        MemoryHarness(plain)
    h = make_harness("crafter:", odometry=True)
    assert "pose" in h.observation_space.spaces and "odometry" in h.spec.description
    obs, _ = h.reset(seed=1)
    assert tuple(obs["pose"]) == tuple(int(v) for v in h.env._player.pos)
    for _ in range(20):  # declared: every observation lies in the declared space
        assert h.observation_space.contains(obs)
        obs = h.step(h.action_space.sample())[0]
    with pytest.raises(HarnessError, match="odometry"):
        make_harness("crafter:", odometry=True, pixels_only=True)


def test_memory_of_a_walk_is_the_world_where_seen_and_unknown_elsewhere():
    mh = MemoryHarness(make_harness("crafter:", odometry=True))
    obs, _ = mh.reset(seed=5)
    env, memory = mh.inner.env, mh.capability("memory")
    seen = _window(tuple(int(v) for v in env._player.pos))
    for t in range(250):
        obs, _, term, trunc, _ = mh.step(explore_act({"semantic": obs["semantic"], "facing": obs["facing"]}, {}))
        pos = tuple(int(v) for v in env._player.pos)
        assert memory.pose == pos and memory.step == t + 1
        seen |= _window(pos)
        for cell in _window(pos):  # the cells in view now: exactly what the world holds, seen now
            mat, obj = env._world[cell]
            want = "none" if obj is None or cell == pos else view.object_name(obj)
            assert thing_of(memory.cells[cell]) == (want if want != "none" else mat)
            assert memory.seen_at[cell] == t + 1
        if term or trunc:
            break
    assert set(memory.cells) == seen  # unknown (absent) wherever the view never reached
    assert len(seen) > 3 * 63  # the walk went somewhere
    for cell, code in memory.cells.items():  # materials do not move: every remembered one is the world's
        assert view.MATERIALS[code[0]] == env._world[cell][0]
    sym = mh.symbolic_state()
    assert {p for p in sym.predicates if p.startswith("remembers(")} == {
        f"remembers({t})" for t in ("water", "cow", "tree", "stone", "coal", "iron", "table", "furnace")
        if any(thing_of(c) == t for c in memory.cells.values())}
    assert "Remembered (offsets from you)" in mh.render_text(obs)
    with pytest.raises(HarnessError, match="no capability 'grid'"):
        mh.capability("grid")


def _walk_away_from_water(mh: MemoryHarness, seed: int) -> dict:
    """Reset to world `seed`, explore until water has been seen, then walk on until it is out of view."""
    obs, _ = mh.reset(seed=seed)
    water = view.MATERIALS.index("water")
    seen_water = False
    for _ in range(600):
        in_view = bool((obs["semantic"][..., 0] == water).any())
        if seen_water and not in_view:
            return obs
        seen_water |= in_view
        obs, _, term, trunc, _ = mh.step(explore_act({"semantic": obs["semantic"], "facing": obs["facing"]}, {}))
        assert not (term or trunc)
    pytest.skip(f"world {seed}: no water seen then left within 600 steps")


def test_drink_up_walks_to_remembered_water_and_drinks():
    mh = MemoryHarness(make_harness("crafter:", odometry=True))
    obs = _walk_away_from_water(mh, seed=2)
    memory = mh.capability("memory")
    assert "remembers(water)" in mh.symbolic_state().predicates
    assert "sees(water)" not in mh.symbolic_state().predicates
    x = skills.view_features(obs, {}, mh)
    assert set(x) == {"semantic", "facing", "memory"} and x["memory"] is memory  # all a skill reads
    assert skills.drink_act(x, {}) == walk_to_remembered(memory, "water")
    drink = view.VITALS.index("drink")
    mh.inner.env._player.inventory["drink"] = start = 4  # thirsty (staged), so a sip shows
    for _ in range(80):
        obs, _, term, _, _ = mh.step(skills.drink_act(skills.view_features(obs, {}, mh), {}))
        assert not term
        if int(obs["vitals"][drink]) > start:
            break
    assert int(obs["vitals"][drink]) > start  # it found its way back and drank


def test_without_memory_the_skills_act_as_before():
    """No memory (a plain harness): drink_up and explore act on the view alone, as before."""
    h = make_harness("crafter:")
    obs, _ = h.reset(seed=2)
    x = skills.view_features(obs, {}, h)
    assert x["memory"] is None
    assert skills.explore_act(x, {"thing": "water"}) == explore_act(x, {})
