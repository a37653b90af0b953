"""Planner fine-tuning datasets: one example per planner decision, on disk as a folder.

    D/train.jsonl        one `Example` per line
    D/validation.jsonl   episodes whose seed falls in the validation split
    D/dataset.json       `DatasetInfo`: sources, filters, counts, tokens, per-skill counts, hashes

An example holds the exact chat messages the model saw (or, for a teacher's decision, the
student's template rendered from the recorded planner context), the template's name and
content hash, and the canonical decision JSON as the target: never a raw reply with prose or
code fences. Where the call record holds the model's token ids, they are kept, so training
sees the tokens the model produced (no re-tokenisation drift).

This module knows the format only; `polar.planners.dataset` builds examples from episodes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from polar.errors import ConfigError
from polar.files import pause_point

TRAIN_FILE, VALIDATION_FILE, INFO_FILE = "train.jsonl", "validation.jsonl", "dataset.json"
SPLITS = {"train": TRAIN_FILE, "validation": VALIDATION_FILE}


class Example(BaseModel):
    """One decision: the prompt the model saw and the decision it should answer with."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]]  # the request (system, user), without the answer
    completion: str  # the canonical decision JSON
    template: str | None = None
    template_hash: str | None = None
    source: str  # "teacher:<agent>" or "self:<model>"
    harness_id: str
    seed: int | None
    episode_id: str
    decision_index: int
    skill: str  # the skill called, or the decision kind ("finish", "plan", "code")
    prompt_token_ids: list[int] | None = None  # when the call record holds them
    completion_token_ids: list[int] | None = None  # the model's own ids of exactly `completion`

    def key(self) -> str:
        """Identity for deduplication: the same prompt answered the same way."""
        blob = json.dumps([self.messages, self.completion], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


class DatasetInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = "polar.planner-dataset/1"
    sources: list[str] = Field(default_factory=list)  # the episode folders / files read
    student: str | None = None  # the profile whose templates rendered teacher contexts
    keep: str = ""  # the harness filter applied
    val_fraction: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict)  # examples per split
    skipped: dict[str, int] = Field(default_factory=dict)  # decisions left out, per reason
    per_skill: dict[str, int] = Field(default_factory=dict)
    per_harness: dict[str, int] = Field(default_factory=dict)
    templates: dict[str, int] = Field(default_factory=dict)  # "name@hash" -> examples
    seeds: dict[str, list[int]] = Field(default_factory=dict)  # split -> episode seeds
    tokens: dict[str, int] | None = None  # prompt / completion tokens, with the tokenizer named
    tokenizer: str | None = None
    with_token_ids: int = 0  # examples that carry the model's own completion token ids
    sha256: str = ""  # of train.jsonl + validation.jsonl: what a trained model's provenance cites


def canonical_json(obj: Any) -> str:
    """The one text form of a decision target (key order as given, default separators)."""
    return json.dumps(obj, ensure_ascii=False)


def split_of(seed: int | None, val_fraction: float) -> str:
    """`validation` for a stable `val_fraction` of episode seeds (by hash, so adding episodes
    never moves a seed across the split), else `train`."""
    if seed is None or val_fraction <= 0:
        return "train"
    bucket = int(hashlib.sha256(str(seed).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "validation" if bucket < val_fraction else "train"


def dedup(examples: list[Example]) -> tuple[list[Example], int]:
    seen: set[str] = set()
    out = []
    for ex in examples:
        k = ex.key()
        if k not in seen:
            seen.add(k)
            out.append(ex)
    return out, len(examples) - len(out)


def file_sha256(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes() if p.exists() else b"")
    return h.hexdigest()[:16]


def write_dataset(out: str | Path, splits: dict[str, list[Example]], info: DatasetInfo) -> DatasetInfo:
    """Write both splits and the info file (with per-skill counts, templates and the hash), into
    a folder beside `out` renamed over it at the end: a kill leaves the old dataset or the new
    one, never half of one (a training stage reading it later sees a whole dataset or none)."""
    import os
    import shutil

    final = Path(out)
    if final.parent.is_dir():  # what a killed write left
        for old in final.parent.glob(f".{final.name}.*.tmp"):
            shutil.rmtree(old, ignore_errors=True)
    root = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    root.mkdir(parents=True)
    per_skill: Counter[str] = Counter()
    per_harness: Counter[str] = Counter()
    templates: Counter[str] = Counter()
    for name, file in SPLITS.items():
        exs = splits.get(name, [])
        (root / file).write_text("".join(ex.model_dump_json() + "\n" for ex in exs))
        for ex in exs:
            per_skill[ex.skill] += 1
            per_harness[ex.harness_id] += 1
            templates[f"{ex.template}@{ex.template_hash}"] += 1
    info = info.model_copy(update={
        "counts": {k: len(v) for k, v in splits.items()},
        "per_skill": dict(per_skill.most_common()), "per_harness": dict(per_harness.most_common()),
        "templates": dict(templates),
        "seeds": {k: sorted({ex.seed for ex in v if ex.seed is not None}) for k, v in splits.items()},
        "with_token_ids": sum(ex.completion_token_ids is not None for v in splits.values() for ex in v),
        "sha256": file_sha256([root / f for f in SPLITS.values()]),
    })
    (root / INFO_FILE).write_text(info.model_dump_json(indent=1) + "\n")
    pause_point("dataset-written")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(root, final)
    return info


def read_split(root: str | Path, split: str = "train") -> list[Example]:
    p = Path(root) / SPLITS[split]
    if not p.exists():
        raise ConfigError(f"{root}: not a planner dataset (no {SPLITS[split]}); build one with `polar llm dataset`")
    out = []
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(Example.model_validate_json(line))
            except ValueError as err:
                raise ConfigError(f"{p}: line {n}: not a dataset example: {str(err).splitlines()[0]}") from None
    return out


def read_info(root: str | Path) -> DatasetInfo:
    p = Path(root) / INFO_FILE
    if not p.exists():
        raise ConfigError(f"{root}: not a planner dataset (no {INFO_FILE}); build one with `polar llm dataset`")
    return DatasetInfo.model_validate_json(p.read_text())
