"""The decision JSON schema built from the skills on offer and the harness's state.

Sent as `response_format`, it lets a constrained-decoding engine (llama.cpp turns it into a
grammar) produce only replies that parse: skill names are an enum of the library's skills,
each skill's arguments an enum of its declared choices (optional ones may be left out, e.g.
goto's `x`, `y` that name one of several same-coloured objects), and the decision kinds those the
planner's mode allows. With `state` (the symbolic state, in `predicates` observation mode)
each argument's choices are narrowed to the values present in the world (the types and
colours of its objects) when any are; in `view` mode nothing of the hidden state leaks into
the schema. Optional integer parameters that fill one predicate template together are the
coordinates of one place (goto's `x`, `y`; reach's `row`, `col`): a call gives all of them or
none (`reach(row=1)` names no cell), so the schema offers both forms and nothing in between.

    schema = decision_schema(context.skills, "skill", state=context.symbolic)
    response_format(schema, "json_object_schema")   # llama-cpp-python's form
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from polar.harnesses.base import SymbolicState
from polar.planners.base import SkillInfo
from polar.predicates import placeholders

SchemaStyle = Literal["json_object_schema", "json_schema"]
MAX_PLAN_STEPS = 8


def _closed(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required, "additionalProperties": False}


def world_values(state: SymbolicState | None) -> set[str]:
    """The argument values the world holds: every object's type and colour."""
    if state is None:
        return set()
    return {v for o in state.objects for v in (o.type, o.color) if v}


def carried_values(state: SymbolicState | None) -> set[str]:
    """The carried object's type and colour: it is in no cell, so not in `objects`."""
    carried = ((state.agent or {}).get("carrying") if state is not None else None) or {}
    return {v for v in (carried.get("type"), carried.get("color")) if v}


def acts_on_carried(skill: SkillInfo) -> bool:
    """A skill whose precondition is carrying its own argument (drop): its call names the
    carried object. Narrowed to the cells' objects alone, drop could not name the carried key
    and was forced to name the box (issue 41's loops); goto or pickup never name it."""
    return any(p.startswith("carrying(") and "{" in p for p in skill.preconditions)


def seeks_unseen(skill: SkillInfo) -> bool:
    """A skill whose effect is seeing its own argument (the memory's explore): it is called for
    an object not seen yet, so its choices are not narrowed to the objects the state holds.
    Narrowed, `explore(object=goal)` was a reply the served schema refused once the key or door
    was seen (518 of 5835 memory-mode teacher decisions, every one an explore; issue 41).
    Crafter's explore has the effect `sees({thing})` (in view now): narrowed to what is in view,
    `explore(thing=cow)` was refused whenever a tree or water was in view (issue 42)."""
    return any(e.startswith(("seen(", "sees(")) and "{" in e for e in skill.effects)


def _arg_schema(choices: list[str] | str, present: set[str]) -> dict[str, Any]:
    if isinstance(choices, str):  # a type name, not a list of choices
        return {"type": {"int": "integer", "float": "number", "bool": "boolean"}.get(choices, "string")}
    narrowed = [c for c in choices if c in present]
    return {"enum": narrowed or list(choices)}


def coordinate_groups(skill: SkillInfo) -> list[list[str]]:
    """The skill's optional integer parameters that fill a precondition or effect template
    together (`at_cell({row},{col})`): the coordinates of one place, given together or not at all."""
    ints = {p for p in skill.optional if skill.parameters.get(p) == "int"}
    groups: list[set[str]] = []
    for template in [*skill.preconditions, *skill.effects]:
        group = {p for p in placeholders(template) if p in ints}
        if len(group) < 2:
            continue
        overlapping = [g for g in groups if g & group]
        groups = [g for g in groups if not g & group] + [group.union(*overlapping)]
    return [[p for p in skill.parameters if p in g] for g in groups]


def brings_about(skill: SkillInfo, param: str) -> bool:
    """Whether the parameter names what the call brings about, not a thing it acts on: an
    effect names it and no precondition does, so the thing need not be in the state and its
    choices are not narrowed to what the state holds. Crafter's `face_free(name)` (effect
    `can_place({name})`) faces a cell where a furnace can go, no furnace in sight yet; narrowed,
    `face_free(name=furnace)` was a reply the served schema refused (14 of 324 teacher targets of
    a 4-episode run, issue 42). A parameter no effect names stays narrowed, as before."""
    slot = f"{{{param}}}"
    return any(slot in e for e in skill.effects) and not any(slot in c for c in skill.preconditions)


