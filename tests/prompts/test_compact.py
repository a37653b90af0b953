"""The `compact_facts` filter (polar.prompts.compact): ladders cut to their top rung in the
direction the template names, facts grouped by name, nothing else dropped."""

from __future__ import annotations

from polar.prompts.compact import applicable, compact_facts, top_of_ladders
from polar.prompts.templates import load_template

FACTS = ["achieved(collect_wood)", "has(wood)", "has(wood,1)", "has(wood,2)", "has(wood,3)", "has(wood_pickaxe)",
         "has(wood_pickaxe,1)", "below(drink,6)", "below(drink,7)", "below(drink,8)", "below(drink,9)",
         "below(food,9)", "low(drink)", "sees(tree)", "achieved(place_table)", "sees(water)", "dark", "not x"]


def test_a_ladder_keeps_its_top_rung_in_its_direction() -> None:
    top = top_of_ladders(FACTS, at_least=["has"], below=["below"])
    assert [f for f in top if f.startswith(("has", "below"))] == [
        "has(wood,3)", "has(wood_pickaxe,1)", "below(drink,6)", "below(food,9)"]
    assert set(FACTS) - set(top) == {"has(wood)", "has(wood,1)", "has(wood,2)", "has(wood_pickaxe)",
                                     "below(drink,7)", "below(drink,8)", "below(drink,9)"}
    # a name the template does not call a ladder is left whole; a bare has(x) with no count stays
    assert top_of_ladders(FACTS, at_least=["has"]) == [f for f in FACTS if f not in (
        "has(wood)", "has(wood,1)", "has(wood,2)", "has(wood_pickaxe)")]
    assert top_of_ladders(["has(sapling)"], at_least=["has"]) == ["has(sapling)"]
    assert top_of_ladders(FACTS) == FACTS


def test_facts_are_grouped_by_name_in_order_of_first_appearance() -> None:
    text = compact_facts(FACTS, at_least=["has"], below=["below"])
    assert text == ("achieved(collect_wood place_table) has(wood,3 wood_pickaxe,1) below(drink,6 food,9) "
                    "low(drink) sees(tree water) dark not x")


def test_the_crafter_student_template_renders_them() -> None:
    t = load_template("student_crafter_skill")
    skills = [{"name": "chop_wood", "preconditions": ["sees(tree)"]},
              {"name": "shelter", "preconditions": ["has(wood_pickaxe)", "sees(stone)"]},
              {"name": "drink_up", "preconditions": ["below(drink,{n})", "not dark"]}]
    text = t.render({"task": "t", "predicates": FACTS, "history": [], "feedback": None, "skills": skills})
    assert "Skills: chop_wood\n" in text and "has(wood,3 wood_pickaxe,1)" in text and "has(wood)" not in text


def test_applicable_skills_are_those_whose_preconditions_hold() -> None:
    skills = [{"name": "a", "preconditions": []}, {"name": "b", "preconditions": ["has(wood,2)", "sees(tree)"]},
              {"name": "c", "preconditions": ["has(wood,4)"]}, {"name": "d", "preconditions": ["sees({thing})"]},
              {"name": "e", "preconditions": ["not low(drink)"]}, {"name": "f", "preconditions": ["not dark"]}]
    assert [s["name"] for s in applicable(skills, FACTS)] == ["a", "b", "d"]
    assert [s["name"] for s in applicable(skills, ["dark"])] == ["a", "e"]
