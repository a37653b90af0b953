"""The LLM client against a real HTTP server through the real litellm client."""

import json
import time

import pytest

from polar.errors import BudgetExceeded, ConfigError
from polar.llm.budget import Budget
from polar.llm.cache import ReplayCache
from polar.llm.client import LLMCallError, LLMClient
from polar.llm.record import CallRecorder, read_records
from polar.llm.settings import BudgetLimits, LLMSettings, RetrySettings
from tests.llm_server import Reply, ScriptedLLMServer

MSGS = [{"role": "user", "content": "hello"}]
FAST_RETRY = RetrySettings(max_attempts=3, initial_wait_s=0.01, max_wait_s=2.0, jitter_s=0.0)


@pytest.fixture
def server():
    with ScriptedLLMServer() as s:
        yield s


def make_client(server, tmp_path=None, **kw):
    settings = LLMSettings(model=kw.pop("model", "openai/scripted"), api_base=server.url,
                           retries=kw.pop("retries", FAST_RETRY), timeout_s=kw.pop("timeout_s", 5.0), **kw)
    cache = ReplayCache(tmp_path / "cache") if tmp_path is not None else None
    recorder = CallRecorder(tmp_path / "calls.jsonl") if tmp_path is not None else None
    return LLMClient(settings, cache=cache, recorder=recorder)


def test_reply_tokens_and_logprobs_reach_the_record(server, tmp_path):
    lp = [{"token": "{", "logprob": -0.01, "bytes": [123], "top_logprobs": []}]
    server.push(Reply.text("hi there", usage=(321, 12), logprobs=lp, token_ids=[5, 6, 7]))
    client = make_client(server, tmp_path, model="hosted_vllm/scripted", logprobs=True, role="critic",
                         extra_params={"extra_body": {"return_token_ids": True}})
    resp = client.complete(MSGS, template="t", template_hash="abc", episode_id="ep1")
    assert resp.content == "hi there"
    assert (resp.call.prompt_tokens, resp.call.completion_tokens) == (321, 12)
    [rec] = read_records(tmp_path / "calls.jsonl")
    assert (rec.prompt_tokens, rec.completion_tokens, rec.reply) == (321, 12, "hi there")
    assert rec.messages == MSGS and rec.episode_id == "ep1" and rec.role == "critic"
    assert rec.template == "t" and rec.template_hash == "abc" and not rec.cached
    assert rec.logprobs["content"][0]["logprob"] == pytest.approx(-0.01)
    assert rec.token_ids == [5, 6, 7]
    assert server.requests[0].body["logprobs"] is True
    assert server.requests[0].body["return_token_ids"] is True  # vLLM's flag, as vllm.yaml sets it
    assert client.budget.used.tokens == 333


def test_429_waits_for_retry_after_then_succeeds(server):
    server.push(Reply.error(429, retry_after=0.4), Reply.text("ok"))
    resp = make_client(server).complete(MSGS)
    assert resp.content == "ok" and server.request_count == 2
    gap = server.requests[1].received_at - server.requests[0].received_at
    assert gap >= 0.4, f"retried after {gap:.3f}s, before Retry-After"
    assert resp.record.attempts == 2


def test_5xx_and_broken_bodies_are_retried(server):
    server.push(Reply.error(500), Reply.error(503), Reply.text("ok"))
    assert make_client(server).complete(MSGS).content == "ok"
    server.push(Reply.malformed_http(), Reply.text("ok again"))
    assert make_client(server).complete(MSGS).content == "ok again"
    assert server.request_count == 5


def test_retries_are_bounded_and_the_error_says_so(server):
    server.push(*[Reply.error(500, "overloaded")] * 3)
    with pytest.raises(LLMCallError, match=r"kept failing.*overloaded.*3 attempt"):
        make_client(server).complete(MSGS)
    assert server.request_count == 3


def test_client_errors_are_not_retried(server):
    server.push(Reply.error(400, "bad request: context too long"))
    with pytest.raises(LLMCallError, match=r"refused \(not retried\).*context too long.*1 attempt"):
        make_client(server).complete(MSGS)
    assert server.request_count == 1


def test_hanging_server_times_out_with_a_clear_error(server):
    server.push(Reply.hang_forever(), Reply.hang_forever())
    client = make_client(server, timeout_s=0.4, retries=RetrySettings(max_attempts=2, initial_wait_s=0.01))
    t0 = time.perf_counter()
    with pytest.raises(LLMCallError, match=r"timed out \(timeout_s=0.4 per attempt\); 2 attempt"):
        client.complete(MSGS)
    assert time.perf_counter() - t0 < 5
    assert server.request_count == 2


def test_budget_on_calls_tokens_and_dollars(server):
    server.default = Reply.text("x", usage=(600, 100))
    client = make_client(server)
    client.budget = Budget(BudgetLimits(max_calls=2))
    client.complete(MSGS)
    client.complete(MSGS)
    with pytest.raises(BudgetExceeded, match="max_calls=2"):
        client.complete(MSGS)
    assert server.request_count == 2  # refused before any request
    client.budget = Budget(BudgetLimits(max_calls=None, max_tokens=1000))
    client.complete(MSGS)
    client.complete(MSGS)
    with pytest.raises(BudgetExceeded, match="1400 tokens used, budgets.max_tokens=1000"):
        client.complete(MSGS)
    priced = make_client(server, pricing={"prompt_usd_per_mtok": 1000.0, "completion_usd_per_mtok": 2000.0})
    priced.budget = Budget(BudgetLimits(max_calls=None, max_cost_usd=1.0))
    assert priced.complete(MSGS).call.cost_usd == pytest.approx(0.8)
    priced.complete(MSGS)
    with pytest.raises(BudgetExceeded, match=r"\$1.6000 spent"):
        priced.complete(MSGS)


