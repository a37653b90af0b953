"""Generate-and-test at inference (the AlphaCode-style filter), charged to the arm.

    sel = select_program(task, replies, selection_seeds(seed, 2), profile)

Before an episode is played, the model's programs are sampled one at a time, at most `k`; each
that passes the restricted gate plays `n` *selection* episodes, whose seeds
(`selection_seeds`: 200000 + n * episode seed + j) are disjoint from the held-out seeds
(1000-1019), the validation seeds (100-104), the RL training seeds (10000 + 100 * run seed +
iteration) and the design-time seeds (0-2). Sampling stops at the first program that succeeds
on every selection episode (it passed the filter); else all `k` are sampled. The episode is
played with that first passing program, else with the program of the highest mean selection
return (ties: the first sampled); when no program passed the gate, the episode is not played
and earns the task's lowest return. Every selection episode's env steps are the arm's: they
are counted in the episode's env steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from polar.evals.code_runner import ProgramRecord, run_program
from polar.evals.code_tasks import CodeTask
from polar.harnesses.base import Harness
from polar.sandboxes.profiles import SandboxProfile

SELECTION_SEED_BASE = 200_000  # above every seed a code-mode run or suite uses (see the module docstring)


def selection_seeds(seed: int, n: int) -> list[int]:
    """The `n` selection episodes' seeds for the episode of env seed `seed` (distinct per episode)."""
    if n < 1:
        raise ValueError(f"selection episodes: n must be >= 1, got {n}")
    if seed < 0 or seed >= SELECTION_SEED_BASE // n:  # then no selection seed falls below the base's range
        raise ValueError(f"seed {seed}: selection seeds are {SELECTION_SEED_BASE} + n * seed + j; "
                         f"the episode seed must be in [0, {SELECTION_SEED_BASE // n})")
    return [SELECTION_SEED_BASE + n * seed + j for j in range(n)]


@dataclass
class Selection:
    """The sampled programs, each with its selection episodes, and the one chosen (None: none
    passed the gate)."""

    candidates: list[ProgramRecord]
    chosen: int | None

    @property
    def env_steps(self) -> int:
        return sum(c.env_steps for c in self.candidates)


def passes(record: ProgramRecord) -> bool:
    """The filter: the program ran and succeeded on every selection episode."""
    return record.gate == "ok" and all(e.success for e in record.episodes)


def select_program(task: CodeTask, replies: Iterable[str], seeds: list[int], profile: SandboxProfile, *,
                   harness: Harness | None = None) -> Selection:
    """Each reply's program gated and played on `seeds`, in order, until one passes the filter
    (`replies` is consumed lazily: a model is asked only while no program has passed)."""
    candidates: list[ProgramRecord] = []
    for reply in replies:
        candidates.append(run_program(task, reply, seeds, profile, harness=harness))
        if passes(candidates[-1]):
            return Selection(candidates, len(candidates) - 1)
    ran = [i for i, c in enumerate(candidates) if c.gate == "ok"]
    if not ran:
        return Selection(candidates, None)
    best = max(ran, key=lambda i: (candidates[i].mean_return, -i))  # ties: the first sampled
    return Selection(candidates, best)
