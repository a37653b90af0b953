"""Interruptible skill calls (polar.skills.runner's `interrupt`), on a real Crafter world with
the scripted `explore` skill: an atom that becomes true mid-call stops it at that very step
(cause `interrupted`), an atom that already held at the start does not, one the skill's effects
name never does, and the symbolic planner does not count an interrupted call as failing."""

from __future__ import annotations

import pytest

pytest.importorskip("crafter")

from polar.domains.crafter.skills import scripted_skills  # noqa: E402
from polar.episode import FailureCause  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402
from polar.planners.base import HistoryItem  # noqa: E402
from polar.planners.symbolic import _failing_calls  # noqa: E402
from polar.skills.runner import interrupts, run_skill  # noqa: E402

SKILLS = {s.name: s for s in scripted_skills()}
CANDIDATES = ["sees(water)", "sees(stone)", "sees(cow)", "sees(sand)", "sees(tree)", "sees(coal)", "sees(path)"]


def _walk(seed: int, interrupt: list[str], budget: int = 80):
    """explore(thing=diamond) (diamonds are rare: it walks the whole budget) from a fresh world,
    recording the predicates after every step."""
    h = make_harness("crafter:")
    obs, _ = h.reset(seed=seed)
    seen = [set(h.symbolic_state().predicates)]
    step = h.step

    def recording_step(action):
        out = step(action)
        seen.append(set(h.symbolic_state().predicates))
        return out

    h.step = recording_step
    try:
        out = run_skill(SKILLS["explore"], h, {"thing": "diamond"}, obs=obs, budget=budget, interrupt=interrupt)
    finally:
        h.close()
    return out.outcome, seen


def test_an_atom_becoming_true_stops_the_call_at_that_step() -> None:
    plain, seen = _walk(0, [])
    assert not plain.success and plain.steps == 80 and plain.cause == FailureCause.SKILL_FAILURE
    # an atom that did not hold at the start and became true on the way, and one that held at the start
    rising = next((a, i) for a in CANDIDATES for i, p in enumerate(seen) if i > 0 and a in p and a not in seen[0])
    atom, first = rising
    held = next(a for a in CANDIDATES if a in seen[0] and all(a in p for p in seen[:first + 1]))
    out, _ = _walk(0, [held, atom])
    assert not out.success and out.cause == FailureCause.INTERRUPTED
    assert out.steps == first and out.reason == f"interrupted: {atom} became true"
    assert atom in out.predicates_after and atom not in out.predicates_before


def test_a_skill_is_not_interrupted_by_what_its_effects_name() -> None:
    fight, explore = SKILLS["fight_zombie"], SKILLS["explore"]
    atoms = ["near(zombie)", "sees(zombie)", "low(food)"]
    assert interrupts(fight, fight.bind({}), atoms) == ["low(food)"]  # its effects: not near/sees(zombie)
    assert interrupts(explore, explore.bind({"thing": "zombie"}), atoms) == ["near(zombie)", "low(food)"]
    assert interrupts(explore, explore.bind({"thing": "cow"}), atoms) == atoms


def test_an_interrupted_call_is_not_a_failing_call_for_the_planner() -> None:
    def item(ok: bool, reason: str) -> HistoryItem:
        return HistoryItem(decision="collect_wood()", success=ok, steps=3, reward=0.0, reason=reason)

    cut = item(False, "interrupted: near(zombie) became true")
    assert _failing_calls([cut, cut, cut], 3) == set()
    assert _failing_calls([item(False, "step budget (150) exhausted")] * 3, 3) == {"collect_wood()"}
