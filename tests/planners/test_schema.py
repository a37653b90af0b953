"""The decision schema built from the library and the harness state (response_format)."""

from pathlib import Path

from polar.harnesses.base import SymbolicObject, SymbolicState
from polar.planners.base import PlannerContext, SkillInfo
from polar.planners.parse import parse_decision
from polar.planners.schema import decision_schema, response_format

CONTEXT = Path(__file__).resolve().parents[2] / "prompts" / "examples" / "doorkey_context.json"
GOTO = SkillInfo(name="goto", description="walk", parameters={"object": ["key", "door", "ball", "goal"],
                                                               "color": ["red", "yellow", "green"]})
LEFT = SkillInfo(name="left", description="turn")
STATE = SymbolicState(objects=[SymbolicObject(type="key", color="yellow"), SymbolicObject(type="door", color="yellow"),
                               SymbolicObject(type="goal", color="green")])


def _options(schema):
    d = schema["properties"]["decision"]
    return d.get("anyOf", [d])


def test_skill_names_and_arguments_are_enums_from_the_library():
    schema = decision_schema([GOTO, LEFT], "skill")
    assert schema["required"] == ["decision"] and schema["additionalProperties"] is False
    goto, left, finish = _options(schema)
    assert goto["properties"]["skill"] == {"const": "goto"}
    assert goto["properties"]["args"]["properties"]["object"]["enum"] == ["key", "door", "ball", "goal"]
    assert goto["properties"]["args"]["additionalProperties"] is False
    assert left["properties"]["args"]["properties"] == {}
    assert finish["properties"]["kind"] == {"const": "finish"} and "success" in finish["required"]
    assert "reason" not in goto["properties"]  # no free text unless the profile asks for it
    assert "reason" in _options(decision_schema([GOTO], "skill", reason=True))[0]["properties"]


def test_the_state_narrows_arguments_to_what_the_world_holds():
    goto = _options(decision_schema([GOTO], "skill", state=STATE))[0]["properties"]["args"]["properties"]
    assert goto["object"]["enum"] == ["key", "door", "goal"]  # no ball in this world
    assert goto["color"]["enum"] == ["yellow", "green"]
    # a parameter none of whose choices is in the world keeps them all
    paint = SkillInfo(name="paint", description="x", parameters={"shade": ["light", "dark"], "n": "int"})
    args = _options(decision_schema([paint], "skill", state=STATE))[0]["properties"]["args"]["properties"]
    assert args == {"shade": {"enum": ["light", "dark"]}, "n": {"type": "integer"}}


def test_the_carried_object_is_a_value_the_world_holds():
    """Issue 41's loops: the carried key is in no cell, so not in `objects`; the schema must still
    let `drop` name it (narrowed to the cells' objects, it allowed only the box in UnlockPickup),
    and only the skills that act on what is carried."""
    objects = {"object": ["key", "ball", "box"], "color": ["grey", "yellow", "red"]}
    drop = SkillInfo(name="drop", description="drop", parameters=objects, preconditions=["carrying({object},{color})"])
    pickup = SkillInfo(name="pickup", description="pick up", parameters=objects,
                       preconditions=["not carrying(any,any)", "facing({object},{color})"])
    carrying = SymbolicState(objects=[SymbolicObject(type="box", color="grey"), SymbolicObject(type="door", color="yellow")],
                             agent={"carrying": {"type": "key", "color": "red"}})
    d, p = (o["properties"]["args"]["properties"] for o in _options(decision_schema([drop, pickup], "skill", state=carrying))[:2])
    assert d["object"]["enum"] == ["key", "box"] and d["color"]["enum"] == ["grey", "yellow", "red"]
    assert p["object"]["enum"] == ["box"] and p["color"]["enum"] == ["grey", "yellow"]  # what it carries is no target
    empty_handed = carrying.model_copy(update={"agent": {"carrying": None}})
    args = _options(decision_schema([drop], "skill", state=empty_handed))[0]["properties"]["args"]["properties"]
    assert args["object"]["enum"] == ["box"]


def test_a_skill_that_seeks_its_object_may_name_one_not_seen_yet():
    """The memory's explore looks for what the memory does not hold yet: narrowed to the seen
    objects, `explore(object=goal)` was refused once the key and door were seen (issue 41)."""
    explore = SkillInfo(name="explore", description="find", parameters={"object": ["key", "door", "box", "goal"]},
                        optional=["object"], effects=["seen({object},{color})"])
    explore_args, goto_args = (o["properties"]["args"]["properties"]
                               for o in _options(decision_schema([explore, GOTO], "skill", state=STATE))[:2])
    assert explore_args["object"]["enum"] == ["key", "door", "box", "goal"]
    assert goto_args["object"]["enum"] == ["key", "door", "goal"]  # goto still only what the world holds