def _args_schema(skill: SkillInfo, present: set[str]) -> dict[str, Any]:
    props = {p: _arg_schema(c, set() if brings_about(skill, p) else present)
             for p, c in skill.parameters.items()}
    groups = coordinate_groups(skill)
    forms = []
    for given in itertools.product([True, False], repeat=len(groups)):
        left_out = {p for g, keep in zip(groups, given, strict=True) if not keep for p in g}
        needed = {p for g, keep in zip(groups, given, strict=True) if keep for p in g}
        forms.append(_closed({p: v for p, v in props.items() if p not in left_out},
                             [p for p in skill.parameters if p not in skill.optional or p in needed]))
    return forms[0] if len(forms) == 1 else {"anyOf": forms}


def skill_call_schema(skill: SkillInfo, present: set[str], reason: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {"kind": {"const": "skill"}, "skill": {"const": skill.name},
                             "args": _args_schema(skill, present)}
    if reason:
        props["reason"] = {"type": "string", "maxLength": 160}
    return _closed(props)


def finish_schema(reason: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {"kind": {"const": "finish"}, "success": {"type": "boolean"}}
    if reason:
        props["reason"] = {"type": "string", "maxLength": 160}
    return _closed(props)


def decision_schema(skills: list[SkillInfo], mode: str, *, state: SymbolicState | None = None,
                    reason: bool = False) -> dict[str, Any]:
    """The `{"decision": ...}` envelope's schema for `mode` (skill | plan | code | auto)."""
    present, carried = world_values(state), carried_values(state)
    calls = [skill_call_schema(s, set() if seeks_unseen(s) else present | carried if acts_on_carried(s) else present,
                               reason) for s in skills]
    options: list[dict[str, Any]] = []
    if mode in ("skill", "auto"):
        options += calls
    if mode in ("plan", "auto") and calls:
        step = calls[0] if len(calls) == 1 else {"anyOf": calls}
        props: dict[str, Any] = {"kind": {"const": "plan"},
                                 "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": MAX_PLAN_STEPS}}
        options.append(_closed(props))
    if mode in ("code", "auto"):
        options.append(_closed({"kind": {"const": "code"}, "source": {"type": "string"}}))
    options.append(finish_schema(reason))
    decision = options[0] if len(options) == 1 else {"anyOf": options}
    return _closed({"decision": decision})


def emitted_order(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with every object's keys in the order the served grammar writes them.

    llama.cpp's JSON-schema grammar (llama-cpp-python's `_build_object_rule`) emits an object's
    *required* properties first, in schema order, then the optional ones, in schema order. A
    training target in any other order is a reply the served model cannot give: trained on
    `{"color": "yellow", "object": "key"}` with `object` required, the grammar forces
    `{"object": ...` first and the model, which only saw `object` last, closes the object there
    and never names a colour (issue 41). Of an `anyOf`, the first alternative whose keys and
    constants fit `value` decides; a value no alternative fits keeps its order."""
    if "anyOf" in schema:
        branch = next((b for b in schema["anyOf"] if _fits(value, b)), None)
        return value if branch is None else emitted_order(value, branch)
    if isinstance(value, dict) and "properties" in schema:
        props, required = schema["properties"], set(schema.get("required", []))
        order = [k for k in props if k in required] + [k for k in props if k not in required]
        ordered = {k: emitted_order(value[k], props[k]) for k in order if k in value}
        return {**ordered, **{k: v for k, v in value.items() if k not in ordered}}
    if isinstance(value, list) and "items" in schema:
        return [emitted_order(v, schema["items"]) for v in value]
    return value


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether `value` can be an instance of `schema` as far as its keys and constants say (the
    choice among `anyOf` alternatives: skill calls differ by their `skill` constant, argument
    forms by which coordinates they hold)."""
    if "anyOf" in schema:
        return any(_fits(value, b) for b in schema["anyOf"])
    if "const" in schema:
        return bool(value == schema["const"])
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        return (isinstance(value, dict) and set(schema.get("required", [])) <= set(value)
                and all(k in props and _fits(v, props[k]) for k, v in value.items()))
    return True


def response_format(schema: dict[str, Any], style: SchemaStyle) -> dict[str, Any]:
    """`response_format` in the form the engine takes: llama-cpp-python's server wants
    `{"type": "json_object", "schema": ...}` (it answers 500 to the OpenAI form);
    OpenAI and vLLM take `{"type": "json_schema", "json_schema": {...}}`."""
    if style == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "decision", "schema": schema}}