def test_replay_cache_sends_no_new_request(server, tmp_path):
    server.push(Reply.text("first", usage=(50, 5)))
    first = make_client(server, tmp_path).complete(MSGS, episode_id="a")
    again = make_client(server, tmp_path).complete(MSGS, episode_id="b")  # a new client, same disk
    assert server.request_count == 1
    assert again.content == "first" and again.call.cached and not first.call.cached
    assert again.call.prompt_tokens == 50  # the replay reports what the call cost originally
    other = make_client(server, tmp_path, temperature=0.7)  # another parameter: another key
    server.push(Reply.text("second"))
    assert other.complete(MSGS).content == "second" and server.request_count == 2
    records = read_records(tmp_path / "calls.jsonl")
    assert [r.cached for r in records] == [False, True, False]


def test_a_local_model_retrained_under_its_name_is_asked_again(server, tmp_path):
    """The served weights are in the cache key: new weights at the same path and name
    never get the previous weights' replies."""
    gguf = tmp_path / "planner.gguf"
    gguf.write_bytes(b"GGUF weights, first training")
    server.push(Reply.text("first model"), Reply.text("retrained model"))

    def client():
        settings = LLMSettings(model="openai/planner", api_base=server.url, server={"model": str(gguf)})
        return LLMClient(settings, cache=ReplayCache(tmp_path / "cache"))

    assert client().complete(MSGS).content == "first model"
    assert client().complete(MSGS).content == "first model" and server.request_count == 1  # replayed
    gguf.write_bytes(b"GGUF weights, trained again in place")
    assert client().complete(MSGS).content == "retrained model" and server.request_count == 2


def test_check_result_is_recorded_not_raised(server, tmp_path):
    server.push(Reply.text("not a number"))

    def check(text: str) -> int:
        return int(text)

    resp = make_client(server, tmp_path).complete(MSGS, check=check)
    assert not resp.valid and "invalid literal" in resp.error
    line = json.loads((tmp_path / "calls.jsonl").read_text())
    assert line["valid"] is False and "invalid literal" in line["error"]


def test_missing_api_key_env_names_the_variable(server, monkeypatch):
    monkeypatch.delenv("POLAR_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="POLAR_TEST_NO_SUCH_KEY"):
        make_client(server, api_key_env="POLAR_TEST_NO_SUCH_KEY")


def test_a_persistent_429_leaves_every_failed_attempt_in_the_record(server, tmp_path):
    server.push(*[Reply.error(429, "slow down", retry_after=0.01)] * 3)
    client = make_client(server, tmp_path)
    with pytest.raises(LLMCallError) as info:
        client.complete(MSGS, template="t", template_hash="h", episode_id="ep1")
    (rec,) = read_records(tmp_path / "calls.jsonl")
    assert rec.valid is False and rec.reply == "" and rec.attempts == 3 and "slow down" in rec.error
    failed = rec.model_extra["failed_attempts"]
    assert [a["status"] for a in failed] == [429, 429, 429] and [a["attempt"] for a in failed] == [1, 2, 3]
    assert all(a["latency_s"] > 0 and "RateLimit" in a["error"] for a in failed)
    call = info.value.call  # what the episode keeps
    assert call is not None and call.call_id == rec.call_id and call.model_extra["attempts"] == 3
    assert call.model_extra["failed_attempts"] == failed and call.prompt_tokens == 0


def test_a_retry_that_succeeds_keeps_the_failed_attempts(server, tmp_path):
    server.push(Reply.error(503), Reply.text("ok"))
    resp = make_client(server, tmp_path).complete(MSGS)
    assert resp.content == "ok" and resp.record.attempts == 2
    assert [a["status"] for a in resp.call.model_extra["failed_attempts"]] == [503]


def test_refused_connection_and_timeout_say_what_failed(server, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = LLMSettings(model="openai/scripted", api_base=f"http://127.0.0.1:{port}/v1",
                           retries=RetrySettings(max_attempts=2, initial_wait_s=0.01), timeout_s=2.0)
    refused = LLMClient(settings, recorder=CallRecorder(tmp_path / "refused.jsonl"))
    with pytest.raises(LLMCallError) as info:
        refused.complete(MSGS)
    assert [a["status"] for a in info.value.failed_attempts] == ["connection-error"] * 2
    assert read_records(tmp_path / "refused.jsonl")[0].model_extra["failed_attempts"] == info.value.failed_attempts

    server.push(Reply.hang_forever())
    slow = make_client(server, tmp_path, timeout_s=0.3, retries=RetrySettings(max_attempts=1))
    with pytest.raises(LLMCallError) as info:
        slow.complete(MSGS)
    (attempt,) = info.value.failed_attempts
    assert attempt["status"] == "timeout" and attempt["latency_s"] >= 0.3


def test_prompt_counting_waits_as_long_as_a_call(server):
    # A tokenize request queues behind other workers' completions on a one-slot local server
    # (the demo's two workers): a shorter timeout than the call's made it fail as an llm-error.
    client = make_client(server, tokenizer="server", timeout_s=77.0)
    assert client.tokenizer is not None and client.tokenizer.timeout_s == 77.0