def test_a_skill_that_looks_until_its_argument_is_in_view_is_not_narrowed_either():
    """Crafter's explore (`sees({thing})`, in view now): narrowed to what is in view, `explore(thing=cow)`
    was refused whenever a tree or water was in view (issue 42); go_near, whose *precondition* is
    `sees({thing})`, is still narrowed."""
    explore = SkillInfo(name="explore", description="walk", parameters={"thing": ["key", "door", "box", "goal"]},
                        effects=["sees({thing})"])
    go_near = SkillInfo(name="go_near", description="walk", parameters={"thing": ["key", "door", "box", "goal"]},
                        preconditions=["sees({thing})"], effects=["near({thing})"])
    explore_args, near_args = (o["properties"]["args"]["properties"]
                               for o in _options(decision_schema([explore, go_near], "skill", state=STATE))[:2])
    assert explore_args["thing"]["enum"] == ["key", "door", "box", "goal"]
    assert near_args["thing"]["enum"] == ["key", "door", "goal"]


def test_modes_offer_their_kinds_and_every_schema_instance_parses():
    kinds = lambda mode: [o["properties"]["kind"]["const"] for o in _options(decision_schema([GOTO], mode))]  # noqa: E731
    assert kinds("skill") == ["skill", "finish"]
    assert kinds("plan") == ["plan", "finish"]
    assert kinds("code") == ["code", "finish"]
    assert kinds("auto") == ["skill", "plan", "code", "finish"]
    # replies shaped like each option are decisions the planner accepts
    for reply in ['{"decision": {"kind": "skill", "skill": "goto", "args": {"object": "key", "color": "yellow"}}}',
                  '{"decision": {"kind": "plan", "steps": [{"kind": "skill", "skill": "left", "args": {}}]}}',
                  '{"decision": {"kind": "finish", "success": true}}']:
        parse_decision(reply)


def test_response_format_takes_the_engines_form():
    schema = decision_schema([GOTO], "skill")
    assert response_format(schema, "json_object_schema") == {"type": "json_object", "schema": schema}
    rf = response_format(schema, "json_schema")
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] is schema


def test_example_context_gives_a_schema_over_its_skills():
    ctx = PlannerContext.model_validate_json(CONTEXT.read_text())
    names = [o["properties"].get("skill", {}).get("const") for o in _options(decision_schema(ctx.skills, "skill"))]
    assert names == [s.name for s in ctx.skills] + [None]


def test_optional_arguments_may_be_left_out():
    """goto's x, y (which of several same-coloured objects) are optional: a reply without
    them fits the schema; a required parameter stays required."""
    goto = GOTO.model_copy(update={"parameters": {**GOTO.parameters, "x": "int", "y": "int"},
                                   "optional": ["color", "x", "y"]})
    args = _options(decision_schema([goto], "skill"))[0]["properties"]["args"]
    assert args["required"] == ["object"] and args["properties"]["x"] == {"type": "integer"}
    assert _options(decision_schema([GOTO], "skill"))[0]["properties"]["args"]["required"] == ["object", "color"]


REACH = SkillInfo(name="reach", description="roll", parameters={"col": "int", "row": "int"},
                  optional=["col", "row"], effects=["at_cell({row},{col})"])


def test_coordinates_are_given_together_or_not_at_all():
    """reach(row, col) names a cell and reach() the goal; reach(row=1) names nothing, so the
    schema offers the two forms only. goto's x, y (one place) likewise; its colour stays free."""
    [with_cell, without] = _options(decision_schema([REACH], "skill"))[0]["properties"]["args"]["anyOf"]
    assert with_cell["required"] == ["col", "row"] and set(with_cell["properties"]) == {"col", "row"}
    assert without["required"] == [] and without["properties"] == {}
    goto = GOTO.model_copy(update={"parameters": {**GOTO.parameters, "x": "int", "y": "int"},
                                   "optional": ["color", "x", "y"],
                                   "preconditions": ["reachable({object},{color},{x},{y})"],
                                   "effects": ["facing({object},{color},{x},{y})"]})
    [placed, anywhere] = _options(decision_schema([goto], "skill"))[0]["properties"]["args"]["anyOf"]
    assert placed["required"] == ["object", "x", "y"] and "color" in placed["properties"]
    assert anywhere["required"] == ["object"] and set(anywhere["properties"]) == {"object", "color"}
    # integers that never share a template are independent
    lone = REACH.model_copy(update={"effects": ["in_row({row})", "in_col({col})"]})
    args = _options(decision_schema([lone], "skill"))[0]["properties"]["args"]
    assert "anyOf" not in args and args["required"] == []


def test_an_argument_the_call_brings_about_is_not_narrowed():
    """Crafter's face_free(name) faces a cell where NAME can be placed (effect `can_place({name})`):
    the furnace is not in the world yet, and narrowed, `face_free(name=furnace)` was refused
    (issue 42). A parameter a precondition names, or no effect names, is still narrowed."""
    face_free = SkillInfo(name="face_free", description="x", parameters={"name": ["key", "door", "box"]},
                          effects=["can_place({name})"])
    place = SkillInfo(name="place", description="x", parameters={"name": ["key", "door", "box"]},
                      preconditions=["facing({name})"], effects=["placed({name})"])
    ff, pl, goto = (o["properties"]["args"]["properties"]
                    for o in _options(decision_schema([face_free, place, GOTO], "skill", state=STATE))[:3])
    assert ff["name"]["enum"] == ["key", "door", "box"]
    assert pl["name"]["enum"] == ["key", "door"] and goto["object"]["enum"] == ["key", "door", "goal"]
