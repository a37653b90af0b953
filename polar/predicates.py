"""Predicates and the one rule that matches them.

A predicate is `name(arg,...)` or a bare `name` (`carrying(key,yellow)`, `front_clear`). A
*template* may start with `not ` and may hold wildcards: `any` (or `*`) matches every value,
and trailing wildcard arguments also match a predicate with fewer arguments, so
`facing(goal,any)` matches `facing(goal)`. A template holds in a state (a list of concrete
predicates) when some predicate matches it, or, negated, when none does.

Goals (the agent's success judge, the symbolic planner), skill preconditions, effects and
termination predicates all go through `holds`, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import Any, NamedTuple

ANY = "any"
WILDCARDS = frozenset({ANY, "*"})
_ATOM = re.compile(r"^\s*(not\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Atom(NamedTuple):
    negated: bool
    name: str
    args: tuple[str, ...]

    @property
    def positive(self) -> str:
        """The atom without its negation, in canonical spelling."""
        return f"{self.name}({','.join(self.args)})" if self.args else self.name


@lru_cache(maxsize=8192)
def parse(text: str) -> Atom:
    """`not carrying(key,any)` -> Atom(True, "carrying", ("key", "any"))."""
    m = _ATOM.match(text)
    if not m:
        raise ValueError(f"predicate {text!r}: expected name(arg,...) or not name(arg,...)")
    neg, name, inner = m.groups()
    args = tuple(a.strip() for a in inner.split(",")) if inner and inner.strip() else ()
    return Atom(bool(neg), name, args)


def placeholders(template: str) -> list[str]:
    """The `{param}` placeholders of a template."""
    return _PLACEHOLDER.findall(template)


def fill(template: str, args: dict[str, Any]) -> str:
    """Substitute `{param}` placeholders; a parameter missing from `args` becomes `any`."""
    return _PLACEHOLDER.sub(lambda m: str(args.get(m.group(1), ANY)), template)


def matches(pattern: str, predicate: str) -> bool:
    """Whether a positive pattern (wildcards allowed) matches one concrete predicate."""
    p, q = parse(pattern), parse(predicate)
    if p.name != q.name or len(q.args) > len(p.args):
        return False
    if any(a not in WILDCARDS for a in p.args[len(q.args):]):
        return False
    return all(a in WILDCARDS or a == b for a, b in zip(p.args, q.args, strict=False))


def matching(pattern: str, predicates: Iterable[str]) -> set[str]:
    """The predicates a positive pattern matches."""
    return {q for q in predicates if matches(pattern, q)}


def holds(template: str, predicates: Collection[str]) -> bool:
    """A template holds: some predicate matches it (or, negated, none does)."""
    atom = parse(template)
    if not atom.negated and template in predicates:
        return True  # the common case of a concrete goal
    found = any(matches(atom.positive, q) for q in predicates)
    return not found if atom.negated else found


def preconditions_hold(preconditions: Iterable[str], predicates: Collection[str]) -> bool:
    """Every precondition holds over `predicates`, an unbound placeholder matching any value."""
    return all(holds(fill(p, {}), predicates) for p in preconditions)


def achieved(effect: str, before: Collection[str], after: Collection[str]) -> bool:
    """An effect was brought about by what happened between two states: a positive effect
    matches a predicate that did not hold before; a negated one matched before and not after."""
    atom = parse(effect)
    if atom.negated:
        return bool(matching(atom.positive, before)) and not holds(atom.positive, after)
    return bool(matching(atom.positive, after) - set(before))
