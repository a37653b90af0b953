"""The offline symbolic planner: goal regression over skills and the harness's predicates.

It parses the task (BabyAI-style missions: go to / pick up / open / put X next to Y, and
"... get to the goal"), then, from the current symbolic state, picks the next skill call
that moves towards the goal: reach a target (`goto`), clear what stands in the way (open a
door, fetching its key first; move an object aside), pick up, toggle, drop. It decides one
skill call at a time and always from the fresh state, so a failed or surprising outcome is
simply replanned. It needs no model, no network and no randomness.
"""

from __future__ import annotations

from typing import Any

from polar.errors import PlannerError
from polar.harnesses.base import SymbolicState
from polar.harnesses.missions import parse_mission
from polar.planners.base import PlannerContext
from polar.planners.decisions import Decision, Finish, SkillCall
from polar.predicates import ANY, holds, parse

NEEDS_LLM = (
    "the symbolic planner understands missions of the forms 'go to X', 'pick up X', "
    "'open X', '... get to the goal' (X like 'the yellow key'); for a free-form task use an "
    "LLM planner, e.g. --planner planners/openai.yaml"
)


class SymbolicPlanner:
    name = "symbolic"

    def __init__(self, profile: Any = None, max_repeats: int = 3) -> None:
        options = getattr(profile, "options", None) or {}
        unknown = set(options) - {"max_repeats"}
        if unknown:
            raise PlannerError(f"symbolic planner: unknown option(s) {sorted(unknown)}; known: max_repeats")
        self.max_repeats = int(options.get("max_repeats", max_repeats))
        self.reset()

    def reset(self) -> None:
        self._turns = 0  # turns taken since picking up an object we must put aside

    # --- entry point ---------------------------------------------------------------------

    def decide(self, context: PlannerContext) -> Decision:
        state = context.symbolic
        if state is None:
            raise PlannerError(f"harness {context.spec.id} exposes no symbolic state; "
                               "the symbolic planner needs one (use an LLM planner)")
        goal = parse_mission(context.task) or (
            state.goal if state.mission and context.task.strip() == state.mission else None)
        if not goal:
            raise PlannerError(f"cannot parse the task {context.task!r}: {NEEDS_LLM}")
        preds = set(state.predicates)
        if all(holds(g, preds) for g in goal):
            return Finish(success=True, reason=f"goal {', '.join(goal)} holds")
        if (stuck := self._stuck(context)) is not None:
            return Finish(success=False, reason=stuck)
        for g in goal:
            if not holds(g, preds):
                call = self._achieve(g, state, depth=0)
                missing = {c.name for c in context.skills}
                if context.skills and call.skill not in missing:
                    raise PlannerError(f"the plan needs skill {call.skill!r}, which the library lacks")
                return call
        raise AssertionError("unreachable")

    def _stuck(self, context: PlannerContext) -> str | None:
        """Give up when the same call failed `max_repeats` times in a row."""
        tail = context.history[-self.max_repeats:]
        if len(tail) == self.max_repeats and all(not h.success for h in tail) and \
                len({h.decision for h in tail}) == 1:
            return f"{tail[-1].decision} failed {self.max_repeats} times in a row: {tail[-1].reason}"
        return None

    # --- regression ----------------------------------------------------------------------

    def _achieve(self, atom: str, state: SymbolicState, depth: int) -> SkillCall:
        if depth > 8:
            raise PlannerError(f"no plan found for {atom} (regression too deep)")
        preds = set(state.predicates)
        _, name, args = parse(atom)
        if name in ("at", "facing"):
            target = ("goal", ANY) if args[0] == "goal" else (args[0], args[1] if len(args) > 1 else ANY)
            return self._reach(target, state, depth, why=atom)
        if name == "carrying":
            t, c = args[0], args[1] if len(args) > 1 else ANY
            carried = state.agent.get("carrying")
            obj = self._find(state, t, c)
            if carried and not holds(f"carrying({t},{c})", preds):
                # keep what we carry while it may open the way (a key); drop it once the
                # target is within reach
                if holds(f"reachable({obj[0]},{obj[1]})", preds):
                    return self._put_aside(state)
                return self._reach(obj, state, depth + 1, why=atom)
            if holds(f"facing({obj[0]},{obj[1]})", preds):
                self._turns = 0
                return SkillCall(skill="pickup", args={"object": obj[0], "color": obj[1]},
                                 reason=f"pick up the {obj[1]} {obj[0]} in front ({atom})")
            return self._reach(obj, state, depth, why=atom)
        if name == "open":
            color = args[1] if len(args) > 1 else ANY
            door = self._find(state, "door", color)
            if holds(f"locked(door,{door[1]})", preds) and not holds(f"carrying(key,{door[1]})", preds):
                return self._achieve(f"carrying(key,{door[1]})", state, depth + 1)
            if holds(f"facing(door,{door[1]})", preds):
                return SkillCall(skill="toggle", args={"color": door[1]},
                                 reason=f"open the {door[1]} door in front")
            return self._reach(door, state, depth, why=f"open(door,{door[1]})")
        raise PlannerError(f"the symbolic planner cannot achieve {atom!r}: {NEEDS_LLM}")

    def _reach(self, target: tuple[str, str], state: SymbolicState, depth: int, why: str) -> SkillCall:
        preds = set(state.predicates)
        t, c = target
        key = "goal" if t == "goal" else f"{t},{c}"
        if holds(f"reachable({key})", preds):
            if t != "goal":
                t, c = self._find(state, t, c)
            return SkillCall(skill="goto", args={"object": t} | ({} if t == "goal" else {"color": c}),
                             reason=f"go to the {'goal' if t == 'goal' else f'{c} {t}'} ({why})")
        obstacle = next((parse(p).args for p in sorted(preds)
                         if p.startswith("behind(") and holds(f"behind({key},any,any)", [p])), None)
        if obstacle is None:  # nothing known in the way: let the skill try
            return SkillCall(skill="goto", args={"object": t, "color": c}, reason=f"go to {key} ({why})")
        ot, oc = obstacle[-2], obstacle[-1]
        if ot == "door":
            return self._achieve(f"open(door,{oc})", state, depth + 1)
        # an object in the way: pick it up (then it is put aside behind us)
        return self._achieve(f"carrying({ot},{oc})", state, depth + 1)

    def _put_aside(self, state: SymbolicState) -> SkillCall:
        """Drop what we carry where it blocks nothing: turn around first, then drop."""
        preds = set(state.predicates)
        carried = state.agent["carrying"]
        # prefer the cell behind us (2 turns); else a side cell; never where we picked it up
        t = self._turns
        if "front_clear" in preds and (t % 4 == 2 or (t >= 3 and t % 4 != 0)):
            self._turns = 0
            return SkillCall(skill="drop", args={"object": carried["type"], "color": carried["color"]},
                             reason=f"put the {carried['color']} {carried['type']} aside")
        self._turns += 1
        return SkillCall(skill="left", reason="turn to find a free cell to drop onto")

    @staticmethod
    def _find(state: SymbolicState, t: str, c: str) -> tuple[str, str]:
        for o in state.objects:
            if o.type == t and (c == ANY or o.color == c):
                return o.type, o.color or ANY
        raise PlannerError(f"no {'' if c == ANY else c + ' '}{t} in this world")
