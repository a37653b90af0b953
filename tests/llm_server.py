"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It is a real HTTP server (stdlib `ThreadingHTTPServer` in a daemon thread) that answers
`POST /v1/chat/completions` from a script of `Reply` objects, one per request, in order.
Clients talk to it through the real litellm client (`openai/<model>` or
`hosted_vllm/<model>` with `api_base=server.url`); nothing is mocked.

    from tests.llm_server import Reply, ScriptedLLMServer

    with ScriptedLLMServer() as server:
        server.push(
            Reply.error(429, retry_after=0.2),           # rate-limited once
            Reply.text("sure! {oops"),                   # malformed JSON
            Reply.decision({"kind": "finish", "success": True}, usage=(120, 30)),
        )
        ...  # point an LLM profile at server.url ("http://127.0.0.1:PORT/v1")
        assert server.request_count == 3
        server.requests[-1].body["messages"]     # what the client sent

When the script is empty the server answers with `default` if one was given (handy for
benchmarks that need an endless supply of the same reply), else with HTTP 500 and a message
saying the script ran out, so a test that sends an unexpected request fails loudly.

A `Reply` can also hang (`Reply.hang_forever()`: never answers until the server stops) or answer
after a delay, send a raw body (malformed JSON at the HTTP level), set headers such as
`Retry-After`, report token usage, and return logprobs / token ids like vLLM does.
`server.requests` records every request (path, headers, JSON body, arrival time, which
reply it got), so tests can assert that a cached run sent no new request.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml


@dataclass
class Reply:
    """One scripted answer. Build it with the class methods; fields are the raw knobs."""

    content: str | None = None  # the assistant message content
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait this long before answering
    hang: bool = False  # never answer (until the server stops)
    raw_body: bytes | None = None  # send exactly these bytes instead of a completion
    usage: tuple[int, int] | None = (10, 5)  # (prompt_tokens, completion_tokens)
    logprobs: list[dict[str, Any]] | None = None  # OpenAI `choices[0].logprobs.content`
    token_ids: list[int] | None = None  # vLLM-style `choices[0].token_ids`
    finish_reason: str = "stop"

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def decision(cls, decision: dict[str, Any], **kw: Any) -> Reply:
        """A reply whose content is the planner envelope `{"decision": decision}`."""
        return cls(content=json.dumps({"decision": decision}), **kw)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", retry_after: float | None = None,
              **kw: Any) -> Reply:
        headers = dict(kw.pop("headers", {}))
        if retry_after is not None:
            headers["Retry-After"] = f"{retry_after:g}"
        body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}})
        return cls(status=status, headers=headers, raw_body=body.encode(), **kw)

    @classmethod
    def hang_forever(cls) -> Reply:
        return cls(hang=True)

    @classmethod
    def malformed_http(cls) -> Reply:
        """HTTP 200 whose body is not JSON at all (a broken proxy, a truncated answer)."""
        return cls(raw_body=b'{"id": "chatcmpl-broken", "choices": [', usage=None)


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON
    received_at: float
    reply: Reply | None  # the reply it got (None for unknown paths)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []


ReplySource = Reply | Callable[[RecordedRequest], Reply]


class ScriptedLLMServer:
    """An OpenAI-compatible server answering from a script. Use as a context manager."""

    def __init__(self, replies: Iterable[ReplySource] = (), default: ReplySource | None = None,
                 model: str = "scripted-model") -> None:
        self._script: deque[ReplySource] = deque(replies)
        self.default = default
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> ScriptedLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in one write, without Nagle: otherwise every answer
            # waits ~40 ms for the client's delayed ACK and timings measure TCP, not Polar.
            wbufsize = -1
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                try:
                    body: Any = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw
                req = RecordedRequest(self.path, dict(self.headers.items()), body, time.time(), None)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    with server._lock:
                        server.requests.append(req)
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = server._next_reply(req)
                if reply.hang:
                    server._stopping.wait()
                    return
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                if reply.raw_body is not None:
                    self._send_bytes(reply.status, reply.raw_body, reply.headers)
                else:
                    self._send(reply.status, server._completion(reply, body), reply.headers)

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                self._send_bytes(status, json.dumps(obj).encode(), headers or {})

            def _send_bytes(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout); nothing to answer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval keeps stop() fast (shutdown waits for one poll).
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI base URL, e.g. http://127.0.0.1:PORT/v1 (litellm's `api_base`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    def push(self, *replies: ReplySource) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next_reply(self, req: RecordedRequest) -> Reply:
        with self._lock:
            source = self._script.popleft() if self._script else self.default
            self.requests.append(req)
        if source is None:
            reply = Reply.error(500, "ScriptedLLMServer: the script has no reply left for this request")
        else:
            reply = source(req) if callable(source) else source
        req.reply = reply
        return reply

    def _completion(self, reply: Reply, body: Any) -> dict[str, Any]:
        model = body.get("model", self.model) if isinstance(body, dict) else self.model
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": reply.content},
            "finish_reason": reply.finish_reason,
        }
        if reply.logprobs is not None:
            choice["logprobs"] = {"content": reply.logprobs}
        if reply.token_ids is not None:
            choice["token_ids"] = reply.token_ids
        out: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
        }
        if reply.usage is not None:
            p, c = reply.usage
            out["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        return out


def write_profile(tmp_path: Path, server: ScriptedLLMServer, **fields: Any) -> Path:
    """An LLM planner profile pointing at `server`, with fast retries and its cache, call
    record and profile file under `tmp_path`; `fields` replace top-level keys."""
    data = {
        "backend": "llm", "model": "openai/scripted", "api_base": server.url, "mode": "skill",
        "timeout_s": 5, "retries": {"max_attempts": 3, "initial_wait_s": 0.01, "jitter_s": 0},
        "cache_dir": str(tmp_path / "cache"), "record_path": str(tmp_path / "calls.jsonl"),
        "budgets": {"max_calls": 10},
    }
    data.update(fields)
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
