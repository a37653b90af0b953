"""One executor per decision kind. Each runs its decision from the current state through the
recording harness and returns what it did as typed `Outcome`s, plus what the planner should
read when it replans.

- a skill call (a trained policy or a primitive action) runs through the skill runner;
- a plan runs its skill calls in order, stopping at the first failure or sub-task (a sub-goal
  in words, which goes back to the planner to refine);
- policy code runs step by step in a sandbox;
- a finish(success=true) takes the harness's done action, where it declares one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from polar.agent.recording import RecordingHarness
from polar.episode import FailureCause, Outcome
from polar.errors import PolarError
from polar.harnesses.rollout import reported_success, rollout
from polar.planners.base import HistoryItem
from polar.planners.decisions import Plan, PolicyCode, SkillCall, SubTask, describe_decision
from polar.sandboxes.policy_runner import run_policy
from polar.sandboxes.profiles import SandboxProfile
from polar.skills.catalog import SkillCatalog
from polar.skills.model import SkillSpaceMismatch
from polar.skills.runner import run_skill, skill_error_reason

OutcomeHook = Callable[[str, Outcome], None]  # (what ran, its outcome): the live trace


@dataclass
class Execution:
    """What executing one decision did."""

    obs: Any
    outcomes: list[Outcome] = field(default_factory=list)
    history: list[HistoryItem] = field(default_factory=list)
    feedback: str | None = None  # for the next decision; None when everything went as asked

    def add(self, what: str, outcome: Outcome, feedback: str | None) -> None:
        self.outcomes.append(outcome)
        # the planner reads the reward rounded (no float noise such as 0.9640000000000001)
        self.history.append(HistoryItem(decision=what, success=outcome.success, steps=outcome.steps,
                                        reward=round(outcome.reward, 4), reason=outcome.reason))
        self.feedback = None if outcome.success else feedback

    @property
    def harness_error(self) -> str | None:
        return next((o.harness_error for o in self.outcomes if o.harness_error), None)

    @property
    def failure(self) -> FailureCause | None:
        """The cause of the last failed outcome."""
        return next((o.cause for o in reversed(self.outcomes) if o.cause is not None), None)


def execute_skill_call(call: SkillCall, h: RecordingHarness, obs: Any, library: SkillCatalog | None,
                       interrupt: Sequence[str] = ()) -> tuple[Outcome, Any]:
    """One skill (policy or primitive) within the episode's remaining steps. An unknown skill
    or bad arguments come back as a failed outcome: the planner must know. So does a skill
    that cannot read this harness or raises (cause `skill-error`): a skill never ends the
    episode by crashing it. `interrupt`: atoms that stop the call when one becomes true
    (the planner's `interrupt` option, polar.skills.runner)."""
    try:
        if library is None:
            raise PolarError(f"skill call {call.skill!r} but no skill library is loaded")
        skill = library.get(call.skill)
        budget = skill.step_budget if h.steps_left is None else max(1, min(skill.step_budget, h.steps_left))
        return run_skill(skill, h, call.args, budget=budget, obs=obs, interrupt=interrupt)
    except SkillSpaceMismatch as err:
        return Outcome(kind="skill", skill=call.skill, args=call.args, success=False, cause=FailureCause.SKILL_ERROR,
                       error_type=type(err).__name__, reason=f"skill-error: {err}"), obs
    except PolarError as err:
        return Outcome(kind="skill", skill=call.skill, args=call.args, success=False,
                       cause=FailureCause.SKILL_FAILURE, reason=f"{type(err).__name__}: {err}"), obs
    except Exception as err:  # noqa: BLE001 - the runner turns a skill's own exceptions into outcomes;
        # this catches what escapes it (a hook's bug outside its calls), so the record is still written
        return Outcome(kind="skill", skill=call.skill, args=call.args, success=False, cause=FailureCause.SKILL_ERROR,
                       error_type=type(err).__name__, reason=skill_error_reason(err)), obs


def execute_plan(steps: list[SkillCall | SubTask], h: RecordingHarness, obs: Any, library: SkillCatalog | None,
                 task: str, on_outcome: OutcomeHook, interrupt: Sequence[str] = ()) -> Execution:
    """Skill calls in order until one fails, the episode ends, or a sub-task needs refining."""
    ex = Execution(obs)
    for step in steps:
        if h.done:
            break
        if isinstance(step, SubTask):
            ex.feedback = f"current sub-goal: {step.description} (overall task: {task})"
            break
        what = describe_decision(step)
        outcome, ex.obs = execute_skill_call(step, h, ex.obs, library, interrupt)
        ex.add(what, outcome, f"{what} failed: {outcome.reason}")
        on_outcome(what, outcome)
        if not outcome.success:
            break  # replan from the new state with the failure as feedback
    return ex


def execute_code(code: PolicyCode, h: RecordingHarness, obs: Any, sandbox: SandboxProfile | None,
                 on_outcome: OutcomeHook) -> Execution:
    """Policy code in the sandbox from the current state, within the remaining steps.
    With no sandbox profile (`sandbox: none`) policy code is refused, and the planner is told."""
    if sandbox is None:
        outcome, new_obs = Outcome(
            kind="code", success=False, cause=FailureCause.SANDBOX_ERROR, error_type="SandboxDisabled",
            reason="policy code is disabled here (sandbox: none); use skills"), obs
    else:
        cap = code.max_steps or (h.steps_left if h.steps_left is not None else 500)
        outcome, new_obs = run_policy(code.source, h, profile=sandbox, entrypoint=code.entrypoint,
                                      max_steps=cap, obs=obs)
    ex = Execution(new_obs)
    ex.add("policy code", outcome, outcome.reason)
    on_outcome("code", outcome)
    return ex


def execute(decision: SkillCall | Plan | PolicyCode, h: RecordingHarness, obs: Any, *, library: SkillCatalog | None,
            task: str, sandbox: SandboxProfile | None, on_outcome: OutcomeHook,
            interrupt: Sequence[str] = ()) -> Execution:
    """The executor of this decision's kind."""
    if isinstance(decision, PolicyCode):
        return execute_code(decision, h, obs, sandbox, on_outcome)
    steps = list(decision.steps) if isinstance(decision, Plan) else [decision]
    return execute_plan(steps, h, obs, library, task, on_outcome, interrupt)


def declare_done(h: RecordingHarness, obs: Any, on_outcome: OutcomeHook) -> Execution | None:
    """A planner's finish(success=true) on a harness whose environment judges success only
    when the agent declares it (`spec.done_action`, MiniGrid GoToDoor's `done`): that action,
    taken once, so the environment, not the claim, decides. None where there is nothing to
    take (no done action, or the episode has ended)."""
    action = h.spec.done_action
    if action is None or h.done:
        return None
    t0, index = time.perf_counter(), (h.spec.action_meanings or []).index(action)
    r = rollout(h, lambda _o: index, obs, max_steps=1)
    success = r.harness_error is None and bool(reported_success(r.info))
    cause = None if success else FailureCause.HARNESS_ERROR if r.harness_error else FailureCause.TASK_FAILED
    said = f"a harness error: {r.harness_error}" if r.harness_error else (
        "the environment confirms success" if success else "the environment does not confirm success")
    outcome = Outcome(kind="primitive", skill=action, success=success, cause=cause, harness_error=r.harness_error,
                      reason=f"declared done ({action!r}): {said}", steps=r.steps, reward=r.reward,
                      terminated=r.terminated, truncated=r.truncated, wall_s=time.perf_counter() - t0)
    ex = Execution(r.obs)
    ex.add(action, outcome, outcome.reason)
    on_outcome(action, outcome)
    return ex
