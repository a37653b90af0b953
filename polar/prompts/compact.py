"""Prompts in fewer tokens, for small students' templates: the `compact_facts` and
`applicable` filters.

A harness may state one quantity as a ladder of facts so that a precondition can name a
threshold: Crafter's `has(wood)`, `has(wood,1)` .. `has(wood,5)` for five wood (a recipe needs
`has(wood,2)`), and `below(drink,6)` .. `below(drink,9)` for a drink of 5 (a profile drinks
`when below(drink,7)`). Every rung is implied by the top one, so a prompt can show that one alone;
which names are ladders, and which way they run, the template says (the harness's own
vocabulary), so nothing here knows a world:

    {{ predicates | compact_facts(at_least=["has"], below=["below"]) }}

-> `achieved(collect_wood place_table) below(drink,6 food,8) has(wood,5 sapling,1) sees(tree water)`:
ladders cut to their top, then the facts grouped by name (one name, its arguments space-separated).

    {{ skills | applicable(predicates) | map(attribute="name") | join(" ") }}

-> the skills whose preconditions hold now (a placeholder no argument binds matches anything), in
their order: a call the skill runner would start. The symbolic planner only ever calls such a
skill (Crafter's teacher: 3,073 of 3,073 calls), so the list is both shorter than the library and
what its choice is made among.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from polar.predicates import parse, preconditions_hold


def _split(atom: str) -> tuple[str, list[str]]:
    """(name, arguments) by the predicates' own parser; a negated or unparsable atom is shown as it is."""
    try:
        a = parse(atom)
    except ValueError:
        return atom, []
    return (atom, []) if a.negated else (a.name, list(a.args))


def top_of_ladders(predicates: Iterable[str], at_least: Sequence[str] = (), below: Sequence[str] = ()) -> list[str]:
    """The facts without the rungs another fact implies: of `name(X..,N)` for a name in
    `at_least` (at least N) only the largest N, and no bare `name(X..)` beside it; for a name in
    `below` (under N), only the smallest N. Order kept."""
    facts = list(dict.fromkeys(predicates))
    best: dict[tuple[str, tuple[str, ...]], int] = {}
    for atom in facts:
        name, args = _split(atom)
        if (name in at_least or name in below) and args and args[-1].lstrip("-").isdigit():
            key, n = (name, tuple(args[:-1])), int(args[-1])
            keep_max = name in at_least
            if key not in best or (n > best[key] if keep_max else n < best[key]):
                best[key] = n
    out = []
    for atom in facts:
        name, args = _split(atom)
        if name in at_least and (name, tuple(args)) in best:
            continue  # has(wood) beside has(wood,N)
        if args and args[-1].lstrip("-").isdigit() and (key := (name, tuple(args[:-1]))) in best \
                and best[key] != int(args[-1]):
            continue
        out.append(atom)
    return out


def compact_facts(predicates: Iterable[str], at_least: Sequence[str] = (), below: Sequence[str] = ()) -> str:
    """`top_of_ladders`, then one group per name in order of first appearance: `name(a b c)`
    for one-argument facts, `name(x,1 y,2)` for longer ones, a bare name for facts without
    arguments; anything that is not a plain atom (`not x`) is shown as it is."""
    groups: dict[tuple[str, bool], list[str]] = {}  # (name, has arguments): a bare `x` stays apart from x(..)
    for atom in top_of_ladders(predicates, at_least, below):
        name, args = _split(atom)
        groups.setdefault((name, bool(args)), []).append(",".join(args))
    return " ".join(f"{name}({' '.join(args)})" if with_args else name
                    for (name, with_args), args in groups.items())


def applicable(skills: Iterable[dict[str, Any]], predicates: Iterable[str]) -> list[dict[str, Any]]:
    """The skills (as templates see them: dicts with `preconditions`) whose preconditions all
    hold over `predicates`, unbound placeholders matching any value."""
    facts = set(predicates)
    return [s for s in skills if preconditions_hold(s.get("preconditions") or [], facts)]
