"""Wall time per phase of an iteration (the SAC vs SB3 benchmark reads it)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext


class PhaseTimer:
    """Wall time per named phase (`with timer("critic"): ...`); a no-op when disabled."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self.seconds: dict[str, float] = defaultdict(float)
        self._off = nullcontext()

    def __call__(self, phase: str) -> AbstractContextManager[None]:
        return self._timed(phase) if self.enabled else self._off

    @contextmanager
    def _timed(self, phase: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.seconds[phase] += time.perf_counter() - t0
