"""The connector's channel: `polar.wire.SpinChannel` (a `FramedChannel` tuned for lock-step
request/reply: non-blocking fds, a short adaptive busy-poll before sleeping, deadlines on
sends as well as receives). It lives in `polar.wire` because the sandbox host uses it too;
this module re-exports it for the connector's importers.
"""

from __future__ import annotations

from polar.wire import FrameTooLarge, SpinChannel

__all__ = ["FrameTooLarge", "SpinChannel"]
