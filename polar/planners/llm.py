"""LLMPlanner: render the context through templates, ask the model, validate, repair.

A reply that does not parse or validate (against the decision schema, the profile's mode
and the skills on offer) is sent back with the error, up to `repair_rounds` times, before
`decide` raises PlannerError. Nothing invalid is ever returned.
"""

from __future__ import annotations

import ast
import hashlib
import random
from typing import Any

from polar.episode import LLMCallRecord
from polar.errors import NoSkillsError, PlannerError
from polar.llm.budget import Budget, Usage
from polar.llm.cache import ReplayCache
from polar.llm.client import LLMClient
from polar.llm.record import CallRecorder
from polar.planners.base import PlannerContext, SkillInfo, idle_skills
from polar.planners.decisions import Decision, Plan, PolicyCode, SkillCall
from polar.planners.fit import apply_observation_mode, fit_prompt
from polar.planners.parse import ReplyParseError, parse_decision
from polar.planners.profile import LLMProfile, resolve_templates
from polar.planners.schema import coordinate_groups, decision_schema, response_format
from polar.predicates import preconditions_hold

ALLOWED_KINDS: dict[str, list[str]] = {
    "skill": ["skill", "finish"],
    "plan": ["plan", "finish"],
    "code": ["code", "finish"],
    "auto": ["skill", "plan", "code", "finish"],
}

REPAIR_MESSAGE = (
    "Your reply could not be used: {error}\n"
    'Reply again with only one JSON object of the form {{"decision": {{...}}}} that fixes this.'
)


def template_variables(context: PlannerContext, mode: str, history_window: int = 12) -> dict[str, Any]:
    """Everything the default templates read, as plain data (the same for any template)."""
    sym = context.symbolic
    history = context.history[-history_window:] if history_window else []
    return {
        "task": context.task,
        "mode": mode,
        "allowed_kinds": ALLOWED_KINDS[mode],
        "spec_text": context.spec.describe(),
        "observation": context.observation,
        "observation_json": context.observation_json,  # code mode: what act(obs) receives
        "previous_code": context.previous_code,  # code mode: the source that failed last
        "predicates": list(sym.predicates) if sym else [],
        "goal": list(sym.goal) if sym else [],
        "mission": sym.mission if sym else None,
        "history": [h.model_dump() for h in history],
        "skills": [s.model_dump() for s in context.skills],
        "step": context.step,
        "steps_left": context.steps_left,
        "feedback": context.feedback,
        "episode_id": context.episode_id,
        "extra": context.extra,
        "observation_mode": "full",  # see polar.planners.fit.apply_observation_mode
    }


def _check_skill_call(call: SkillCall, skills: list[SkillInfo]) -> None:
    base, _, version = call.skill.partition("@")
    match = [s for s in skills if s.name == base and (not version or str(s.version) == version)]
    if not match:
        names = ", ".join(sorted({s.name for s in skills})) or "none"
        raise ReplyParseError(f"unknown skill {call.skill!r}; available skills: {names}")
    params = match[0].parameters
    for arg, value in call.args.items():
        if arg not in params:
            raise ReplyParseError(f"skill {base!r} has no parameter {arg!r}; its parameters: {', '.join(params) or 'none'}")
        choices = params[arg]
        if isinstance(choices, list) and value not in choices:
            raise ReplyParseError(f"skill {base!r}: {arg}={value!r} is not one of {choices}")
    for group in coordinate_groups(match[0]):
        if 0 < len(set(group) & set(call.args)) < len(group):
            raise ReplyParseError(f"skill {base!r}: give {', '.join(group)} together (one place), or none of them")


def _check_code(code: PolicyCode) -> None:
    try:
        tree = ast.parse(code.source)
    except SyntaxError as err:
        raise ReplyParseError(f"the policy source has a syntax error at line {err.lineno}: {err.msg}") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == code.entrypoint for n in tree.body):
        raise ReplyParseError(f"the policy source does not define the function {code.entrypoint}(obs)")


def forced_skill(context: PlannerContext, epsilon: float, observation: str = "predicates") -> SkillInfo | None:
    """With chance `epsilon`, a skill drawn uniformly from those on offer whose preconditions hold
    (a parameter read as any; in `view` mode, where the state is hidden from the planner, any skill),
    all of them when none does; else None. The draw is seeded by the episode and the decision's
    step."""
    if epsilon <= 0 or not context.skills:
        return None
    rng = random.Random(f"{context.episode_id}:{context.step}:{len(context.history)}")
    if rng.random() >= epsilon:
        return None
    state = None if observation == "view" else context.symbolic  # as the decision schema reads it
    facts = set(state.predicates) if state is not None else None
    pool = [s for s in context.skills
            if facts is None or preconditions_hold(s.preconditions, facts)] or context.skills
    return rng.choice(pool)


