import pytest

from polar.planners.decisions import Finish, Plan, SkillCall
from polar.planners.parse import ReplyParseError, extract_json, parse_decision


def test_plain_fenced_and_embedded_json_are_extracted():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Here you go:\n```json\n{"a": 2}\n```\nanything else?') == {"a": 2}
    assert extract_json('I pick {"a": {"b": [1, 2]}} because reasons. {"c": 3}') == {"a": {"b": [1, 2]}}


def test_bare_decision_without_envelope_is_accepted():
    d = parse_decision('{"kind": "skill", "skill": "goto", "args": {"object": "key"}}')
    assert d == SkillCall(skill="goto", args={"object": "key"})


def test_plan_with_mixed_steps_validates():
    d = parse_decision('{"decision": {"kind": "plan", "steps": [{"kind": "skill", "skill": "goto"},'
                       ' {"kind": "subtask", "description": "open the door"}]}}')
    assert isinstance(d, Plan) and len(d.steps) == 2


@pytest.mark.parametrize(("text", "needle"), [
    ("", "empty"),
    ("no json here", "no JSON object"),
    ('{"decision": {"kind": "finish", "success": tru', "not valid JSON"),
    ('{"decision": {"kind": "skill"}}', "decision.skill.skill: Field required"),
    ('{"decision": {"kind": "finish", "success": true, "colour": 1}}', "unknown field"),
    ('{"decision": {"kind": "teleport"}}', "teleport"),
])
def test_errors_say_what_is_wrong(text, needle):
    with pytest.raises(ReplyParseError, match=needle):
        parse_decision(text)


def test_finish_round_trip():
    assert parse_decision('{"decision": {"kind": "finish", "success": false, "reason": "stuck"}}') == Finish(
        success=False, reason="stuck")
