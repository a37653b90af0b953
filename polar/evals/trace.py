"""Step traces for the report's episode pages: what the world looked like after every step.

`TracingHarness` sits between an agent and its harness for the few episodes of a cell that
the suite traces (`trace:`). It forwards the Harness interface unchanged, so it never alters
what an agent does, and keeps the start frame plus, per step, the action, the reward and a
text frame: the whole grid where the harness offers one (MiniGrid's `"grid"` capability),
else the harness's own text view of the observation. Frames are stored as row deltas
(`encode_frames`): consecutive grid frames differ in a row or two, so a 300-step trace of a
16x16 grid is tens of kilobytes, not hundreds.
"""

from __future__ import annotations

from typing import Any

from polar.episode import jsonable
from polar.errors import HarnessError
from polar.harnesses.base import Harness, HarnessWrapper, StepResult

TRACE_KEY = "trace"  # EpisodeRecord.extra[TRACE_KEY]


def encode_frames(frames: list[str]) -> list[Any]:
    """[first frame's rows, then per frame {row index: new text} (and "n": row count when it
    changed)]: a compact form of text frames that `decode_frames` inverts exactly."""
    if not frames:
        return []
    out: list[Any] = [frames[0].split("\n")]
    prev = out[0]
    for f in frames[1:]:
        rows = f.split("\n")
        delta: dict[str, Any] = {str(i): r for i, r in enumerate(rows) if i >= len(prev) or prev[i] != r}
        if len(rows) != len(prev):
            delta["n"] = len(rows)
        out.append(delta)
        prev = rows
    return out


def decode_frames(encoded: list[Any]) -> list[str]:
    if not encoded:
        return []
    rows = list(encoded[0])
    frames = ["\n".join(rows)]
    for delta in encoded[1:]:
        n = int(delta.get("n", len(rows)))
        rows = (rows + [""] * n)[:n]
        for k, v in delta.items():
            if k != "n":
                rows[int(k)] = v
        frames.append("\n".join(rows))
    return frames


class TracingHarness(HarnessWrapper):
    """Delegates to a harness and records a step trace of the current episode (from reset)."""

    def __init__(self, inner: Harness, max_frames: int) -> None:
        super().__init__(inner)
        self.max_frames = max_frames
        self._clear()

    def _clear(self) -> None:
        self.frames: list[str] = []
        self.actions: list[Any] = []
        self.rewards: list[float] = []
        self.steps = 0

    def _frame(self, obs: Any) -> str:
        try:
            grid = self.inner.capability("grid")
        except HarnessError:
            grid = None
        if grid is not None and callable(getattr(grid, "pprint_grid", None)):
            carrying = getattr(grid, "carrying", None)
            held = f"{carrying.color} {carrying.type}" if carrying is not None else "nothing"
            return f"{grid.pprint_grid()}\ncarrying: {held}"
        return self.inner.render_text(obs)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.inner.reset(seed=seed, options=options)
        self._clear()
        self.frames.append(self._frame(obs))
        return obs, info

    def step(self, action: Any) -> StepResult:
        obs, r, term, trunc, info = self.inner.step(action)
        self.steps += 1
        if self.steps <= self.max_frames:
            self.actions.append(jsonable(action))
            self.rewards.append(float(r))
            self.frames.append(self._frame(obs))
        return obs, r, term, trunc, info

    def trace(self) -> dict[str, Any]:
        """The episode's trace as plain JSON (EpisodeRecord.extra["trace"])."""
        return {"frames": encode_frames(self.frames), "actions": self.actions, "rewards": self.rewards,
                "action_meanings": self.spec.action_meanings, "steps": self.steps,
                "cut": self.steps > self.max_frames}
