"""DAgger's aggregation for `improve` with `targets: teacher` (polar/evals/improve.py).

A round fine-tunes on every state the student has visited so far, each labelled with the
teacher's decision (the rounds' `data` folders, `polar.planners.dataset.relabel_examples`),
plus the teacher's own examples (e.g. the SFT dataset), at most `per_task` of them per task so
that the task with the most teacher examples does not drown the others: the memory teacher's
dataset holds 217 DoorKey-8x8 examples beside ~1800 of BlockedUnlockPickup.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from polar.llm.dataset import DatasetInfo, Example, dedup, read_split, write_dataset


def balanced(examples: list[Example], per_task: int | None, seed: int) -> list[Example]:
    """At most `per_task` examples of each harness, a seeded random subset, in their order."""
    if per_task is None:
        return list(examples)
    by_task: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        by_task.setdefault(ex.harness_id, []).append(i)
    rng = random.Random(seed)
    chosen = sorted(i for idx in by_task.values() for i in (rng.sample(idx, per_task) if len(idx) > per_task else idx))
    return [examples[i] for i in chosen]


def aggregate(rounds: list[Path], teacher: list[Path], per_task: int | None, seed: int, out: Path) -> dict[str, Any]:
    """Write the round's training set to `out`: every round's labels (all of them) and the
    teacher's examples (balanced), deduplicated. Returns what it holds, for the round's row."""
    labelled = [ex for folder in rounds for ex in read_split(folder)]
    own = balanced([ex for folder in teacher for ex in read_split(folder)], per_task, seed)
    examples, dropped = dedup(labelled + own)
    info = write_dataset(out, {"train": examples, "validation": []}, DatasetInfo(
        sources=[str(p) for p in rounds + teacher], keep="dagger-aggregate", skipped={"duplicate (train)": dropped}
        if dropped else {}))
    return {"examples": len(examples), "student_states": len(labelled), "teacher_examples": len(own),
            "duplicates": dropped, "per_harness": info.per_harness, "sha256": info.sha256}
