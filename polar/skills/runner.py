"""Run one skill in a harness until its termination holds, its step budget ends or the
episode ends. Never hangs: the loop is bounded by the step budget whatever the policy does.

Hooks (manifest fields holding an import path, see `polar.skills.model.resolve_hook`):

- features (policy skills): `fn(obs, args, harness=harness, **features.kwargs) -> policy
  observation`; a hook that needs privileged state asks the harness for a declared
  capability (`harness.capability("grid")` on MiniGrid). Without a hook the policy sees the
  raw observation. The affordance is `policy.value(features(start state))`.
- Python skills (kind `python`): `policy.loader` names `act(features, args, **policy.config)
  -> action` in the library's hooks; it runs in-process like every hook (the hooks are the
  library's own, allow-listed files, checked at registration), with no affordance.
- termination check (optional, ANDed with the termination predicates):
  `check(state, args, obs, info) -> bool`, `state` = `harness.symbolic_state()`.

Interrupts (`interrupt=[...]`, from the agent: a planner profile's `interrupt` option): atoms
over the harness's predicates that stop a policy skill's call as soon as one of them *becomes*
true (it did not hold at the previous step), so the planner can answer what it sees (a
threat in view, health low) instead of waiting out the call. The call fails with cause
`interrupted`. An atom a skill's effects name (fight_zombie's `not near(zombie)`) never
interrupts that skill: dealing with it is the call's purpose.

Hooks receive `args` with unset optional parameters left out (so `args.get("color")` is
None), while predicate templates see them as `any`. Every run returns an `Outcome`: a failing
harness sets its `harness_error`; a policy or hook that raises (a torch policy fed the wrong
observation shape, a bug in a hook) is an ordinary failed outcome with cause `skill-error`
and the exception's type and message, so the episode goes on and its record is written.
A skill whose spaces do not fit the harness (`Skill.spaces_mismatch`) is refused before any
step (`SkillSpaceMismatch`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from polar.episode import INTERRUPTED, FailureCause, Outcome
from polar.errors import PolarError
from polar.harnesses.base import Harness
from polar.harnesses.rollout import harness_action, rollout
from polar.predicates import ANY, achieved, fill, holds, matching, parse
from polar.skills.model import Measurement, Skill, SkillError, SkillSpaceMismatch, resolve_hook

SKILL_ERROR_CHARS = 300  # of an exception's message in a skill-error outcome's reason


class SkillResult(NamedTuple):
    outcome: Outcome
    obs: Any  # the last observation (the start one when no step was taken)


def run_skill(
    skill: Skill,
    harness: Harness,
    args: dict[str, Any] | None = None,
    budget: int | None = None,
    obs: Any = None,
    deterministic: bool | None = None,
    interrupt: Sequence[str] = (),
) -> SkillResult:
    """Run `skill` from the harness's current state. `obs` is the current observation
    (required for policy skills). `budget` replaces the skill's own step budget. `interrupt`:
    atoms that end a policy skill's call when one becomes true (module docstring)."""
    bound = skill.bind(args)
    cap = skill.step_budget if budget is None else int(budget)
    if cap < 1:
        raise SkillError(f"{skill.ref}: step budget must be >= 1, got {cap}")
    if not skill.compatible(harness.spec.id):
        raise SkillError(f"{skill.ref} does not accept harness {harness.spec.id!r} (accepts {skill.harnesses})")
    if (why := skill.spaces_mismatch(harness.spec)) is not None:
        raise SkillSpaceMismatch(f"{skill.ref} cannot run on {harness.spec.id!r}: {why}")
    if skill.kind == "primitive":
        return _run_primitive(skill, harness, bound, obs)
    return _run_policy(skill, harness, bound, cap, obs, skill.deterministic if deterministic is None else deterministic,
                       interrupts(skill, bound, interrupt))


def interrupts(skill: Skill, args: dict[str, Any], atoms: Sequence[str]) -> list[str]:
    """The interrupt atoms that apply to a call of `skill`: those its effects do not name
    (positively or negated), as a call that deals with a threat must not be stopped by it."""
    named = {parse(fill(e, args)).positive for e in skill.effects}
    return [a for a in atoms if parse(a).positive not in named]


def _predicates(harness: Harness) -> tuple[Any, list[str]]:
    state = harness.symbolic_state()
    return state, (list(state.predicates) if state is not None else [])


def _actor(skill: Skill, deterministic: bool) -> tuple[Any, Any, Any]:
    """(act(features, args) -> action, value(features) -> float or None, the action space a
    stuck deterministic policy draws from, or None) of a policy skill (its network) or a
    Python skill (its hook function: no value estimate, never overridden)."""
    assert skill.policy is not None
    if skill.kind == "python":
        fn = resolve_hook(skill.policy.loader, f"{skill.ref} policy.loader", skill.library_root)
        config = skill.policy.config
        return (lambda x, a: fn(x, a, **config)), (lambda x: None), None
    from polar.skills.store import load_skill_policy

    policy = load_skill_policy(skill)
    policy.reset()  # a skill call is an episode of its policy
    return ((lambda x, a: policy.act(x, deterministic=deterministic)), (lambda x: float(policy.value(x))),
            policy.action_space if deterministic else None)


