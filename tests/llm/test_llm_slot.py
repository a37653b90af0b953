"""A client kept to one llama-server slot (one lane of K episodes in flight) sends `id_slot`
with each request, through the real litellm client to a real HTTP server, and nothing else
about the call changes: its parameters, record and reply-cache key are the same whichever
slot decoded it (a replayed episode finds its replies on any lane)."""

from polar.llm.client import LLMClient
from polar.llm.record import CallRecorder, read_records
from polar.llm.settings import LLMSettings
from tests.llm_server import Reply, ScriptedLLMServer

MSGS = [{"role": "user", "content": "which skill?"}]


def test_a_client_kept_to_a_slot_sends_id_slot_and_keys_its_calls_as_before(tmp_path):
    with ScriptedLLMServer() as server:
        server.push(Reply.text("a"), Reply.text("b"))
        settings = LLMSettings(model="openai/scripted", api_base=server.url, timeout_s=5.0,
                               extra_params={"extra_body": {"cache_prompt": True}})
        client = LLMClient(settings, recorder=CallRecorder(tmp_path / "calls.jsonl"))
        free = client.cache_key_for(MSGS)
        client.complete(MSGS)
        client.slot = 3
        assert client.cache_key_for(MSGS) == free
        client.complete(MSGS)
        first, second = (r.body for r in server.requests)
    assert "id_slot" not in first and first["cache_prompt"] is True
    assert second["id_slot"] == 3 and second["cache_prompt"] is True  # the profile's extra body is kept
    recs = read_records(tmp_path / "calls.jsonl")
    assert recs[0].params == recs[1].params and "id_slot" not in str(recs[1].params)
