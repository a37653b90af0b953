"""The out-of-process connector: run a game with its own API in its own process.

Harness side: `ConnectorHarness(ConnectorConfig(...), id, base_dir, kwargs)`.
Game side: `serve(MyGame)` in the game's script. docs/connector.md writes out the protocol.
"""

from polar.harnesses.connector.client import ConnectorHarness
from polar.harnesses.connector.config import ConnectorConfig
from polar.harnesses.connector.serve import serve

__all__ = ["ConnectorConfig", "ConnectorHarness", "serve"]
