"""A disk replay cache: the same model, messages and parameters give the same reply, free.

Keys exclude the API base and key, so a replay works against any server hosting the model
(or none at all). Entries are single JSON files written atomically, so concurrent runs and
a run killed mid-write never leave a corrupt entry behind.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from polar.files import atomic_write


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    blob = json.dumps({"model": model, "messages": messages, "params": params},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ReplayCache:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._path(key).read_text())
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            return None  # an unreadable entry is a miss; the live call rewrites it

    def put(self, key: str, entry: dict[str, Any]) -> None:
        atomic_write(self._path(key), json.dumps(entry, ensure_ascii=False))
