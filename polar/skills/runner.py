"""Run one skill in a harness until its termination holds, its step budget ends or the
episode ends. Never hangs: the loop is bounded by the step budget whatever the policy does.

Hooks (manifest fields holding a `polar.` import path):

- features (policy skills): `fn(obs, args, harness=harness, **features.kwargs) -> policy
  observation` (the harness lets a skill read more than the observation, e.g. MiniGrid's
  full grid via `harness.grid_env`); without a hook the policy sees the raw observation.
  The affordance is `policy.value(features(start state))`.
- termination check (optional, ANDed with the termination predicates):
  `check(state, args, obs, info) -> bool`, `state` = `harness.symbolic_state()`.

Hooks receive `args` with unset optional parameters left out (so `args.get("color")` is
None), while predicate templates see them as `any`. On a harness failure the outcome's
reason is `harness error: ...` and the returned info holds `harness_error` (the same text).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

from polar.harnesses.base import Harness
from polar.predicates import ANY, achieved, fill, holds
from polar.skills.model import Measurement, Skill, SkillError, SkillOutcome, resolve_import


class SkillResult(NamedTuple):
    outcome: SkillOutcome
    obs: Any  # the last observation (the start one when no step was taken)
    info: dict[str, Any]


def run_skill(
    skill: Skill,
    harness: Harness,
    args: dict[str, Any] | None = None,
    budget: int | None = None,
    obs: Any = None,
    deterministic: bool | None = None,
) -> SkillResult:
    """Run `skill` from the harness's current state. `obs` is the current observation
    (required for policy skills). `budget` replaces the skill's own step budget."""
    bound = skill.bind(args)
    cap = skill.step_budget if budget is None else int(budget)
    if cap < 1:
        raise SkillError(f"{skill.ref}: step budget must be >= 1, got {cap}")
    if not skill.compatible(harness.spec.id):
        raise SkillError(f"{skill.ref} does not accept harness {harness.spec.id!r} (accepts {skill.harnesses})")
    if skill.kind == "primitive":
        return _run_primitive(skill, harness, bound, obs)
    if skill.kind == "code":
        raise SkillError(f"{skill.ref}: code skills are not runnable yet (they need polar.sandboxes)")
    return _run_policy(skill, harness, bound, cap, obs, skill.deterministic if deterministic is None else deterministic)


def _predicates(harness: Harness) -> tuple[Any, list[str]]:
    state = harness.symbolic_state()
    return state, (list(state.predicates) if state is not None else [])


def _run_policy(skill: Skill, harness: Harness, args: dict[str, Any], cap: int, obs: Any,
                deterministic: bool) -> SkillResult:
    from polar.skills.store import load_skill_policy

    if obs is None:
        raise SkillError(f"{skill.ref}: pass the current observation (obs=...) to run a policy skill")
    policy = load_skill_policy(skill)
    features = _features(skill)
    term = skill.termination
    assert term is not None
    check = resolve_import(term.check, f"{skill.ref} termination.check") if term.check else None
    templates = [fill(t, args) for t in term.predicates]
    hook_args = {k: v for k, v in args.items() if v != ANY}

    def done(state: Any, preds: list[str], o: Any, info: dict[str, Any]) -> bool:
        results = [holds(t, preds) for t in templates]
        ok = (all(results) if term.mode == "all" else any(results)) if results else True
        if check is not None:
            ok = ok and bool(check(state, hook_args, o, info))
        return ok

    t0 = time.perf_counter()
    state, before = _predicates(harness)
    x = features(harness, obs, hook_args)
    affordance = float(policy.value(x))
    info: dict[str, Any] = {}
    steps, ret, terminated, truncated = 0, 0.0, False, False
    preds = before
    if done(state, before, obs, info):
        reason, success = "termination already holds", True
    else:
        reason, success = f"step budget ({cap}) exhausted", False
        while steps < cap:
            try:
                action = _plain_action(policy.act(x, deterministic=deterministic))
                obs, r, terminated, truncated, info = harness.step(action)
            except Exception as err:  # a harness failure ends the skill with its cause
                reason = f"harness error: {type(err).__name__}: {err}"
                info = {"harness_error": reason[len("harness error: "):]}
                break
            steps += 1
            ret += float(r)
            state, preds = _predicates(harness)
            if done(state, preds, obs, info):
                reason, success = "termination holds", True
                break
            if terminated or truncated:
                reason = "episode terminated" if terminated else "episode truncated"
                break
            x = features(harness, obs, hook_args)
    outcome = SkillOutcome(
        skill=skill.ref, args=args, success=success, steps=steps, episode_return=ret, reason=reason,
        predicates_before=before, predicates_after=preds, affordance=affordance,
        terminated=bool(terminated), truncated=bool(truncated), wall_s=time.perf_counter() - t0,
    )
    return SkillResult(outcome, obs, info)


