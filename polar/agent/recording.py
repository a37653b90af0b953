"""The wrapper every action of an episode goes through: it records each step and enforces
the episode's step cap, whichever executor (skill, primitive, sandboxed code) acted."""

from __future__ import annotations

from typing import Any

from polar.episode import StepRecord, jsonable
from polar.errors import PolarError
from polar.harnesses.base import Harness, HarnessWrapper, StepResult


class RecordingHarness(HarnessWrapper):
    """Delegates to a harness, records every step and enforces the episode's step cap. It
    forwards exactly the Harness interface (capabilities included), nothing else."""

    def __init__(self, inner: Harness, max_steps: int | None, record_steps: bool = True) -> None:
        super().__init__(inner)
        self.max_steps = max_steps
        self.record_steps = record_steps
        self.steps: list[StepRecord] = []
        self.t = 0
        self.total_reward = 0.0
        self.terminated = self.truncated = False
        self.last_info: dict[str, Any] = {}
        self.decision_index = -1  # the decision whose execution takes the next steps

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def steps_left(self) -> int | None:
        return None if self.max_steps is None else self.max_steps - self.t

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        if self.done:
            raise PolarError("the episode has ended; no further steps")
        obs, r, term, trunc, info = self.inner.step(action)
        self.t += 1
        self.total_reward += float(r)
        if self.max_steps is not None and self.t >= self.max_steps and not (term or trunc):
            trunc = True  # Polar's cap, not the harness's own limit: success rules tell them apart
            info = {**info, "polar_step_limit": self.max_steps}
        self.terminated, self.truncated, self.last_info = bool(term), bool(trunc), info
        if self.record_steps:
            self.steps.append(StepRecord(t=self.t, action=jsonable(action), reward=float(r), terminated=bool(term),
                                         truncated=bool(trunc), decision=self.decision_index))
        return obs, r, term, trunc, info
