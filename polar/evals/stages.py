"""A resumable run folder of iterations made of stages (`state.json`), shared by the RL loops.

`state.json` records, per iteration, each stage that finished with what it returned; it is
rewritten atomically (and durably) after each stage. A run killed at any point and started
again with the same config resumes after the last finished stage. The config is fixed for
the life of the folder: only `iterations` may change on resume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polar.errors import ConfigError
from polar.files import atomic_write

STATE_FILE = "state.json"


class StagedRun:
    """The run folder's state: which stages of which iterations finished, and their results."""

    def __init__(self, out: str | Path, config: dict[str, Any], start_model: str) -> None:
        self.out = Path(out).resolve()  # paths in state.json: absolute
        self.out.mkdir(parents=True, exist_ok=True)
        self.start_model = start_model
        path = self.out / STATE_FILE
        self.state: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        if self.state and self.state.get("config") != config:
            raise ConfigError(f"{self.out}: holds a run with another config (only `iterations` may change on "
                              f"resume); compare {self.out / STATE_FILE} with the recipe, or choose another --out")
        self.state.setdefault("config", config)
        self.state.setdefault("iterations", {})

    def done(self, it: int, stage: str) -> dict[str, Any] | None:
        return self.state["iterations"].get(str(it), {}).get(stage)

    def finish(self, it: int, stage: str, info: dict[str, Any]) -> dict[str, Any]:
        self.state["iterations"].setdefault(str(it), {})[stage] = info
        atomic_write(self.out / STATE_FILE, json.dumps(self.state, indent=1), durable=True)
        return info

    def sample(self, it: int) -> dict[str, Any]:
        raise NotImplementedError

    def update(self, it: int) -> dict[str, Any]:
        raise NotImplementedError

    def convert(self, it: int) -> dict[str, Any]:
        raise NotImplementedError

    def train_stages(self, it: int) -> None:
        """Iteration `it`'s sample, update and convert stages (the subclass's) that have not
        finished, in order."""
        if self.done(it, "sample") is None:
            self.sample(it)
        if self.done(it, "update") is None:
            self.update(it)
        if self.done(it, "convert") is None:
            self.convert(it)

    def logged_rows(self) -> list[dict[str, Any]]:
        """The table rows of the iterations whose log stage finished, in order."""
        return [self.done(j, "log")["row"] for j in sorted(map(int, self.state["iterations"])) if self.done(j, "log")]

    def model_before(self, it: int) -> str:
        """The model iteration `it` samples with: the last converted one, else the start."""
        for j in range(it - 1, 0, -1):
            if (c := self.done(j, "convert")) is not None:
                return str(c["model"])
        return self.start_model

    def adapter_before(self, it: int) -> str | None:
        """The LoRA adapter the last update wrote (the next update continues it)."""
        for j in range(it - 1, 0, -1):
            if (u := self.done(j, "update")) is not None and u.get("adapter"):
                return str(u["adapter"])
        return None
