"""The no-op guard (opt-in: a planner's `noop_guard`, docs/planners.md): a skill call that ends in
success after 0 env steps with the state's predicates unchanged did nothing, however its
outcome reads. Crafter's `shelter` by day is one (its effects, `not dark`, already hold): a
greedy model that sees only "ok" asks for it again from the same prompt, forever
(docs/crafter.md 6d). With the guard on, the planner is told, in the next prompt's feedback and
in the history (the item's reason starts with `no-op`), and identical no-ops in a row count as
repeated failures do (`polar.agent.loop.Repeats`; the symbolic planner's `max_repeats`)."""

from __future__ import annotations

from polar.episode import NOOP, Outcome
from polar.planners.base import HistoryItem


def is_noop(outcomes: list[Outcome]) -> bool:
    """Every outcome a skill call's (or a plan's calls') and a success after 0 env steps, the
    predicates after as before: the decision changed nothing the planner can read."""
    return bool(outcomes) and all(
        o.kind in ("skill", "primitive") and o.success and o.steps == 0
        and set(o.predicates_before) == set(o.predicates_after) for o in outcomes)


def mark_noops(history: list[HistoryItem]) -> list[HistoryItem]:
    """The decision's history items with their reason prefixed `no-op: ` (still successes:
    the record stays what the skill runner said)."""
    return [h.model_copy(update={"reason": f"{NOOP}: {h.reason}"}) for h in history]


def noop_feedback(what: str) -> str:
    return f"{what} did nothing: it succeeded after 0 env steps and no fact changed."
