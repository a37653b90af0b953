"""The `crafter:` harness: Crafter's own game, its view read as cells, nothing beyond the view."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("crafter")

from polar.domains.crafter import view  # noqa: E402
from polar.domains.crafter.harness import ACHIEVEMENTS, CrafterHarness  # noqa: E402
from polar.errors import HarnessError  # noqa: E402
from polar.harnesses.check import check_harness  # noqa: E402
from polar.harnesses.registry import check_harness_id, make_harness  # noqa: E402


@pytest.fixture
def harness():
    h = make_harness("crafter:")
    yield h
    h.close()


def test_ids_and_spec():
    check_harness_id("crafter:")
    check_harness_id("crafter:Crafter")
    with pytest.raises(HarnessError):
        check_harness_id("crafter:Nope")
    with pytest.raises(HarnessError, match="unknown harness 'minigrid:'"):
        check_harness_id("minigrid:")  # a bare prefix names a harness only where the domain says so
    h = make_harness("crafter:")
    assert h.spec.max_steps == 10_000  # Crafter's standard episode length
    assert len(h.spec.action_meanings) == 17 and h.spec.action_meanings[5] == "do"
    assert h.spec.extra["achievements"] == list(ACHIEVEMENTS) and len(ACHIEVEMENTS) == 22
    assert not h.spec.reports_success  # Crafter has no success: it is scored by achievements


def test_view_is_the_window_of_crafters_own_semantic_map(harness):
    """Every step, `semantic` equals Crafter's whole-world semantic map cropped to the 9x7
    cells the frame shows around the player (cells outside the world: 0)."""
    import crafter

    obs, _ = harness.reset(seed=3)
    env = harness.env
    world = env._world
    rng = np.random.default_rng(0)
    classes = {crafter.objects.Player: "player", crafter.objects.Cow: "cow", crafter.objects.Zombie: "zombie",
               crafter.objects.Skeleton: "skeleton", crafter.objects.Arrow: "arrow"}
    for _ in range(300):
        obs, _, term, trunc, info = harness.step(int(rng.integers(17)))
        assert "semantic" not in info and "player_pos" not in info  # the whole map stays inside
        full = env._sem_view()
        px, py = env._player.pos
        for i in range(9):
            for j in range(7):
                x, y = px + i - 4, py + j - 3
                mat, obj = view.MATERIALS[obs["semantic"][i, j, 0]], view.OBJECTS[obs["semantic"][i, j, 1]]
                if not (0 <= x < 64 and 0 <= y < 64):
                    assert (mat, obj) == ("none", "none")
                    continue
                m, o = world[(x, y)]
                assert mat == m
                want = "none" if o is None else classes.get(type(o)) or view.object_name(o)
                assert obj == want
                if o is None:  # Crafter's map shows the material there
                    assert full[x, y] == world._mat_ids[m]
        if term or trunc:
            break
    assert obs["semantic"][4, 3, 1] == view.OBJECTS.index("player")


def test_nothing_outside_the_view_reaches_the_observation(harness):
    """Changing the world outside the 9x7 window changes no part of the observation."""
    obs, _ = harness.reset(seed=5)
    world = harness.env._world
    px, py = harness.env._player.pos
    for x in range(64):
        for y in range(64):
            if abs(x - px) > 4 or abs(y - py) > 3:
                world[(x, y)] = "diamond"
    again = harness._observe(harness.env.render())
    for k in obs:
        assert np.array_equal(np.asarray(obs[k]), np.asarray(again[k])), k


def test_seed_names_a_world(harness):
    a, _ = harness.reset(seed=11)
    harness.reset(seed=12)
    harness.reset(seed=99)
    b, _ = harness.reset(seed=11)
    assert np.array_equal(a["image"], b["image"]) and np.array_equal(a["semantic"], b["semantic"])
    c, _ = harness.reset(seed=12)
    assert not np.array_equal(a["semantic"], c["semantic"])


def test_achievements_are_predicates_and_episode_stats(harness):
    """Collecting wood: the harness reports it in the episode stats, the symbolic state says
    achieved(collect_wood) and has(wood), and the reward is Crafter's +1."""
    obs, _ = harness.reset(seed=0)
    env = harness.env
    p = env._player
    # face a tree: put one in the cell the player faces (the world's own setter)
    target = (int(p.pos[0] + p.facing[0]), int(p.pos[1] + p.facing[1]))
    env._world[target] = "tree"
    obs, *_ = harness.step(0)  # noop: the view now shows it
    assert harness.symbolic_state().holds("facing(tree)")
    total = 0.0
    for _ in range(20):  # collecting wood succeeds with probability < 1 per `do`
        obs, r, term, trunc, _ = harness.step(5)
        total += r
        if obs["inventory"][view.ITEMS.index("wood")]:
            break
    assert obs["inventory"][view.ITEMS.index("wood")] >= 1
    assert harness.episode_stats()["achievements"]["collect_wood"] >= 1
    assert total >= 1.0
    sym = harness.symbolic_state()
    assert sym.holds("achieved(collect_wood)") and sym.holds("has(wood)")
    assert not sym.holds("achieved(collect_stone)")
    text = harness.render_text(obs)
    assert "Inventory: wood 1" in text and "Facing" in text and "Daylight" in text


def test_death_terminates_and_length_truncates():
    h = CrafterHarness(length=30)
    h.reset(seed=0)
    ends = [h.step(0)[2:4] for _ in range(30)]
    assert ends[-1] == (False, True) and not any(any(e) for e in ends[:-1])
    h.reset(seed=0)
    h.env._player.health = 0  # a death: the episode is over, not cut short
    _, _, term, trunc, _ = h.step(0)
    assert term and not trunc


def test_pixels_only_is_the_frame_alone():
    h = make_harness("crafter:", pixels_only=True)
    obs, _ = h.reset(seed=1)
    assert set(obs) == {"image"} and obs["image"].shape == (64, 64, 3)
    assert h.spec.extra["observation_kinds"] == {"image": "image"}
    assert h.symbolic_state() is None  # no cells to read predicates from
    assert "pixels_only" in h.render_text(obs)
    _, _, _, _, info = h.step(0)
    assert all(np.isscalar(v) for v in info.values())  # flat: a vector env batches it


def test_bad_action_and_kwargs_are_named():
    h = make_harness("crafter:")
    h.reset(seed=0)
    with pytest.raises(HarnessError, match="action 17"):
        h.step(17)
    with pytest.raises(HarnessError, match="length"):
        make_harness("crafter:", length=0)


def test_harness_check_passes():
    report = check_harness("crafter:", episodes=2)
    assert report.passed, report.problems
    assert report.deterministic and report.episodes == 2
