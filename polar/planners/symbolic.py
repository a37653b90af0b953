"""The offline symbolic planner: goal regression over the skills on offer.

It knows no skill by name. From the current symbolic state it regresses the goal over the
skills' declared effects and preconditions (`context.skills`, the library's manifests):

1. the goal atoms come from the task (the mission language, polar.domains.registry), or from the harness's
   own goal when the task restates it (its mission, or a task that refers to "the mission");
2. for an unmet atom, a *candidate* is a skill with an effect that unifies with it: the
   effect's `{param}` placeholders are bound from the atom (`carrying({object},{color})` +
   `carrying(box,purple)` -> object=box, color=purple); parameters the atom leaves open are
   bound from the state, by matching the skill's preconditions against its predicates (drop's
   `carrying({object},{color})` names what is carried; `reachable(key,green,{x},{y})` names
   which green key can be reached, where colours repeat);
3. a candidate whose preconditions all hold is the next call; otherwise its unmet
   preconditions are regressed in the order the manifest lists them, and the first one's
   first step is the next call, provided every unmet precondition can be achieved at all.
   Candidates with fewer unmet preconditions are tried first; atoms already on the path are
   not regressed again (no cycles), and the search is bounded by `max_depth`.

It decides one skill call at a time and always from the fresh state, so a failed or
surprising outcome is simply replanned; it gives up when the same call failed `max_repeats`
times in a row. It needs no model, no network and no randomness.

Built in (knowledge that is no skill's effect):
- *reachability*: an unmet `reachable(X)` that no skill's effect reaches is achieved by
  clearing the first obstacle O on the way, which the harness names with `behind(X, O)` and
  `in_way(O)`: the sub-goal is `not in_way(O)` (skills say how: toggle and unlock open a
  door, pickup takes an object away);
- *memory* (option `memory: true`, docs/memory.md): an unmet `reachable(X)` with no obstacle
  named and X not yet seen becomes `seen(X)` (the `explore` skill's effect, whose own
  precondition `reachable(frontier)` is cleared like any other: open the door in the way);
- *the cell ahead*: a precondition about it (`front_...`, drop's `front_clear`) counts as met
  only when something dropped there would cut the agent off (`drop_cuts(X)`) from no object
  X whose `reachable(X)` the plan relies on, i.e. a met precondition of a skill on the way
  (drop the ball, but not in front of the door it is to go through); otherwise the planner
  turns with the `left` skill, and where no direction will do, steps `forward` onto a clear
  cell and looks again (at most MAX_MOVES such calls in a row).
"""

from __future__ import annotations

import re
from typing import Any

from polar.domains.registry import mission_language
from polar.episode import INTERRUPTED, NOOP
from polar.errors import NoSkillsError, PlannerError
from polar.harnesses.base import HarnessSpec, SymbolicState
from polar.planners.base import HistoryItem, PlannerContext, SkillInfo
from polar.planners.decisions import Decision, Finish, SkillCall, describe_decision
from polar.predicates import WILDCARDS, holds, matches, parse

NEEDS_LLM = (
    "the symbolic planner understands missions with one end: 'go to X', 'pick up X', 'open X', "
    "'put X next to Y', '... get to the goal' (X like 'the yellow key'); for a sequence of ends "
    "('go to X and go to Y', '... after you ...') or a free-form task use an LLM planner, e.g. "
    "--planner planners/openai.yaml"
)
OPTIONS = ("max_repeats", "max_depth", "memory", "goals", "interrupt", "noop_guard")
_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")
TURN, STEP, MAX_MOVES = "left", "forward", 12

Binding = dict[str, str]


