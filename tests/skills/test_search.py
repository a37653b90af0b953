"""Search ranks the obvious skill first, filters by harness and prefers measured success."""

from __future__ import annotations

import pytest

from polar.domains.minigrid.primitives import install_primitives, primitive_skills
from polar.skills.model import Measurement, Skill
from polar.skills.search import bm25, rank, tokens
from polar.skills.store import SkillLibrary
from tests.skills.conftest import tiny_policy

COLORS = ["red", "green", "blue", "purple", "yellow", "grey"]


def _goto() -> Skill:
    _, config = tiny_policy().to_state()
    return Skill(
        name="goto", kind="policy", policy={"config": config}, harnesses=["minigrid:*"],
        description="Navigate to an object (key, door, ball, box or goal square) of a colour and "
                    "face it; for the goal, stand on it.",
        parameters={"object": ["key", "door", "ball", "box", "goal"], "color": COLORS},
        effects=["facing({object},{color})"], termination={"predicates": ["facing({object},{color})"]},
    )


def _balance() -> Skill:
    _, config = tiny_policy().to_state()
    return Skill(name="balance", kind="policy", policy={"config": config}, harnesses=["gym:CartPole-*"],
                 description="Keep the pole upright on the moving cart for as long as possible.",
                 termination={"predicates": ["never"]})


SKILLS = [*primitive_skills(), _goto(), _balance()]


@pytest.mark.parametrize(("query", "harness", "best"), [
    ("pick up the yellow key", "minigrid:MiniGrid-DoorKey-8x8-v0", "pickup"),
    ("open the locked door", "minigrid:MiniGrid-DoorKey-8x8-v0", "toggle"),
    ("go to the red ball", "minigrid:MiniGrid-Fetch-8x8-N3-v0", "goto"),
    ("navigate to the goal square", None, "goto"),
    ("drop the carried box", "minigrid:BabyAI-PutNextLocal-v0", "drop"),
    ("keep the pole balanced upright", "gym:CartPole-v1", "balance"),
])
def test_obvious_skill_ranks_first(query: str, harness: str | None, best: str) -> None:
    ranked = rank(SKILLS, query, harness)
    assert ranked[0][0].name == best, [(s.name, round(x, 3)) for s, x in ranked]
    assert ranked[0][1] > ranked[1][1] if len(ranked) > 1 else True


def test_incompatible_skills_are_excluded_or_last() -> None:
    names = [s.name for s, _ in rank(SKILLS, "go to the ball", "gym:CartPole-v1")]
    assert names == ["balance"]
    names = [s.name for s, _ in rank(SKILLS, "go to the ball", "gym:CartPole-v1", include_incompatible=True)]
    assert names[0] == "balance" and set(names[1:]) == {"goto", "pickup", "drop", "toggle", "unlock", "left", "right", "forward"}


def test_measured_success_breaks_ties_and_scales_relevance() -> None:
    a, b = _goto().model_copy(update={"name": "goto_a"}), _goto().model_copy(update={"name": "goto_b"})
    a._evaluations = [Measurement.from_counts(2, 10, harness="minigrid:X")]
    b._evaluations = [Measurement.from_counts(10, 10, harness="minigrid:X")]
    assert [s.name for s, _ in rank([a, b], "go to the key", "minigrid:X")] == ["goto_b", "goto_a"]


def test_library_search_over_a_real_library(tmp_path) -> None:
    lib = SkillLibrary(tmp_path)
    install_primitives(lib)
    assert lib.search("open a door", harness="minigrid:MiniGrid-DoorKey-8x8-v0")[0].name == "toggle"
    assert lib.search("pick up the ball", harness="gym:CartPole-v1") == []
    assert len(lib.search("", harness="minigrid:Any", limit=2)) == 2


def test_bm25_basics() -> None:
    assert tokens("Picks up the Keys") == ["pick", "key"]
    s = bm25("red key", ["a red key here", "a blue ball", "red red red ball ball ball"])
    assert s[0] > s[2] > s[1] == 0.0
