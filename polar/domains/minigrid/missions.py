"""Parse BabyAI/MiniGrid-style missions into goal predicates.

Used by the MiniGrid harness (the spec's goal) and by the symbolic planner (free-form tasks).
Supported forms: go to / get to / reach X, pick up X, open X, put X next to Y (X may be "the red
object": a colour, any type), and the DoorKey / LockedRoom phrasing that ends in reaching the
goal square; a sequence of several ends (BabyAI GoToSeq / BossLevel) is left to a language
planner.

The MiniGrid vocabulary (colours, object types) is declared here, once, for the harness, the
planner and the MiniGrid skills.
"""

from __future__ import annotations

import re

from polar.predicates import ANY

# MiniGrid's colours in its own order (minigrid.core.constants.COLORS; COLOR_NAMES is sorted).
COLORS: tuple[str, ...] = ("red", "green", "blue", "purple", "yellow", "grey")
# Object types a task or a skill names. The order is part of the goto skill's trained input
# encoding (a one-hot over these): append, never reorder.
OBJECT_TYPES: tuple[str, ...] = ("key", "door", "ball", "box", "goal")
PORTABLE: tuple[str, ...] = ("key", "ball", "box")  # what the agent can pick up

_COLOR = "(?:(?P<{n}c>" + "|".join(COLORS) + r")\s+)?"
_OBJ = "(?P<{n}t>" + "|".join((*OBJECT_TYPES, "object")) + r")(?:\s+square)?"  # "object": any type


def _obj(name: str) -> str:
    return r"(?:the|a|an)?\s*" + _COLOR.format(n=name) + _OBJ.format(n=name)


def _atom(pred: str, m: re.Match[str], name: str) -> str:
    t, c = m.group(f"{name}t"), m.group(f"{name}c")
    if t == "goal":
        return "at(goal)" if pred in ("at", "facing") else f"{pred}(goal)"
    return f"{pred}({ANY if t == 'object' else t},{c or ANY})"


_PATTERNS: list[tuple[str, str]] = [
    (r"\bput\s+" + _obj("a") + r"\s+next\s+to\s+" + _obj("b"), "next_to"),
    (r"\bpick\s+up\s+" + _obj("a"), "carrying"),
    (r"\b(?:unlock|open)\s+" + _obj("a"), "open"),
    (r"\b(?:go|get|move|navigate|walk)\s+to\s+" + _obj("a"), "facing"),
    (r"\breach\s+" + _obj("a"), "facing"),
]


def _clause_goal(clause: str) -> list[str] | None:
    for pattern, pred in _PATTERNS:
        m = re.search(pattern, clause)
        if not m:
            continue
        if pred == "next_to":
            a, b = _atom("x", m, "a")[2:-1], _atom("x", m, "b")[2:-1]
            return [f"adjacent({a},{b})"]
        return [_atom(pred, m, "a")]
    return None


_CLAUSE_SPLIT = r",?\s*(?:and then|then|and|,)\s+"
# Words that join or introduce a mission's parts without changing its goal.
_FILLER = frozenset({"the", "a", "an", "and", "then", "to", "of", "please"})
_MEANS = r"\buse\s+" + _obj("u") + r"\s+to\b"  # DoorKey's "use the key to open the door": a means


def unparsed_words(text: str) -> list[str]:
    """The words of `text` that no mission form reads, in order (fillers such as 'the' and
    'then' left out): what `parse_mission` drops. "go to the door the mission names" ->
    ['mission', 'names']: the goal is any door, whatever the rest says."""
    words: list[str] = []
    for clause in re.split(_CLAUSE_SPLIT, text.lower().strip()):
        span = next((m.span() for pattern, _ in _PATTERNS if (m := re.search(pattern, clause))), None)
        rest = clause if span is None else clause[:span[0]] + " " + clause[span[1]:]
        rest = re.sub(_MEANS, " ", rest)
        words += [w for w in re.findall(r"[a-z0-9()']+", rest) if w not in _FILLER]
    return words


def parse_mission(text: str) -> list[str] | None:
    """Goal predicates for a mission, or None when the text is not a form we understand.

    A mission has one end. In DoorKey / LockedRoom phrasing ("use the key to open the door
    and then get to the goal", "get the red key ..., unlock the green door and go to the
    goal") the end is reaching the goal square and the earlier clauses are means. A sequence
    of several ends (BabyAI's "go to a red door and go to a purple door", "... after you pick
    up a key") is not understood: None. `put X next to Y` gives `adjacent(X,Y)`. A predicate
    without a colour (e.g. `carrying(ball)`) matches any colour.
    """
    s = text.lower().strip()
    if re.search(r"\bafter you\b", s):
        return None
    clauses = re.split(_CLAUSE_SPLIT, s)
    goals = [g for g in (_clause_goal(c) for c in clauses) if g]
    if not goals:
        return None
    if goals[-1] == ["at(goal)"] or len(goals) == 1:
        return goals[-1]
    return None