def _run_primitive(skill: Skill, harness: Harness, args: dict[str, Any], obs: Any) -> SkillResult:
    """One harness action; success means every effect was achieved by it: a positive effect
    matches a predicate that did not hold before, a negated one matched before and not after."""
    meanings = harness.spec.action_meanings or []
    if skill.action not in meanings:
        raise SkillError(f"{skill.ref}: harness {harness.spec.id!r} has no action {skill.action!r} "
                         f"(actions: {meanings})")
    t0 = time.perf_counter()
    _, before = _predicates(harness)
    info: dict[str, Any] = {}
    terminated = truncated = False
    ret = 0.0
    try:
        obs, r, terminated, truncated, info = harness.step(meanings.index(skill.action))
        ret = float(r)
    except Exception as err:
        info = {"harness_error": f"{type(err).__name__}: {err}"}
        outcome = SkillOutcome(
            skill=skill.ref, args=args, success=False, steps=0, episode_return=0.0,
            reason=f"harness error: {type(err).__name__}: {err}", predicates_before=before,
            predicates_after=before, wall_s=time.perf_counter() - t0)
        return SkillResult(outcome, obs, info)
    _, after = _predicates(harness)
    missed = [e for e in (fill(t, args) for t in skill.effects) if not achieved(e, before, after)]
    if missed:
        reason = f"effect {' and '.join(missed)} not achieved"
    elif skill.effects:
        reason = "effects achieved"
    else:
        reason = "action taken"
    if terminated or truncated:
        reason += "; episode " + ("terminated" if terminated else "truncated")
    outcome = SkillOutcome(
        skill=skill.ref, args=args, success=not missed, steps=1, episode_return=ret, reason=reason,
        predicates_before=before, predicates_after=after, terminated=bool(terminated),
        truncated=bool(truncated), wall_s=time.perf_counter() - t0,
    )
    return SkillResult(outcome, obs, info)


def _features(skill: Skill) -> Any:
    if skill.features is None:
        return lambda harness, obs, args: obs
    fn = resolve_import(skill.features.fn, f"{skill.ref} features.fn")
    kwargs = skill.features.kwargs
    return lambda harness, obs, args: fn(obs, args, harness=harness, **kwargs)


def _plain_action(a: Any) -> Any:
    """Numpy scalars / 0-d arrays / tensors -> Python numbers, so any harness accepts them."""
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    if isinstance(a, np.ndarray) and a.ndim == 0:
        return a.item()
    if isinstance(a, np.generic):
        return a.item()
    return a


class EvalReport(NamedTuple):
    measurement: Measurement | None  # None when no episode could run the skill
    outcomes: list[SkillOutcome]
    skipped: dict[str, int]  # why episodes did not run the skill: "setup failed", ...


def evaluate_skill(
    skill: Skill,
    harness_id: str,
    episodes: int,
    args: dict[str, Any] | None = None,
    seed: int = 0,
    budget: int | None = None,
    setup: list[tuple[Skill, dict[str, Any]]] | None = None,
    harness_kwargs: dict[str, Any] | None = None,
    progress: Any = None,
) -> EvalReport:
    """Run `skill` from `episodes` start states (seeds seed..seed+episodes-1) of a harness.

    Each episode resets the harness, runs the `setup` skill calls (e.g. goto a key before
    `pickup`), then runs the skill when its preconditions hold. The success rate rests on
    the episodes that ran the skill; the others are counted in `skipped` by cause."""
    from polar.harnesses.registry import make_harness

    bound = skill.bind(args)
    outcomes: list[SkillOutcome] = []
    skipped: dict[str, int] = {}
    harness = make_harness(harness_id, **(harness_kwargs or {}))
    try:
        for i in range(episodes):
            obs, _ = harness.reset(seed=seed + i)
            ok = True
            for s, a in setup or []:
                res = run_skill(s, harness, a, obs=obs)
                obs = res.obs
                if not res.outcome.success or res.outcome.terminated or res.outcome.truncated:
                    ok = False
                    break
            if not ok:
                skipped["setup failed"] = skipped.get("setup failed", 0) + 1
            elif not _preconditions_hold(skill, harness, bound):
                skipped["preconditions unmet"] = skipped.get("preconditions unmet", 0) + 1
            else:
                outcomes.append(run_skill(skill, harness, args, budget=budget, obs=obs).outcome)
            if progress is not None:
                progress(i + 1, outcomes)
    finally:
        harness.close()
    n, k = len(outcomes), sum(o.success for o in outcomes)
    m = (Measurement.from_counts(k, n, harness=harness_id, args=args or {}, seed=seed) if n else None)
    return EvalReport(m, outcomes, skipped)


def _preconditions_hold(skill: Skill, harness: Harness, args: dict[str, Any]) -> bool:
    if not skill.preconditions:
        return True
    _, preds = _predicates(harness)
    return all(holds(fill(t, args), preds) for t in skill.preconditions)
