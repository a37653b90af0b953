"""A server of ours that is busy is waited for, not started twice.

llama-cpp-python's server answers GET /v1/models only between completions, so when two suite
workers share it, one worker's probe times out while the other's request runs. A stand-in
server (this process, recorded in the state file as ours) answers the probe only after
longer than the probe's 2 s, as that busy server does.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from polar.llm import serve
from tests.llm.engine import free_port, require_model


class _Busy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        time.sleep(2.5)  # a completion of another worker holds the model's lock
        body = json.dumps({"data": [{"id": "smollm2-135m"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_busy_server_of_ours_is_reused_not_started_again(tmp_path, monkeypatch):
    require_model("smollm2-135m")
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path))
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _Busy)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        s = serve.ServerSettings(model="smollm2-135m", port=port)
        assert serve.probe(s.base_url) is None  # the plain probe gives up: it looks absent
        state = {"pid": os.getpid(), "start_ticks": serve._start_ticks(os.getpid()), "served_name": "smollm2-135m",
                 "model": "smollm2-135m", "engine": "llamacpp", "api_base": s.api_base}
        serve.state_path(s.host, port).parent.mkdir(parents=True, exist_ok=True)
        serve.state_path(s.host, port).write_text(json.dumps(state))
        said: list[str] = []
        assert serve.ensure_server(s, announce=said.append)["started"] is False
        assert not said  # nothing started, nothing announced
        # a live server of ours that serves another model is not waited for
        state["served_name"] = "another-model"
        serve.state_path(s.host, port).write_text(json.dumps(state))
        assert serve._answer_of_ours(s, "smollm2-135m") is None
    finally:
        httpd.shutdown()
        httpd.server_close()
