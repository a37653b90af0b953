"""`polar serve-llm`: start vLLM's OpenAI-compatible server for a local model."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from polar.errors import PolarError


class ServeError(PolarError):
    """vLLM is missing or could not be started."""

    exit_code = 2


INSTALL_HINT = (
    "vLLM is not installed in this environment. Install the optional extra: "
    "pip install 'polar[vllm]' (vLLM needs a Linux machine with a CUDA GPU). "
    "Any other OpenAI-compatible server works too: point a profile's api_base at it."
)


def vllm_command(model: str, host: str, port: int, extra: list[str]) -> list[str]:
    """The `vllm serve` command line; raises ServeError when vLLM is not installed."""
    if importlib.util.find_spec("vllm") is None:
        raise ServeError(INSTALL_HINT)
    # Prefer the console script next to this interpreter (the same virtualenv).
    exe = shutil.which("vllm", path=str(Path(sys.executable).parent)) or shutil.which("vllm")
    if exe is None:
        raise ServeError("the vllm package is importable but its `vllm` command is not on PATH; reinstall: pip install 'polar[vllm]'")
    return [exe, "serve", model, "--host", host, "--port", str(port), *extra]


def serve(model: str, host: str = "127.0.0.1", port: int = 8000, extra: list[str] | None = None) -> int:
    cmd = vllm_command(model, host, port, extra or [])
    print(f"starting: {' '.join(cmd)}")
    print(f"profile:  model: hosted_vllm/{model}\n          api_base: http://{host}:{port}/v1", flush=True)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130