class SymbolicPlanner:
    name = "symbolic"

    def __init__(self, profile: Any = None, max_repeats: int = 3, max_depth: int = 10, memory: bool = False,
                 goals: list[str] | None = None, interrupt: list[str] | None = None, noop_guard: bool = False) -> None:
        options = getattr(profile, "options", None) or {}
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise PlannerError(f"symbolic planner: unknown option(s) {sorted(unknown)}; known: {', '.join(OPTIONS)}")
        self.max_repeats = int(options.get("max_repeats", max_repeats))
        self.max_depth = int(options.get("max_depth", max_depth))
        # Plan from the agent's memory (the agent loop wraps the harness in polar.agent.memory):
        # an object the memory holds no way to is looked for (`seen(X)`, explore's effect).
        self.memory = bool(options.get("memory", memory))
        # Open-ended ends (an open world's achievements): pursued instead of the task's goal,
        # each one independent of the others (see `_open_goals`). An end may hold a condition,
        # `END when A and B`: it is pursued only while A and B hold (drink while at the water).
        self.goals = [str(g) for g in options.get("goals", goals or [])]
        self._ends = [_conditional(g) for g in self.goals]
        # Atoms that stop a running skill call when one becomes true (the agent loop passes
        # them to the skill runner), so the planner can answer a threat it did not see coming.
        self.interrupt = [str(a) for a in options.get("interrupt", interrupt or [])]
        # A call that succeeds after 0 env steps with no fact changed is told as a no-op and counts
        # as a failure (the agent loop reads this, polar.agent.noop); off by default.
        self.noop_guard = bool(options.get("noop_guard", noop_guard))

    def reset(self) -> None:
        """Nothing to forget: every decision is made from the fresh state and the history."""

    def decide(self, context: PlannerContext) -> Decision:
        state = context.symbolic
        if state is None:
            raise PlannerError(f"harness {context.spec.id} exposes no symbolic state; "
                               "the symbolic planner needs one (use an LLM planner)")
        if self.goals:
            return self._open_goals(context, state)
        goal = _goal(context, state)
        preds = frozenset(state.predicates)
        if all(holds(g, preds) for g in goal):
            return Finish(success=True, reason=f"goal {', '.join(goal)} holds")
        if (stuck := self._stuck(context.history)) is not None:
            return Finish(success=False, reason=stuck)
        if not context.skills:
            raise NoSkillsError("the symbolic planner plans over the skills on offer, and none were "
                               "given (is the skill library empty or incompatible with this harness?)")
        search = Regression(context.skills, preds, context.history, self.max_depth, self.memory)
        for g in goal:
            if not holds(g, preds):
                call = search.achieve(g)
                if call is None:
                    offer = ", ".join(s.name for s in context.skills)
                    raise PlannerError(f"no plan for {g} from here with the skills on offer ({offer}): no "
                                       f"skill's effects reach it within {self.max_depth} steps of regression")
                return call
        raise AssertionError("unreachable")

    def _open_goals(self, context: PlannerContext, state: SymbolicState) -> Decision:
        """The first unmet end of `goals` that has a plan whose next call has not failed the
        last `max_repeats` times it was made (the history the planner is shown), trying the
        other ways to it first; an end with no such plan from here is passed over for the next
        one (in an open world, another end may be reachable where one is not). Finish when
        every end holds or none is left to try."""
        preds = frozenset(state.predicates)
        unmet = [g for g, when in self._ends if all(holds(c, preds) for c in when) and not holds(g, preds)]
        if not unmet:
            return Finish(success=True, reason=f"goals {', '.join(self.goals)} hold")
        if not context.skills:
            raise NoSkillsError("the symbolic planner plans over the skills on offer, and none were given")
        failing = _failing_calls(context.history, self.max_repeats)
        search = Regression(context.skills, preds, context.history, self.max_depth, self.memory, avoid=failing)
        for g in unmet:
            if (call := search.achieve(g)) is not None:
                return call
        return Finish(success=False, reason=f"no unmet goal of {len(unmet)} has a plan from here whose call "
                                            f"has not failed {self.max_repeats} times in a row")

    def _stuck(self, history: list[HistoryItem]) -> str | None:
        """Give up when the same call failed `max_repeats` times in a row."""
        tail = history[-self.max_repeats:]
        if len(tail) == self.max_repeats and all(_failed(h) for h in tail) and \
                len({h.decision for h in tail}) == 1:
            return f"{tail[-1].decision} failed {self.max_repeats} times in a row: {tail[-1].reason}"
        return None