def skill_error_reason(err: BaseException) -> str:
    """`skill-error: <type>: <message>`, the message cut at SKILL_ERROR_CHARS."""
    text = str(err)
    if len(text) > SKILL_ERROR_CHARS:
        text = text[:SKILL_ERROR_CHARS] + f"... ({len(text)} characters)"
    return f"skill-error: {type(err).__name__}: {text}"


def termination_holds(mode: str, templates: Sequence[str], preds: Any) -> bool:
    """Whether a termination's filled predicates hold over `preds`: all or any of them by its
    `mode`; none declared holds (the `check` hook, where there is one, is ANDed by the caller)."""
    results = [holds(t, preds) for t in templates]
    return (all(results) if mode == "all" else any(results)) if results else True


def _run_policy(skill: Skill, harness: Harness, args: dict[str, Any], cap: int, obs: Any,
                deterministic: bool, interrupt: Sequence[str] = ()) -> SkillResult:
    if obs is None:
        raise SkillError(f"{skill.ref}: pass the current observation (obs=...) to run a {skill.kind} skill")
    term = skill.termination
    assert term is not None
    templates = [fill(t, args) for t in term.predicates]
    hook_args = {k: v for k, v in args.items() if v != ANY}
    t0 = time.perf_counter()
    start = _predicates(harness)
    before = preds = start[1]
    unread = [start]  # the first test reads the start state instead of computing it again
    base = {"kind": "skill", "skill": skill.ref, "args": args, "predicates_before": before}
    try:
        policy_act, value, loop_space = _actor(skill, deterministic)
        features = _features(skill)
        check = resolve_hook(term.check, f"{skill.ref} termination.check", skill.library_root) if term.check else None
        # the policy's first read of this harness's observation: where a wrong shape raises
        affordance = value(features(harness, obs, hook_args))
    except PolarError:
        raise  # a missing or corrupt skill file: the library's error, as before
    except Exception as err:  # noqa: BLE001 - whatever the policy or a hook raised is the skill's error
        return SkillResult(_outcome(**base, success=False, reason=skill_error_reason(err), error=err,
                                    predicates_after=before, t0=t0), obs)
    check_error: list[Exception] = []
    held = {a for a in interrupt if holds(a, before)}  # interrupts that held at the last check
    raised: list[str] = []  # the interrupt that stopped the call

    def done(o: Any, info: dict[str, Any]) -> bool:
        nonlocal preds, held
        state, preds = unread.pop() if unread else _predicates(harness)
        ok = termination_holds(term.mode, templates, preds)
        if ok and check is not None:
            try:
                ok = bool(check(state, hook_args, o, info))
            except Exception as err:  # noqa: BLE001 - the termination hook's bug: stop, the skill failed
                check_error.append(err)
                return True
        now = {a for a in interrupt if holds(a, preds)}
        new, held = sorted(now - held), now
        if not ok and new:
            raised.extend(new)
            return True
        return ok

    seen: set[bytes] = set()
    rng: list[np.random.Generator] = []

    def act(o: Any) -> Any:
        x = features(harness, o, hook_args)
        # A deterministic policy that meets an observation and input it already acted on is,
        # where the observation is the state (MiniGrid's view seen with goto's map of the
        # grid, a connector game's whole grid), in a loop it will not leave by itself: take a
        # random action instead, from a generator seeded by them, so a run still repeats.
        key = _fingerprint((o, x)) if loop_space is not None else None
        if key is not None and key in seen and (a := _random_action(loop_space, key, rng)) is not None:
            return harness_action(a)
        if key is not None:
            seen.add(key)
        return harness_action(policy_act(x, hook_args))

    r = rollout(harness, act, obs, max_steps=cap, stop=done)
    error = check_error[0] if check_error else r.act_error  # the policy or a hook raised
    if error is not None:
        reason = skill_error_reason(error)
    elif r.stopped and raised:
        reason = f"{INTERRUPTED}: {' and '.join(raised)} became true"
    elif r.stopped:
        reason = "termination already holds" if r.steps == 0 else "termination holds"
    elif r.harness_error is not None:
        reason = f"harness error: {r.harness_error}"
    elif r.ended:
        reason = "episode terminated" if r.terminated else "episode truncated"
    else:
        reason = f"step budget ({cap}) exhausted"
    outcome = _outcome(**base, success=r.stopped and not raised and error is None, reason=reason, steps=r.steps,
                       reward=r.reward, harness_error=r.harness_error, error=error, interrupted=bool(raised),
                       terminated=r.terminated,
                       truncated=r.truncated, predicates_after=preds, affordance=affordance, t0=t0)
    return SkillResult(outcome, r.obs)


