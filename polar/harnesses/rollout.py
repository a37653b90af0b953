"""The one episode loop, and the one rule that says whether an episode succeeded.

`rollout` steps a harness with a per-step policy until the episode ends, a stop test holds
or a step cap is reached. Evals (random and pure-RL agents), skills, sandboxed policy code
and RL evaluation all run through it, so a step cap, a harness failure and the end of an
episode mean the same everywhere. `judge` says whether an episode succeeded: where the
environment reports success (`info["success"]` / `is_success`; MiniGrid's terminal positive
reward), it decides; only where it reports nothing, the spec's success rule, then the goal
predicates; where none applies, success is unknown (None), never guessed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from polar.episode import EpisodeRecord, FailureCause, StepRecord, jsonable
from polar.harnesses.base import Harness, HarnessSpec, SymbolicState
from polar.predicates import holds

HARNESS_ERROR_CHARS = 2000  # room for the game's traceback (polar.harnesses.connector)


@dataclass
class Rollout:
    """What a rollout did. `obs` and `info` are the last ones (the start ones if no step)."""

    obs: Any
    info: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    stopped: bool = False  # the stop test held
    harness_error: str | None = None  # the harness raised, or reported `info["harness_error"]`
    act_error: Exception | None = None  # the policy raised; what that means is the caller's call

    def raise_act_error(self) -> None:
        """For callers whose policy must not fail: its exception, re-raised."""
        if self.act_error is not None:
            raise self.act_error

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated


def harness_action(a: Any) -> Any:
    """Tensors, numpy scalars and 0-d arrays -> Python numbers, so any harness accepts them."""
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    if isinstance(a, (np.ndarray, np.generic)) and np.ndim(a) == 0:
        return a.item()
    return a


def rollout(
    harness: Harness,
    act: Callable[[Any], Any],
    obs: Any,
    *,
    max_steps: int | None,
    stop: Callable[[Any, dict[str, Any]], bool] | None = None,
    on_step: Callable[[Any, float, bool, bool], None] | None = None,
) -> Rollout:
    """Step `harness` with `act(obs)` from `obs` until the episode ends, `stop(obs, info)` holds
    (tested before the first step and after each) or `max_steps` steps were taken.

    A failure of the harness ends the rollout with `harness_error` set, an exception raised
    by `act` with `act_error` set (a policy bug is not a harness failure); neither raises."""
    r = Rollout(obs=obs)
    if stop is not None and stop(obs, r.info):
        r.stopped = True
        return r
    while max_steps is None or r.steps < max_steps:
        try:
            action = act(r.obs)
        except Exception as err:
            r.act_error = err
            break
        try:
            obs, reward, terminated, truncated, info = harness.step(action)
        except Exception as err:  # a crashed game or simulator: the harness's failure
            r.harness_error = f"{type(err).__name__}: {err}"[:HARNESS_ERROR_CHARS]
            break
        r.steps += 1
        r.reward += float(reward)
        r.obs, r.info = obs, info
        r.terminated, r.truncated = bool(terminated), bool(truncated)
        if on_step is not None:
            on_step(action, float(reward), r.terminated, r.truncated)
        if info.get("harness_error"):
            r.harness_error = str(info["harness_error"])
            break
        if stop is not None and stop(obs, info):
            r.stopped = True
            break
        if r.ended:
            break
    return r


class Verdict(NamedTuple):
    success: bool | None  # None: this harness gives no way to tell
    source: str | None  # "harness", "harness-rule", "goal-predicates"; None when unknown


UNKNOWN = Verdict(None, None)
SUCCESS_KEYS = ("success", "is_success")  # Polar's and Gymnasium-Robotics' spelling


def reported_success(info: dict[str, Any]) -> bool | None:
    """What the environment says in `info` (`success`, or gym-style `is_success`, a 0/1
    float there), or None where it says nothing."""
    for key in SUCCESS_KEYS:
        if info.get(key) is not None:
            return bool(info[key])
    return None


def judge(spec: HarnessSpec, *, info: dict[str, Any], terminated: bool, truncated: bool,
          episode_return: float, state: Callable[[], SymbolicState | None] | None = None) -> Verdict:
    """Whether an episode (ended or not) succeeded. The environment decides where it reports
    success: on a harness that declares it (`spec.reports_success`), its last `info` says so
    or, silent, it has not succeeded yet, whatever the goal predicates say (MiniGrid's
    GoToDoor rewards only the `done` action, so facing the door is not yet success); an
    undeclared report at the episode's end counts too. Only where the environment reports
    nothing: the spec's success rule, else the goal predicates of `state()`, else unknown."""
    reported = reported_success(info)
    if spec.reports_success:
        return Verdict(bool(reported), "harness")
    if reported is not None and (terminated or truncated):
        return Verdict(reported, "harness")
    if spec.success is not None:
        return Verdict(spec.success.judge(episode_return=episode_return, terminated=terminated,
                                          truncated=truncated, info=info), "harness-rule")
    sym = state() if state is not None else None
    if sym is not None and sym.goal:
        return Verdict(all(holds(g, sym.predicates) for g in sym.goal), "goal-predicates")
    return UNKNOWN