def _conditional(end: str) -> tuple[str, list[str]]:
    """`END when A and B` -> (END, [A, B]); a plain end has no condition. Raises on a malformed atom."""
    goal, _, when = end.partition(" when ")
    conditions = [c.strip() for c in when.split(" and ")] if when.strip() else []
    for atom in (goal.strip(), *conditions):
        try:
            parse(atom)
        except ValueError as err:
            raise PlannerError(f"symbolic planner: goals: {end!r}: {err}") from None
    return goal.strip(), conditions


def _failing_calls(history: list[HistoryItem], repeats: int) -> set[str]:
    """Calls whose last `repeats` attempts in the history all failed (an interrupted call did
    not fail on its own: it does not count; a no-op, which only the no-op guard reports, does)."""
    tries: dict[str, list[bool]] = {}
    for h in history:
        if not h.reason.startswith(INTERRUPTED):
            tries.setdefault(h.decision, []).append(not _failed(h))
    return {d for d, ok in tries.items() if len(ok) >= repeats and not any(ok[-repeats:])}


def _failed(h: HistoryItem) -> bool:
    """A failed call, or a no-op (a success after 0 env steps that changed nothing, as the agent
    loop's no-op guard marks it: polar.agent.noop)."""
    return not h.success or h.reason.startswith(NOOP)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9()']+", text.lower()))


def restated_goal(task: str, state: SymbolicState | None, spec: HarnessSpec | None) -> str | None:
    """How `task` restates the harness's own goal (`state.goal`), or None when it does not:
    it is the harness's mission or the first line of its description (letter case and
    punctuation aside), its parsed goal is the harness's, or it refers to "the mission"."""
    if state is None or not state.goal:
        return None
    own = [state.mission or "", spec.description.strip().split("\n")[0] if spec is not None else ""]
    if _plain(task) in {_plain(o) for o in own if o}:
        return "the task is the harness's mission"
    parsed = mission_language().parse_mission(task)
    if parsed and sorted(parsed) == sorted(state.goal):
        return "the task's goal is the harness's"
    if re.search(r"\bmission\b", task.lower()):
        where = f" ({state.mission!r})" if state.mission else ""
        return f"the task refers to the harness's mission{where}"
    return None


def task_warning(task: str, state: SymbolicState | None, spec: HarnessSpec | None) -> str | None:
    """What the symbolic planner drops of `task`, for a warning: None when it reads all of it
    (or the task is the harness's mission, whose goal it plans for)."""
    words = mission_language().unparsed_words(task)
    why = restated_goal(task, state, spec)
    if not words or why == "the task is the harness's mission":
        return None
    if why is not None and state is not None:
        plan = f"{why}: it plans for the harness's goal {', '.join(state.goal)}"
    elif (goal := mission_language().parse_mission(task)) is not None:
        plan = f"it plans for {', '.join(goal)} from the rest"
    else:
        plan = "it cannot plan for it"
    return f"the symbolic planner does not read {' '.join(repr(w) for w in words)} of the task; {plan}"


def _goal(context: PlannerContext, state: SymbolicState) -> list[str]:
    """The harness's own goal when the task restates it (`restated_goal`), else the task's."""
    task = context.task.strip()
    if restated_goal(task, state, context.spec) is not None:
        return list(state.goal)
    goal = mission_language().parse_mission(task)
    if not goal:
        raise PlannerError(f"cannot parse the task {task!r}: {NEEDS_LLM}")
    return goal


