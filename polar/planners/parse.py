"""Tolerant JSON extraction from model replies and validation into decisions.

Weak models wrap JSON in code fences, add prose before or after it, or drop the
`{"decision": ...}` envelope. We accept all of those, and when a reply still does not
validate, the error message is written for the model to read in a repair round.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from polar.planners.decisions import Decision, DecisionEnvelope

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_ENVELOPE = TypeAdapter(DecisionEnvelope)


class ReplyParseError(ValueError):
    """The reply held no usable JSON, or it did not validate. The message is for the model."""


def extract_json(text: str) -> Any:
    """The first JSON object in `text`: the whole text, a fenced block, or one embedded in prose."""
    stripped = text.strip()
    if not stripped:
        raise ReplyParseError("the reply was empty; expected a JSON object")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    first_error: json.JSONDecodeError | None = None
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as err:
            first_error = first_error or err
            continue
        if isinstance(obj, dict):
            return obj
    if first_error is not None:
        raise ReplyParseError(f"the reply is not valid JSON: {first_error.msg} at character {first_error.pos}")
    raise ReplyParseError("the reply contains no JSON object")


def format_errors(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:6]:
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"]
        parts.append(f"{loc}: {msg}")
    more = len(err.errors()) - 6
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def parse_decision(text: str) -> Decision:
    """Parse and validate a reply into a Decision, or raise ReplyParseError saying why."""
    obj = extract_json(text)
    if isinstance(obj, dict) and "decision" not in obj and "kind" in obj:
        obj = {"decision": obj}  # a bare decision: accept it rather than spend a repair round
    try:
        return _ENVELOPE.validate_python(obj).decision
    except ValidationError as err:
        raise ReplyParseError(f"the JSON does not match the decision schema: {format_errors(err)}") from None


def decision_json_schema() -> dict[str, Any]:
    """The JSON schema of the reply envelope, for response_format and for prompts."""
    return DecisionEnvelope.model_json_schema()
