"""Options over the agent's memory: the option env of `hrl-memory` (docs/memory.md).

`MemoryOptionEnv` is `polar.skills.options.OptionEnv` with the harness seen through the agent's
memory (`polar.agent.memory.MemoryHarness`): the memory skills (`skills_memory/`: `explore`,
`goto` over remembered cells) read `capability("memory")`, every symbolic state the env reads
(an option's applicability, the skills' termination tests, the primitives' effects) is the
memory's predicates, and the simulator's grid is refused. It lives here, in the agent layer
beside the memory, rather than the memory moving below the skills layer: the option env stays
generic (a harness in, options out), and the memory stays the agent's.

The options (`memory_options`) come from the library's declarations alone, never from a state:
`explore` per object type its `object` parameter declares (any colour: it stops at the first
one seen), `goto` per type (the nearest of any colour) and per (type, colour) pair it declares,
`pickup` per type, and the library's other primitives without arguments (`drop`, `forward`,
`left`, `right`, `toggle`, `unlock`: a turn is how the agent comes to face a free cell to drop
what it carries): 49 options over `skills_memory/`, some never applicable in a given world (MiniGrid's goal has no colour in the
predicates, so `goto(goal, C)` never is). An option is *applicable* when its skill's
preconditions hold over the memory's predicates and its termination does not hold already
(`applicable`): not a `goto` to an object never seen or with no remembered way to it, not an
`explore` for a type already seen or with no unseen cell in reach, not a `pickup` while not
facing the object. The controller observes which are (`action_mask`, one bit per
option), which PPO reads as an action mask (`polar.rl.ppo.ppo_policy`: a masked option is never
sampled); a call of an inapplicable one (a controller without the mask) fails at once without an
env step, as the option env fails a `goto` to an object not in the grid.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from polar.agent.memory import MemoryHarness
from polar.episode import Outcome
from polar.errors import ConfigError
from polar.harnesses.base import Harness, HarnessSpec, SymbolicState
from polar.predicates import ANY, fill, holds
from polar.skills.catalog import SkillCatalog
from polar.skills.model import Skill, resolve_hook
from polar.skills.options import OptionEnv
from polar.skills.runner import termination_holds

MEMORY_OPTION_ENV = "gym:polar.agent.memory_options:MemoryOptionEnv"
MASK_KEY = "action_mask"  # the key PPO masks its actions by (polar.rl.ppo.ppo_policy.MASK_KEY; no torch import here)


def _choices(skill: Skill, name: str) -> list[str]:
    p = skill.parameters.get(name)
    return list(p.choices) if p is not None and p.choices else []


def memory_options(library: SkillCatalog, spec: HarnessSpec) -> list[dict[str, Any]]:
    """The options over the memory skills, from the parameters the library declares (module
    docstring); only skills the library holds for this harness."""
    have = {s.name: s for s in library.list() if s.usable_on(spec)}
    options: list[dict[str, Any]] = []
    if "explore" in have:
        options += [{"skill": "explore", "args": {"object": t}} for t in _choices(have["explore"], "object")]
    if "goto" in have:
        goto = have["goto"]
        types = _choices(goto, "object")
        options += [{"skill": "goto", "args": {"object": t}} for t in types]  # the nearest of the type
        options += [{"skill": "goto", "args": {"object": t, "color": c}} for t in types for c in _choices(goto, "color")]
    if "pickup" in have:
        types = _choices(have["pickup"], "object")
        options += [{"skill": "pickup", "args": {"object": t}} for t in types] or [{"skill": "pickup", "args": {}}]
    # the other primitives without arguments, the turns included: facing a free cell is what
    # `drop` needs (the object just picked up from in front of the agent blocks it otherwise)
    options += [{"skill": s.name, "args": {}} for s in have.values()
                if s.kind == "primitive" and s.name != "pickup" and not any(p.required for p in s.parameters.values())]
    if not any(o["skill"] in ("explore", "goto") for o in options):
        raise ConfigError(f"skill library {library.root}: no explore or goto skill for harness {spec.id!r}: "
                          "the memory options need the memory skills (skills_memory/)")
    return options


def applicable(skill: Skill, args: dict[str, Any], state: SymbolicState | None, obs: Any = None) -> str | None:
    """None when a call of `skill` with `args` may do something from `state`, else why not: a
    precondition unmet, or (a skill with a termination test) its termination holding already,
    the test the skill runner makes before the first step (`polar.skills.runner`)."""
    if state is None:
        return "no symbolic state to check the option against"
    preds = state.predicates
    for t in skill.preconditions:
        if not holds(fill(t, args), preds):
            return f"precondition {fill(t, args)} does not hold"
    term = skill.termination
    if skill.kind == "primitive" or term is None:
        return None
    done = termination_holds(term.mode, [fill(t, args) for t in term.predicates], preds)
    if done and term.check:
        check = resolve_hook(term.check, f"{skill.ref} termination.check", skill.library_root)
        done = bool(check(state, {k: v for k, v in args.items() if v != ANY}, obs, {}))
    return "its termination holds already" if done else None


class MemoryOptionEnv(OptionEnv):
    """`OptionEnv` over the agent's memory (module docstring); the controller observes its view
    (`image`, `direction`), the last option and its success, and which options apply (`action_mask`)."""

    def __init__(self, harness: str | Harness, options: list[dict[str, Any]], skills: str | None = None,
                 harness_kwargs: dict[str, Any] | None = None, controller: str = "view", **kwargs: Any) -> None:
        if controller != "view":
            raise ConfigError(f"controller: {controller!r}: over the agent's memory the controller observes its "
                              "own view (view); the full grid is the simulator's hidden state")
        if isinstance(harness, str):
            from polar.harnesses.registry import make_harness

            harness = make_harness(harness, **dict(harness_kwargs or {}))
        if not isinstance(harness, MemoryHarness):
            harness = MemoryHarness(harness)
        super().__init__(harness, options, skills=skills, controller="view", **kwargs)
        # bound once: the defaults filled in, an omitted parameter left out (`fill` reads it as any)
        self._bound = [{k: v for k, v in self._skills[o["skill"]].bind(o["args"]).items() if v is not None}
                       for o in self.options]
        self._mask: np.ndarray | None = None
        self.observation_space = gym.spaces.Dict(
            dict(self.observation_space.spaces) | {MASK_KEY: gym.spaces.MultiBinary(len(self.options))})

    def refusal(self, option: dict[str, Any]) -> str | None:
        k = self.options.index(option)
        if self._mask is not None and self._mask[k]:  # the mask of this very state says it applies
            return None
        why = applicable(self._skills[option["skill"]], self._bound[k], self.harness.symbolic_state(), self._obs)
        return None if why is None else f"not applicable over the memory: {why}"

    def available(self) -> np.ndarray:
        state = self.harness.symbolic_state()
        return np.array([applicable(self._skills[o["skill"]], b, state, self._obs) is None
                         for o, b in zip(self.options, self._bound, strict=True)], dtype=np.int8)

    def _observe(self) -> dict[str, Any]:
        # the mask of the state the controller observes, kept until the next option's steps: its
        # `refusal` reads it instead of building the memory's predicates a second time
        self._mask = self.available()
        return super()._observe() | {MASK_KEY: self._mask}

    def run_option(self, k: int) -> Outcome:
        try:
            return super().run_option(k)
        finally:
            self._mask = None  # the option's steps changed the memory