class Regression:
    """One decision's search: the first skill call on a way to an atom, from this state."""

    def __init__(self, skills: list[SkillInfo], preds: frozenset[str], history: list[HistoryItem],
                 max_depth: int, memory: bool = False, avoid: frozenset[str] | set[str] = frozenset()) -> None:
        self.skills, self.preds, self.history, self.max_depth = skills, preds, history, max_depth
        self.memory = memory
        self.avoid = avoid  # calls (as the history spells them) not to lead with: another way is tried

    def achieve(self, atom: str, path: tuple[str, ...] = (), kept: frozenset[str] = frozenset()) -> SkillCall | None:
        """The next call towards `atom` (which does not hold), or None when there is no way;
        `kept` holds the met preconditions the plan relies on (see `_holds`)."""
        if len(path) >= self.max_depth or atom in path:
            return None
        path = (*path, atom)
        for skill, args, unmet in self._candidates(atom, kept):
            call = self._first_step(skill, args, unmet, path, kept)
            if call is not None and not (self.avoid and describe_decision(call) in self.avoid):
                return call
        a = parse(atom)
        if not a.negated and a.name == "reachable":
            step = self._clear_the_way(atom, path, kept)
            return step if step is not None or not self.memory else self._look_for(a.args, path, kept)
        if not a.negated and a.name.startswith("front_"):
            return self._turn(atom)
        return None

    def _holds(self, atom: str, kept: frozenset[str]) -> bool:
        """`holds`, except that the cell ahead is not fit for a drop that would cut the agent
        off from an object whose reachability the plan relies on."""
        if not holds(atom, self.preds):
            return False
        if not parse(atom).name.startswith("front_"):
            return True
        return not any(holds(f"drop_cuts({','.join(parse(k).args)})", self.preds)
                       for k in kept if parse(k).name == "reachable")

    # --- candidates ----------------------------------------------------------------------

    def _candidates(self, atom: str, kept: frozenset[str]) -> list[tuple[SkillInfo, Binding, list[str]]]:
        """Skills with an effect unifying with `atom`, bound, fewest unmet preconditions first."""
        found = []
        for skill in self.skills:
            for effect in skill.effects:
                args = unify(effect, atom)
                if args is None or not _fits(skill, args):
                    continue
                args = self._bind_from_state(skill, args)
                pre = (fill_any(fill_known(t, args)) for t in skill.preconditions)
                unmet = [p for p in pre if not self._holds(p, kept)]
                found.append((skill, args, unmet))
                break
        return sorted(found, key=lambda c: len(c[2]))

    def _bind_from_state(self, skill: SkillInfo, args: Binding) -> Binding:
        """Bind open parameters from the state: each positive precondition, in order, from
        the predicate that binds most of its open placeholders."""
        args = dict(args)
        for template in skill.preconditions:
            partial = fill_known(template, args)
            if parse(partial).negated or not _open(partial):
                continue
            options = [b for q in sorted(self.preds) if (b := unify(partial, q)) and _fits(skill, args | b)]
            if options:
                args |= max(options, key=len)
        return args

    def _first_step(self, skill: SkillInfo, args: Binding, unmet: list[str],
                    path: tuple[str, ...], kept: frozenset[str]) -> SkillCall | None:
        if not unmet:
            return _call(skill, args, path)
        met = {p for p in (fill_any(fill_known(t, args)) for t in skill.preconditions) if p not in unmet}
        kept = kept | met
        first = None
        for pre in unmet:  # every unmet precondition must be achievable; the first one leads
            step = self.achieve(pre, path, kept)
            if step is None:
                return None
            first = first or step
        short = self._used_up(first, met) if first is not None else None
        if short is not None and (more := self.achieve(short, path, kept - {short})) is not None:
            return more  # gather enough first: the step would use up what `skill` counts on
        return first

    def _used_up(self, call: SkillCall, met: set[str]) -> str | None:
        """The counted atom to achieve before `call` so that a met precondition it would use up
        still holds after it: `has(wood,1)` met, a call that uses `has(wood,2)` -> `has(wood,3)`.
        Counted atoms end in a count (`name(args...,N)`); a skill declares what it uses."""
        skill = next((s for s in self.skills if s.name == call.skill.partition("@")[0]), None)
        if skill is None or not skill.uses:
            return None
        args = {k: str(v) for k, v in call.args.items()}
        for used in (parse(fill_any(fill_known(u, args))) for u in skill.uses):
            for atom in sorted(met):
                a = parse(atom)
                if a.negated or a.name != used.name or a.args[:-1] != used.args[:-1] or \
                        not a.args or not a.args[-1].isdigit():
                    continue
                need = f"{a.name}({','.join((*a.args[:-1], str(int(a.args[-1]) + int(used.args[-1]))))})"
                if not holds(need, self.preds):
                    return need
        return None

    # --- what is built in ----------------------------------------------------------------

    def _clear_the_way(self, atom: str, path: tuple[str, ...], kept: frozenset[str]) -> SkillCall | None:
        """`reachable(X)` holds once the obstacle `behind(X, O)` names is out of the way."""
        for obstacle in self._obstacles(atom):
            if (step := self.achieve(f"not in_way({obstacle})", path, kept)) is not None:
                return step
        return None

    def _look_for(self, target: tuple[str, ...], path: tuple[str, ...], kept: frozenset[str]) -> SkillCall | None:
        """In memory mode, an object with no known way to it and not yet seen is to be seen
        first: the sub-goal `seen(X)` (explore's effect)."""
        args = list(target)
        while args and args[-1] in WILDCARDS:
            args.pop()
        seen = f"seen({','.join(args)})"
        if not args or holds(seen, self.preds):
            return None
        return self.achieve(seen, path, kept)

    def _obstacles(self, atom: str) -> list[str]:
        """The obstacles O (as `in_way(O)` spells them) of `behind(X..., O...)` predicates
        whose X matches `atom`'s target, the most specific first."""
        target = parse(atom)
        found = set()
        for q in self.preds:
            b = parse(q)
            if b.name != "behind":
                continue
            for k in range(1, len(b.args)):
                x, o = ",".join(b.args[:k]), ",".join(b.args[k:])
                if f"in_way({o})" in self.preds and matches(target.positive, f"{target.name}({x})"):
                    found.add(o)
        return sorted(found, key=lambda o: (-o.count(","), o))

    def _turn(self, atom: str) -> SkillCall | None:
        """Face another cell: turn `left` until every direction was seen (three turns), then
        step `forward` onto a clear cell (turning on to find one) and look again."""
        moves = []
        for h in reversed(self.history):
            if not h.decision.startswith((f"{TURN}(", f"{STEP}(")):
                break
            moves.append(h.decision.split("(")[0])
        if len(moves) >= MAX_MOVES:
            return None
        turns = moves.index(STEP) if STEP in moves else len(moves)  # since the last step
        offer = {s.name for s in self.skills}
        if turns >= 3 and STEP in offer and "front_clear" in self.preds:
            return SkillCall(skill=STEP, args={}, reason=f"no direction here has {atom}: step aside")
        if TURN not in offer or turns >= 6:
            return None
        return SkillCall(skill=TURN, args={}, reason=f"turn to face a cell where {atom} holds")


