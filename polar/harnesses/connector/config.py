"""The `connector:` block of a harness YAML: how to start and talk to an out-of-process game."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from polar.config import StrictModel


class ConnectorConfig(StrictModel):
    """How to run a game process and the limits the harness holds it to."""

    # Run from the YAML's folder. The word `python` means the interpreter Polar runs on, so a
    # game script sees the same venv (numpy, polar.harnesses.connector.serve) as the caller.
    command: list[str] = Field(min_length=1)
    transport: Literal["stdio", "unix"] = "stdio"
    timeout_s: float = Field(5.0, gt=0, description="deadline for one reply (reset, step, ...)")
    startup_timeout_s: float = Field(30.0, gt=0, description="deadline for start-up + spec reply")
    max_restarts: int = Field(3, ge=0, description="consecutive failures tolerated before HarnessError")
    max_frame_bytes: int = Field(16 * 1024 * 1024, ge=1024, le=1 << 31)
    env: dict[str, str] | None = None
    # Each side busy-polls this long for the next frame before sleeping in select(). Waking a
    # sleeping process on another CPU costs ~35 us on the VMs we run on, which caps a
    # ping-pong at ~14k round trips/s; a short spin lifts that above 100k. 0 disables it.
    spin_us: float = Field(100.0, ge=0, le=100_000)
