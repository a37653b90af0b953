"""A call to a local server that Polar started and that has since died names the death.

The engine is a real process that writes a log and is killed with SIGKILL, as a crashed
llama.cpp server is (a general-protection fault in its CPU kernels ended one on a machine
with Intel AMX): the call's error says the server is no longer running and shows its log,
instead of a bare "connection error"."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from polar.llm import serve
from polar.llm.client import LLMCallError, LLMClient
from polar.llm.settings import LLMSettings, RetrySettings
from tests.llm.engine import free_port


def test_a_dead_server_of_ours_is_named_in_the_call_error(tmp_path, monkeypatch):
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path))
    port = free_port()
    log = serve.state_path("127.0.0.1", port).with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", "print('engine: loading model', flush=True); "
                                 "import time; time.sleep(60)"], stdout=out)
    deadline = time.monotonic() + 30
    while "loading model" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    state = {"pid": proc.pid, "start_ticks": serve._start_ticks(proc.pid), "served_name": "smollm2-135m",
             "model": "smollm2-135m", "engine": "llamacpp", "log": str(log)}
    serve.state_path("127.0.0.1", port).write_text(json.dumps(state))
    assert serve.death_note("127.0.0.1", port) is None  # alive: nothing to say
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    settings = LLMSettings(model="openai/smollm2-135m", api_base=f"http://127.0.0.1:{port}/v1",
                           server=serve.ServerSettings(model="smollm2-135m", port=port, autostart=False),
                           retries=RetrySettings(max_attempts=1), timeout_s=5.0)
    with pytest.raises(LLMCallError) as info:
        LLMClient(settings).complete([{"role": "user", "content": "hello"}])
    message = str(info.value)
    assert f"(pid {proc.pid}) is no longer running" in message
    assert "engine: loading model" in message  # the log's last lines come with it