def _run_primitive(skill: Skill, harness: Harness, args: dict[str, Any], obs: Any) -> SkillResult:
    """One harness action; success means every effect holds after it (a negated one: no
    predicate it matches appeared) and at least one was achieved by it (a positive effect
    matches a predicate that did not hold before, a negated one matched before and not after):
    an effect such as `not in_way(ball,red)` may already hold, but an action that changed none
    of its effects did nothing."""
    meanings = harness.spec.action_meanings or []
    if skill.action not in meanings:
        raise SkillError(f"{skill.ref}: harness {harness.spec.id!r} has no action {skill.action!r} "
                         f"(actions: {meanings})")
    t0 = time.perf_counter()
    _, before = _predicates(harness)
    base = {"kind": "primitive", "skill": skill.ref, "args": args, "predicates_before": before}
    r = rollout(harness, lambda _o: meanings.index(skill.action), obs, max_steps=1)
    if r.harness_error is not None and r.steps == 0:
        return SkillResult(_outcome(**base, success=False, reason=f"harness error: {r.harness_error}",
                                    harness_error=r.harness_error, predicates_after=before, t0=t0), r.obs)
    _, after = _predicates(harness)
    effects = [fill(t, args) for t in skill.effects]
    missed = [e for e in effects if _violated(e, before, after)]
    changed = not effects or any(achieved(e, before, after) for e in effects)
    if missed:
        reason = f"effect {' and '.join(missed)} not achieved"
    elif not changed:
        reason = f"effect {' and '.join(effects)} not achieved (nothing changed)"
    elif effects:
        reason = "effects achieved"
    else:
        reason = "action taken"
    if r.ended:
        reason += "; episode " + ("terminated" if r.terminated else "truncated")
    outcome = _outcome(**base, success=not missed and changed and r.harness_error is None, reason=reason, steps=r.steps,
                       reward=r.reward, harness_error=r.harness_error, terminated=r.terminated,
                       truncated=r.truncated, predicates_after=after, t0=t0)
    return SkillResult(outcome, r.obs)


def _fingerprint(x: Any) -> bytes | None:
    """A digest of arrays, numbers and strings (in dicts, lists, tuples); None for anything else."""
    h = hashlib.blake2b(digest_size=16)
    todo = [x]
    while todo:
        part = todo.pop()
        if isinstance(part, dict):
            todo += [part[k] for k in sorted(part)]
        elif isinstance(part, list | tuple):
            todo += list(part)
        elif isinstance(part, np.ndarray | np.generic):
            h.update(str(part.dtype).encode() + str(np.shape(part)).encode() + np.ascontiguousarray(part).tobytes())
        elif isinstance(part, str | int | float | bool):
            h.update(repr(part).encode())
        else:
            return None
    return h.digest()


def _random_action(space: Any, key: bytes, rng: list[np.random.Generator]) -> Any:
    """A uniform action of a Discrete or Box space (None for other spaces)."""
    if not rng:
        rng.append(np.random.default_rng(int.from_bytes(key[:8], "little")))
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start + rng[0].integers(space.n))
    if isinstance(space, gym.spaces.Box) and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
        return rng[0].uniform(space.low, space.high).astype(space.dtype)
    return None


def _violated(effect: str, before: list[str], after: list[str]) -> bool:
    """A positive effect that does not hold after the action, or a negated one that the action
    made false (`not in_way(door,blue,any,any)`: no blue door got in the way; another one may
    still be)."""
    atom = parse(effect)
    if atom.negated:
        return bool(matching(atom.positive, after) - set(before))
    return not holds(effect, after)


def _outcome(*, success: bool, t0: float, harness_error: str | None = None, error: BaseException | None = None,
             interrupted: bool = False, **fields: Any) -> Outcome:
    """`error`: what the skill's policy or a hook raised (cause `skill-error`)."""
    if success:
        cause = None
    elif error is not None:
        cause = FailureCause.SKILL_ERROR
    elif interrupted and harness_error is None:
        cause = FailureCause.INTERRUPTED
    else:
        cause = FailureCause.HARNESS_ERROR if harness_error is not None else FailureCause.SKILL_FAILURE
    return Outcome(success=success, cause=cause, harness_error=harness_error,
                   error_type=type(error).__name__ if error is not None else None,
                   wall_s=time.perf_counter() - t0, **fields)


def _features(skill: Skill) -> Any:
    if skill.features is None:
        return lambda harness, obs, args: obs
    fn = resolve_hook(skill.features.fn, f"{skill.ref} features.fn", skill.library_root)
    kwargs = skill.features.kwargs
    return lambda harness, obs, args: fn(obs, args, harness=harness, **kwargs)


class EvalReport(NamedTuple):
    measurement: Measurement | None  # None when no episode could run the skill
    outcomes: list[Outcome]
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
    outcomes: list[Outcome] = []
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