def judged_by(spec: HarnessSpec, has_goal: bool) -> str:
    """In words, what `judge` reads on this harness (`has_goal`: its symbolic state has goal
    predicates), for `polar harness describe`."""
    if spec.reports_success:
        done = (f"; it rewards success only after the {spec.done_action!r} action, which a planner's "
                "finish(success=true) takes" if spec.done_action else "")
        return f"the environment (info[\"success\"]); goal predicates never override it{done}"
    if spec.success is not None:
        return f"the spec's success rule: {spec.success.describe()} (unless the environment reports success)"
    if has_goal:
        return "the goal predicates of the symbolic state (unless the environment reports success)"
    return "nothing: success is unknown unless the environment reports it at the end; compare returns"


def unsolved_cause(terminated: bool, truncated: bool, steps: int) -> tuple[FailureCause, str]:
    """The cause of an episode that ended (or stopped) without success."""
    if truncated:
        return FailureCause.STEP_LIMIT, f"episode truncated after {steps} steps"
    return FailureCause.TASK_FAILED, f"episode terminated after {steps} steps without success"


def play_episode(
    harness: Harness,
    act: Callable[[Any], Any],
    *,
    agent: str,
    task: str,
    env_seed: int,
    max_steps: int | None,
    episode_id: str,
    record_steps: bool = False,
) -> EpisodeRecord:
    """One whole episode of a per-step policy (random, pure RL) as an EpisodeRecord. A crash
    inside the harness ends it as `harness-error`; running out of steps is `step-limit`."""
    start = time.perf_counter()
    steps: list[StepRecord] = []

    def record(action: Any, reward: float, terminated: bool, truncated: bool) -> None:
        steps.append(StepRecord(t=len(steps), action=jsonable(action), reward=reward,
                                terminated=terminated, truncated=truncated, decision=0))

    try:
        obs, _ = harness.reset(seed=env_seed)
    except Exception as err:  # a harness that cannot even start its episode
        r = Rollout(obs=None, harness_error=f"{type(err).__name__}: {err}"[:HARNESS_ERROR_CHARS])
    else:
        r = rollout(harness, act, obs, max_steps=max_steps, on_step=record if record_steps else None)
        r.raise_act_error()
    info, truncated = r.info, r.truncated
    if not r.ended and r.harness_error is None:  # cut by max_steps: Polar's cap, not the harness's
        info, truncated = {**info, "polar_step_limit": max_steps}, True
    cause: FailureCause | None = None
    detail: str | None = None
    if r.harness_error is not None:
        success: bool | None = False
        cause, detail = FailureCause.HARNESS_ERROR, r.harness_error
    else:
        success = judge(harness.spec, info=info, terminated=r.terminated, truncated=truncated,
                        episode_return=r.reward, state=harness.symbolic_state).success
        if success is False:
            cause, detail = unsolved_cause(r.terminated, truncated, r.steps)
    return EpisodeRecord(
        episode_id=episode_id, agent=agent, harness_id=harness.spec.id, task=task, seed=env_seed,
        success=success, episode_return=r.reward, env_steps=r.steps, terminated=r.terminated,
        truncated=truncated, failure_cause=cause, failure_detail=detail, steps=steps,
        wall_s=time.perf_counter() - start,
    )
