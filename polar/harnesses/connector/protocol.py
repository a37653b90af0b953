"""Names shared by both ends of the connector: environment variables, ops, the version.

The framing and the ndarray extension type live in `polar.wire`; docs/connector.md writes
the whole protocol out for implementers in other languages.
"""

from __future__ import annotations

PROTOCOL_VERSION = 1

# The harness tells the game process how to connect through these environment variables.
ENV_TRANSPORT = "POLAR_CONNECTOR_TRANSPORT"  # "stdio" or "unix"
ENV_SOCKET = "POLAR_CONNECTOR_SOCKET"  # unix: the path the harness listens on; the game connects
ENV_MAX_FRAME = "POLAR_CONNECTOR_MAX_FRAME"  # the largest frame body either side accepts, in bytes
ENV_SPIN_US = "POLAR_CONNECTOR_SPIN_US"  # how long the game busy-polls for the next request

OPS = ("spec", "reset", "step", "symbolic", "render", "ping", "close")
