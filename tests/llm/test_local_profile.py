"""The local-model settings of a profile, against the scripted server (faults stay scripted):
the engine's response_format form, top_logprobs, system prompt folding, the prompt-fit
figures, the warm-up, and a missing tokenizer endpoint."""

from pathlib import Path
from typing import Any

import pytest

from polar.llm.client import LLMCallError
from polar.planners.base import PlannerContext
from polar.planners.profile import load_planner, load_planner_profile
from tests.llm_server import Reply, ScriptedLLMServer, write_profile

CONTEXT = PlannerContext.model_validate_json(
    (Path(__file__).resolve().parents[2] / "prompts" / "examples" / "doorkey_context.json").read_text())
GOTO_GOAL = {"kind": "skill", "skill": "goto_goal", "args": {}}
LOCAL = {"structured_output": "json_object_schema", "logprobs": True, "top_logprobs": 1,
         "templates": {"system": "compact_system", "user": "compact_skill"}, "observation": "predicates"}


def decide_once(tmp_path: Path, **fields: Any) -> tuple[Any, dict[str, Any]]:
    """One decision by a profile with `fields` against a scripted reply: (planner, request body)."""
    with ScriptedLLMServer(default=Reply.decision(GOTO_GOAL)) as server:
        planner = load_planner(write_profile(tmp_path, server, **fields))
        planner.decide(CONTEXT)
        return planner, server.requests[-1].body


def test_local_profile_sends_the_library_schema_in_llamacpps_form(tmp_path):
    planner, body = decide_once(tmp_path, **LOCAL)
    rf = body["response_format"]
    assert rf["type"] == "json_object" and "json_schema" not in rf
    options = rf["schema"]["properties"]["decision"]["anyOf"]
    assert [o["properties"].get("skill", {}).get("const") for o in options] == \
        ["goto", "pickup", "open_door", "goto_goal", None]
    assert body["logprobs"] is True and body["top_logprobs"] == 1
    user = body["messages"][1]["content"]
    assert user.startswith("Task: ") and "Facts: carrying(key,yellow)" in user  # compact, predicates
    [call] = planner.last_calls
    assert call.prompt_fit == {"tokens": None, "context_tokens": None, "history_shown": 1, "history_dropped": 0}


def test_view_mode_keeps_the_hidden_state_out_of_the_prompt(tmp_path):
    _, body = decide_once(tmp_path, **{**LOCAL, "observation": "view"})
    user = body["messages"][1]["content"]
    assert "carrying(key,yellow)" not in user and CONTEXT.observation in user


def test_system_prompt_folds_into_the_user_message_for_chat_formats_without_one(tmp_path):
    _, body = decide_once(tmp_path, system_message="user")
    [msg] = body["messages"]
    assert msg["role"] == "user" and msg["content"].startswith("You are the planner") and "Task: " in msg["content"]


def test_warmup_request_is_sent_once_and_not_recorded_or_charged(tmp_path):
    with ScriptedLLMServer() as server:
        server.push(Reply.text("o"), Reply.decision(GOTO_GOAL))
        planner = load_planner(write_profile(tmp_path, server, warmup="request"))
        planner.reset()
        planner.reset()  # a second episode does not warm up again
        assert server.request_count == 1 and server.requests[0].body["max_tokens"] == 1
        assert planner.client.warmup_s is not None and planner.usage.calls == 0
        planner.decide(CONTEXT)
        assert server.request_count == 2 and planner.usage.calls == 1
    assert len((tmp_path / "calls.jsonl").read_text().splitlines()) == 1


def test_a_server_without_a_tokenizer_endpoint_is_a_clear_error(tmp_path):
    with pytest.raises(LLMCallError, match="counting the prompt's tokens failed: .*/extras/tokenize"):
        decide_once(tmp_path, tokenizer="server", context_tokens=2048)


def test_server_block_gives_api_base_and_context_window():
    p = load_planner_profile("local")
    assert p.api_base == "http://127.0.0.1:8012/v1" and p.context_tokens == 2048
    assert p.server.model == "smollm2-135m" and p.structured_output == "json_object_schema"
    p = load_planner_profile("local", {"api_base": "http://127.0.0.1:9/v1", "context_tokens": 512})
    assert p.api_base == "http://127.0.0.1:9/v1" and p.context_tokens == 512
