"""Skill retrieval: BM25 over a skill's words, then harness compatibility and measured success.

Relevance comes first; measured success scales it between 0.75x (never succeeds) and 1x
(always succeeds), unmeasured skills counting as 0.5. Skills that do not accept the harness (its
id, or given the harness itself, its spaces) are dropped (or, on request, put last).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from polar.skills.model import Skill

K1, B = 1.2, 0.75
_STOP = frozenset({"a", "an", "the", "to", "of", "and", "or", "in", "on", "at", "for", "with", "it", "its",
                   "is", "be", "by", "this", "that", "from", "into", "up"})


def tokens(text: str) -> list[str]:
    """Lowercase words, `goto`/`go_to` split, crude plural stripping ("keys" -> "key")."""
    out = []
    for w in re.findall(r"[a-z0-9]+", text.lower().replace("_", " ")):
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


def skill_text(skill: Skill, harnesses: bool = False) -> str:
    """What BM25 indexes: name, description, parameter names and their choices, effects; with
    `harnesses`, also the harnesses it was trained on (provenance) and the ids it accepts."""
    parts = [skill.name, skill.name.replace("goto", "go to"), skill.description]
    if harnesses:  # "minigrid:MiniGrid-DoorKey-8x8-v0" -> minigrid doorkey 8x8 v0
        parts.extend(skill.provenance.trained_on)
        parts.extend(p for p in skill.harnesses if p != "*")
    for pname, p in skill.parameters.items():
        parts.append(pname)
        parts.extend(p.choices or [])
    parts.extend(re.sub(r"[{}(),]", " ", e) for e in skill.effects)
    return " ".join(parts)


def bm25(query: str, docs: list[str]) -> list[float]:
    """Okapi BM25 score of `query` against each document (IDF with +1, never negative)."""
    toks = [tokens(d) for d in docs]
    n = len(toks)
    if n == 0:
        return []
    avg = sum(len(t) for t in toks) / n or 1.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    q = tokens(query)
    scores = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in q:
            if not tf[w]:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            s += idf * tf[w] * (K1 + 1) / (tf[w] + K1 * (1 - B + B * len(t) / avg))
        scores.append(s)
    return scores


def rank(skills: list[Skill], text: str, harness: Any = None,
         include_incompatible: bool = False, by_harness: bool = False) -> list[tuple[Skill, float]]:
    """(skill, score) best first. `harness` is an id, a Harness, or None (no filter); given a
    Harness, a skill must also fit its observation and action spaces (`Skill.usable_on`).
    `by_harness`: the query also matches the harnesses a skill was trained on or accepts
    (`polar skills search`; a planner's retrieval matches what a skill does, not where it was trained)."""
    spec = getattr(harness, "spec", None)
    hid = getattr(spec, "id", harness)
    docs = [skill_text(s, harnesses=by_harness) for s in skills]
    rel = bm25(text, docs) if text.strip() else [0.0] * len(skills)
    rows = []
    for s, r in zip(skills, rel, strict=True):
        ok = hid is None or (s.usable_on(spec) if spec is not None else s.compatible(str(hid)))
        if not ok and not include_incompatible:
            continue
        m = s.success_for(str(hid) if hid is not None else None)
        p = m.rate if m is not None and m.episodes else 0.5
        rows.append((s, ok, r * (0.75 + 0.25 * p), p))
    rows.sort(key=lambda x: (not x[1], -x[2], -x[3], x[0].name))
    return [(s, score) for s, _, score, _ in rows]