class LLMPlanner:
    """A planner backed by one model. `last_calls` holds the calls of the last `decide`
    (also after it raised); `usage` the totals of the current episode."""

    def __init__(self, profile: LLMProfile, client: LLMClient | None = None) -> None:
        self.profile = profile
        self.name = f"llm:{profile.name}"
        self.memory = profile.observation == "memory"  # the agent loop reads the harness through its memory
        self.system_template, self.user_template = resolve_templates(profile)
        self.template_name = f"{self.system_template.name}+{self.user_template.name}"
        self.template_hash = hashlib.sha256(
            (self.system_template.version + self.user_template.version).encode()).hexdigest()[:12]
        if client is None:
            client = LLMClient(
                profile,
                cache=ReplayCache(profile.cache_dir) if profile.cache_dir else None,
                recorder=CallRecorder(profile.record_path) if profile.record_path else None,
                budget=Budget(profile.budgets),
            )
        self.client = client
        self.client.ensure_server()  # a profile's local server starts here when it is not running
        self.last_calls: list[LLMCallRecord] = []
        self.repeat_feedback_after = profile.repeat_feedback_after  # read by the agent loop
        self.interrupt = tuple(profile.interrupt)  # read by the agent loop (polar.skills.runner)
        self.noop_guard = profile.noop_guard  # read by the agent loop (polar.agent.noop)
        # Replay-cache keys of this episode's prompts whose decision failed, and of the last
        # decision's: asked again, such a prompt goes to the model, not to the cache.
        self._failed_prompts: set[str] = set()
        self._last_prompts: list[str] = []

    def response_format(self, context: PlannerContext) -> dict[str, Any] | None:
        """The decision schema for this context (skills as enums) in the engine's form."""
        p = self.profile
        if p.structured_output in ("none", "json_object"):
            return None if p.structured_output == "none" else {"type": "json_object"}
        state = None if p.observation == "view" else context.symbolic
        schema = decision_schema(context.skills, p.mode, state=state, reason=p.schema_reason)
        return response_format(schema, p.structured_output)

    @property
    def usage(self) -> Usage:
        return self.client.budget.used

    def reset(self) -> None:
        self.client.budget.reset()
        self.last_calls = []
        self._failed_prompts, self._last_prompts = set(), []
        self.client.warm_up()  # once: litellm's import and set-up are not a decision's latency

    def messages(self, context: PlannerContext, history: int | None = None) -> list[dict[str, Any]]:
        """The request's messages showing the `history` most recent outcomes (default: the window)."""
        p = self.profile
        variables = template_variables(context, p.mode, p.history_window if history is None else history)
        variables = apply_observation_mode(variables, context.symbolic, p.observation)
        return [
            {"role": "system", "content": self.system_template.render(variables)},
            {"role": "user", "content": self.user_template.render(variables)},
        ]

    def validate(self, text: str, context: PlannerContext) -> Decision:
        """Parse a reply and check it fits this planner's mode and the skills on offer."""
        decision = parse_decision(text)
        allowed = ALLOWED_KINDS[self.profile.mode]
        if decision.kind not in allowed:
            raise ReplyParseError(f"decision kind {decision.kind!r} is not allowed here; use one of {allowed}")
        calls = [decision] if isinstance(decision, SkillCall) else []
        if isinstance(decision, Plan):
            calls = [s for s in decision.steps if isinstance(s, SkillCall)]
        for call in calls:
            _check_skill_call(call, context.skills)
        if isinstance(decision, PolicyCode):
            _check_code(decision)
        return decision

    def decide(self, context: PlannerContext) -> Decision:
        self.last_calls = []
        p = self.profile
        if context.last_failed:
            self._failed_prompts.update(self._last_prompts)
        self._last_prompts = []
        counter = self.client.count_tokens if self.client.tokenizer is not None else None
        fit = fit_prompt(lambda k: self.messages(context, k), len(context.history), p.history_window,
                         counter, p.context_tokens, p.max_tokens, self.template_name)
        offered, extra = context, {}
        if p.noop_exclude and (idle := idle_skills(context.history)):
            kept = [s for s in context.skills if s.name not in idle]
            if kept and len(kept) < len(context.skills):
                offered = context.model_copy(update={"skills": kept})
                extra["excluded_skills"] = sorted(idle)
        forced = forced_skill(offered, p.explore_skills, p.observation)
        if forced is not None:
            extra["forced_skill"] = forced.name
        fmt = self.response_format(offered if forced is None else offered.model_copy(update={"skills": [forced]}))
        messages = fit.messages
        errors: list[str] = []
        for _ in range(1 + self.profile.repair_rounds):
            key = self.client.cache_key_for(messages, fmt)
            replay = key not in self._failed_prompts  # a reply that led to a failure is asked for again
            resp = self.client.complete(
                messages, response_format=fmt,
                check=lambda text: self.validate(text, context),
                template=self.template_name, template_hash=self.template_hash,
                episode_id=context.episode_id, replay=replay,
                record_extra={"prompt_fit": fit.as_record(p.context_tokens)} | extra | (
                    {} if replay else {"replay_skipped": "this prompt's decision failed earlier in the episode"}),
            )
            self._last_prompts.append(key)
            self.last_calls.append(resp.call)
            if resp.valid:
                return resp.parsed
            errors.append(resp.error or "invalid reply")
            messages = [*messages, {"role": "assistant", "content": resp.content},
                        {"role": "user", "content": REPAIR_MESSAGE.format(error=resp.error)}]
        summary = (f"no valid decision after {len(errors)} replies ({self.profile.repair_rounds} repair round(s)); "
                   f"last error: {errors[-1]}")
        if p.mode in ("skill", "plan") and not context.skills:  # nothing it could have called: not a parse failure
            raise NoSkillsError(f"{self.name}: no skill is on offer for harness {context.spec.id} (is the skill "
                                f"library empty or incompatible with it?): {summary}")
        raise PlannerError(f"{self.name}: {summary}")

