"""Counted resources in goal regression (`uses`, polar.planners.symbolic): a skill declares the
counted atoms a call uses up, and the planner gathers enough before a call that would use up
what a met precondition of the plan counts on. Nothing here is any world's: coins and a shop."""

from __future__ import annotations

import pytest

from polar.planners.base import SkillInfo
from polar.planners.symbolic import Regression
from polar.skills.model import Skill


def _coins(n: int) -> frozenset[str]:
    return frozenset({f"has(coin,{k})" for k in range(1, n + 1)} | {"sees(shop)"})


SKILLS = [
    SkillInfo(name="earn", description="earn coins until holding n", parameters={"n": "int"},
              effects=["has(coin,{n})"]),
    SkillInfo(name="open_shop", description="open a shop (costs 2 coins)", preconditions=["has(coin,2)"],
              effects=["near(shop)"], uses=["has(coin,2)"]),
    SkillInfo(name="buy_map", description="buy a map (1 coin) at a shop", preconditions=["has(coin,1)", "near(shop)"],
              effects=["has(map)"], uses=["has(coin,1)"]),
]


def test_a_call_that_would_use_up_a_met_precondition_waits_for_enough() -> None:
    # two coins: opening the shop would leave none for the map, so earn a third first
    call = Regression(SKILLS, _coins(2), [], 10).achieve("has(map)")
    assert (call.skill, call.args) == ("earn", {"n": 3})
    assert Regression(SKILLS, _coins(3), [], 10).achieve("has(map)").skill == "open_shop"
    # without `uses` declared the planner does not know: it opens the shop with two
    blind = [s.model_copy(update={"uses": []}) for s in SKILLS]
    assert Regression(blind, _coins(2), [], 10).achieve("has(map)").skill == "open_shop"
    # one coin: the shop's own precondition (2 coins) leads; its use is checked when it is next
    assert Regression(SKILLS, _coins(1), [], 10).achieve("has(map)").args == {"n": 2}


def test_uses_are_counted_atoms_and_left_out_of_a_manifest_without_them() -> None:
    base = dict(name="open_shop", description="d", kind="primitive", action="open")
    assert '"uses"' not in Skill(**base).manifest_json()  # older manifests keep their hash
    assert '"uses"' in Skill(**base, uses=["has(coin,2)"]).manifest_json()
    with pytest.raises(ValueError, match=r"uses: 'has\(coin\)': a counted atom"):
        Skill(**base, uses=["has(coin)"])
