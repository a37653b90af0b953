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


def test_a_conditional_end_is_pursued_only_while_its_condition_holds() -> None:
    from polar.harnesses.base import HarnessSpec, SymbolicState
    from polar.planners.base import PlannerContext
    from polar.planners.decisions import Finish
    from polar.planners.symbolic import SymbolicPlanner

    skills = [SkillInfo(name="sip", description="drink up at a well", preconditions=["near(well)"],
                        effects=["full(water)"]),
              SkillInfo(name="earn", description="earn coins until holding n", parameters={"n": "int"},
                        effects=["has(coin,{n})"])]
    planner = SymbolicPlanner(goals=["full(water) when near(well)", "has(coin,2)"])
    discrete = {"type": "discrete", "n": 2}
    spec = HarnessSpec(id="test:wells", description="a test world", observation_space=discrete,
                       action_space=discrete)

    def decide(*preds: str):
        return planner.decide(PlannerContext(task="live", spec=spec, observation="", skills=skills,
                                             symbolic=SymbolicState(predicates=list(preds))))
    assert decide("near(well)").skill == "sip"
    assert decide().skill == "earn"  # away from the well the first end does not apply
    assert decide("near(well)", "full(water)").skill == "earn"
    assert isinstance(done := decide("has(coin,1)", "has(coin,2)"), Finish) and done.success
    with pytest.raises(Exception, match=r"goals: 'full\(water\) when near\(': "):
        SymbolicPlanner(goals=["full(water) when near("])