# --- unification --------------------------------------------------------------------------


def unify(template: str, atom: str) -> Binding | None:
    """Bind a template's whole-argument `{param}` placeholders so that it matches `atom`.

    A wildcard in the atom binds nothing; a template longer than the atom leaves its extra
    placeholders open (trailing arguments the atom does not constrain); None when the name,
    the negation, a constant or a repeated placeholder disagrees, or the atom has more
    arguments than the template."""
    t, a = parse(template), parse(atom)
    if t.negated != a.negated or t.name != a.name or len(a.args) > len(t.args):
        return None
    out: Binding = {}
    for ta, aa in zip(t.args, a.args, strict=False):
        if (m := _PLACEHOLDER.match(ta)) is not None:
            if aa in WILDCARDS:
                continue
            if out.setdefault(m.group(1), aa) != aa:
                return None
        elif ta not in WILDCARDS and aa not in WILDCARDS and ta != aa:
            return None
    return out


def fill_known(template: str, args: Binding) -> str:
    """Substitute the bound placeholders, leaving the others as `{param}`."""
    return re.sub(r"\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), template)


def fill_any(template: str) -> str:
    """Open placeholders become `any`."""
    return re.sub(r"\{(\w+)\}", "any", template)


def _open(template: str) -> bool:
    return "{" in template


def _fits(skill: SkillInfo, args: Binding) -> bool:
    """Bound values fit the parameters: a declared choice, or an integer for an int parameter."""
    for name, value in args.items():
        spec = skill.parameters.get(name)
        if spec is None:
            return False
        if isinstance(spec, list) and value not in spec:
            return False
        if spec == "int" and not re.fullmatch(r"-?\d+", value):
            return False
    return True


def _call(skill: SkillInfo, args: Binding, path: tuple[str, ...]) -> SkillCall:
    typed = {k: int(v) if skill.parameters.get(k) == "int" else v for k, v in args.items()}
    why = f"achieves {path[-1]}" + (f", on the way to {path[0]}" if len(path) > 1 else "")
    return SkillCall(skill=skill.name, args=typed, reason=why)
