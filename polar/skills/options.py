"""Options: a harness whose actions are skill calls from the library, as a Gymnasium env.

`OptionEnv` is what an RL controller over skills (hierarchical RL, the options framework)
trains on: action k runs option k (a skill with fixed arguments, e.g. `goto(object=key,
color=yellow)` or `toggle()`) from the current state until the skill's own termination, its
step budget or the end of the episode, and the transition's reward is the harness's reward
summed over the primitive steps the option took. The episode ends when the harness's does,
after `max_options` option calls or after `max_steps` primitive steps (both: truncated).
`option_steps` caps each option's step budget (a goto towards a goal behind a locked door
otherwise walks its whole budget).

What the controller observes (`controller`): `view`, the harness's own observation (MiniGrid:
the 7x7 egocentric view and the direction), or `full`, the harness's full-observation variant
(MiniGrid: the whole grid, `full_grid`); plus `last_option` (the option called last; n = none
yet) and `last_success` (whether it achieved its aim). The skills themselves read what they
read: the shipped `goto` reads the full grid through the harness's `"grid"` capability.

Every primitive step an option takes is counted (`primitive_steps`, and, with `counter=`, in
the process-wide `PRIMITIVE_STEPS[counter]` a trainer hook can read), so a controller is
charged its true env steps, not its decisions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np

from polar.episode import FailureCause, Outcome
from polar.errors import ConfigError, PolarError
from polar.harnesses.base import Harness, HarnessWrapper, StepResult
from polar.harnesses.rollout import judge
from polar.skills.catalog import SkillCatalog
from polar.skills.runner import run_skill
from polar.skills.search_path import open_library

PRIMITIVE_STEPS: dict[str, int] = {}  # counter token -> primitive env steps taken in this process
OBJECT_TYPES = ("key", "ball", "box", "door")
PRIMITIVE_OPTIONS = ("pickup", "drop", "toggle")  # argument-free: they act on what is in front / held


def describe(option: dict[str, Any]) -> str:
    """`goto(object=key, color=yellow)`."""
    args = ", ".join(f"{k}={v}" for k, v in sorted(option.get("args", {}).items()))
    return f"{option['skill']}({args})"


def default_options(harness: Harness, library: SkillCatalog, seeds: Iterable[int]) -> list[dict[str, Any]]:
    """The options for a task: `goto` each (type, colour) of key, ball, box and door found in
    the start states of `seeds` (and `goto(goal)` where a goal exists), then pickup, drop and
    toggle without arguments. Only skills the library holds for this harness are offered."""
    have = {s.name for s in library.list() if s.usable_on(harness.spec)}
    pairs: set[tuple[str, str]] = set()
    goal = False
    for seed in seeds:
        harness.reset(seed=seed)
        state = harness.symbolic_state()
        if state is None:
            raise ConfigError(f"harness {harness.spec.id!r} has no symbolic state: give the options explicitly")
        for o in state.objects:
            if o.type in OBJECT_TYPES and o.color:
                pairs.add((o.type, o.color))
            goal = goal or o.type == "goal"
    options: list[dict[str, Any]] = []
    if "goto" in have:
        options += [{"skill": "goto", "args": {"object": t, "color": c}} for t, c in sorted(pairs)]
        options += [{"skill": "goto", "args": {"object": "goal"}}] if goal else []
    options += [{"skill": p, "args": {}} for p in PRIMITIVE_OPTIONS if p in have]
    if not options:
        raise ConfigError(f"skill library {library.root}: no skill for harness {harness.spec.id!r} to build options from")
    return options


class _Watch(HarnessWrapper):
    """Forwards a harness and keeps what the option env needs: the last info, the end flags,
    the primitive steps and the summed reward of the current episode."""

    def __init__(self, inner: Harness) -> None:
        super().__init__(inner)
        self.reset_counts()

    def reset_counts(self) -> None:
        self.info: dict[str, Any] = {}
        self.terminated = self.truncated = False
        self.steps = 0
        self.total_reward = 0.0

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self.reset_counts()
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        obs, r, term, trunc, info = self.inner.step(action)
        self.steps += 1
        self.total_reward += float(r)
        self.info, self.terminated, self.truncated = info, bool(term), bool(trunc)
        return obs, r, term, trunc, info


class OptionEnv(gym.Env):
    """Discrete(len(options)) actions over a harness; see the module docstring."""

    metadata = {"render_modes": [], "observation_kinds": {"image": "index_grid"}}

    def __init__(self, harness: str | Harness, options: list[dict[str, Any]], skills: str | None = None,
                 harness_kwargs: dict[str, Any] | None = None, controller: str = "view",
                 max_options: int = 64, max_steps: int | None = None, option_steps: int | None = None,
                 counter: str | None = None) -> None:
        if controller not in ("view", "full"):
            raise ConfigError(f"controller: {controller!r} is not one of view, full")
        if not options:
            raise ConfigError("options: the list is empty")
        if isinstance(harness, str):
            from polar.harnesses.registry import make_harness

            kwargs = dict(harness_kwargs or {}) | ({"full_grid": True} if controller == "full" else {})
            harness = make_harness(harness, **kwargs)
        self.harness = _Watch(harness)
        self.skills_root = skills
        self.library: SkillCatalog = open_library(skills)
        self.options = [{"skill": str(o["skill"]), "args": dict(o.get("args", {}))} for o in options]
        self._skills = {o["skill"]: self.library.get(o["skill"]) for o in self.options}
        for o in self.options:  # bad arguments fail now, not mid-training
            self._skills[o["skill"]].bind(o["args"])
        self.max_options = max_options
        limits = [c for c in (harness.spec.max_steps, max_steps) if c is not None]
        self.max_steps = min(limits) if limits else None  # primitive steps per episode
        self.option_steps = option_steps
        self.counter = counter
        self.primitive_steps = 0  # over this env's lifetime
        inner = harness.observation_space
        if not isinstance(inner, gym.spaces.Dict) or "image" not in inner.spaces:
            raise ConfigError(f"harness {harness.spec.id!r}: the option env needs a Dict observation with an "
                              "'image' (a MiniGrid-style harness)")
        n = len(self.options)
        self.observation_space = gym.spaces.Dict({
            "image": inner["image"], "direction": gym.spaces.Discrete(4),
            "last_option": gym.spaces.Discrete(n + 1), "last_success": gym.spaces.Discrete(2),
        })
        self.action_space = gym.spaces.Discrete(n)
        self._obs: Any = None
        self._last = (n, 0)
        self.calls = 0
        self.last_outcome: Outcome | None = None

    def __getstate__(self) -> dict[str, Any]:
        # checkpoints pickle serial vector envs: the library handle is rebuilt on load
        return {k: v for k, v in self.__dict__.items() if k != "library"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.library = open_library(self.skills_root)

    def _observe(self) -> dict[str, Any]:
        o = self._obs
        return {"image": np.asarray(o["image"]), "direction": int(o.get("direction", 0)),
                "last_option": self._last[0], "last_success": self._last[1]}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._obs, info = self.harness.reset(seed=seed, options=options)
        self._last = (len(self.options), 0)
        self.calls = 0
        self.last_outcome = None
        return self._observe(), info

    def run_option(self, k: int) -> Outcome:
        """Option k from the current state, within the episode's remaining steps."""
        opt = self.options[k]
        skill = self._skills[opt["skill"]]
        missing = self.refusal(opt)
        if missing:
            return Outcome(kind="skill", skill=skill.ref, args=opt["args"], success=False,
                           cause=FailureCause.SKILL_FAILURE, reason=missing)
        caps = [c for c in (skill.step_budget, self.option_steps) if c is not None]
        if self.max_steps is not None:
            caps.append(max(1, self.max_steps - self.harness.steps))
        budget = min(caps)
        t0 = time.perf_counter()
        try:
            outcome, self._obs = run_skill(skill, self.harness, opt["args"], budget=budget, obs=self._obs)
        except PolarError as err:
            outcome = Outcome(kind="skill", skill=skill.ref, args=opt["args"], success=False,
                              cause=FailureCause.SKILL_FAILURE, reason=f"{type(err).__name__}: {err}",
                              wall_s=time.perf_counter() - t0)
        return outcome

    def refusal(self, option: dict[str, Any]) -> str | None:
        """Why option `option` fails at once, without an env step (None: it runs). A subclass
        over another view of the harness (the agent's memory) says what applies there."""
        return self._absent_object(option["args"])

    def _absent_object(self, args: dict[str, Any]) -> str | None:
        """An option naming an object the grid does not hold fails at once, without steps."""
        obj = args.get("object")
        if obj is None or obj == "goal":
            return None
        state = self.harness.symbolic_state()
        if state is None:
            return None
        color = args.get("color")
        if any(o.type == obj and (color is None or o.color == color) for o in state.objects):
            return None
        return f"no {color + ' ' if color else ''}{obj} in the grid"

    def step(self, action: Any) -> StepResult:
        k = int(action)
        before = self.harness.steps
        outcome = self.run_option(k)
        taken = self.harness.steps - before
        self.primitive_steps += taken
        if self.counter is not None:
            PRIMITIVE_STEPS[self.counter] = PRIMITIVE_STEPS.get(self.counter, 0) + taken
        self.calls += 1
        self.last_outcome = outcome
        self._last = (k, int(outcome.success))
        terminated = self.harness.terminated
        capped = self.max_steps is not None and self.harness.steps >= self.max_steps
        truncated = self.harness.truncated or (not terminated and (self.calls >= self.max_options or capped))
        info: dict[str, Any] = {"option": describe(self.options[k]), "primitive_steps": taken}
        if terminated or truncated:
            end_info = dict(self.harness.info)
            if not (self.harness.terminated or self.harness.truncated):  # cut here, not by the harness
                end_info["polar_step_limit"] = self.max_steps
            verdict = judge(self.harness.spec, info=end_info, terminated=terminated, truncated=truncated,
                            episode_return=self.harness.total_reward, state=self.harness.symbolic_state).success
            if verdict is not None:  # None: this harness gives no way to tell
                info["success"] = verdict
        return self._observe(), float(outcome.reward), terminated, truncated, info

    def close(self) -> None:
        self.harness.inner.close()
