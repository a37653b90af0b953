"""The agent loop: decide, execute, feed the outcome back, replan — until the episode ends.

task + harness + planner + skill library (+ sandbox) -> one EpisodeRecord holding every
step, decision, outcome and LLM call. Every action reaches the harness through
`RecordingHarness`, so the record is complete whichever executor (skill, primitive,
sandboxed code) produced the action.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polar.episode import DecisionRecord, EpisodeRecord, LLMCallRecord, StepRecord
from polar.errors import BudgetExceeded, PlannerError, PolarError
from polar.harnesses.base import Harness, StepResult
from polar.harnesses.missions import holds
from polar.planners.base import HistoryItem, Planner, PlannerContext, SkillInfo
from polar.planners.decisions import (
    Decision,
    Finish,
    Plan,
    PolicyCode,
    SkillCall,
    SubTask,
    describe_decision,
)

EventHook = Callable[[str, dict[str, Any]], None]


class RecordingHarness(Harness):
    """Delegates to a harness, records every step and enforces the episode's step cap."""

    def __init__(self, inner: Harness, max_steps: int | None, record_steps: bool = True) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.max_steps = max_steps
        self.record_steps = record_steps
        self.steps: list[StepRecord] = []
        self.t = 0
        self.total_reward = 0.0
        self.terminated = self.truncated = False
        self.last_info: dict[str, Any] = {}
        self.last_obs: Any = None
        self.decision_index = -1

    def __getattr__(self, name: str) -> Any:  # e.g. MiniGridHarness.grid_env for skills
        return getattr(self.inner, name)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        if self.done:
            raise PolarError("the episode has ended; no further steps")
        obs, r, term, trunc, info = self.inner.step(action)
        self.t += 1
        self.total_reward += float(r)
        if self.max_steps is not None and self.t >= self.max_steps and not term:
            trunc = True
            info = {**info, "polar_step_limit": self.max_steps}
        self.terminated, self.truncated, self.last_info = bool(term), bool(trunc), info
        self.last_obs = obs
        if self.record_steps:
            a = action.tolist() if hasattr(action, "tolist") else action
            self.steps.append(StepRecord(t=self.t, action=a, reward=float(r), terminated=bool(term),
                                         truncated=bool(trunc), decision=self.decision_index))
        return obs, r, term, trunc, info

    def close(self) -> None:
        self.inner.close()

    def symbolic_state(self):
        return self.inner.symbolic_state()

    def render_text(self, obs: Any) -> str:
        return self.inner.render_text(obs)

    @property
    def observation_space(self):
        return self.inner.observation_space

    @property
    def action_space(self):
        return self.inner.action_space


@dataclass
class AgentConfig:
    max_decisions: int = 50
    max_env_steps: int | None = None  # defaults to the harness's own step limit
    history_len: int = 8  # outcomes shown to the planner
    skills_shown: int = 12
    sandbox_backend: str = "process"
    record_steps: bool = True
    record_context: bool = False  # keep each decision's PlannerContext (training data)


class Agent:
    """Runs episodes of one planner over one skill library."""

    def __init__(self, planner: Planner, library: Any = None, config: AgentConfig | None = None,
                 on_event: EventHook | None = None, agent_name: str | None = None) -> None:
        self.planner = planner
        self.library = library
        self.config = config or AgentConfig()
        self.on_event = on_event or (lambda kind, payload: None)
        self.agent_name = agent_name or f"planner:{getattr(planner, 'name', type(planner).__name__)}"

    # --- context -------------------------------------------------------------------------

    def _skills(self, task: str, harness_id: str) -> list[SkillInfo]:
        if self.library is None:
            return []
        ranked = self.library.search(task, harness=harness_id, limit=self.config.skills_shown)
        return [s.to_info(harness_id) for s in ranked]

    def _context(self, task: str, h: RecordingHarness, obs: Any, history: list[HistoryItem],
                 skills: list[SkillInfo], episode_id: str, feedback: str | None) -> PlannerContext:
        steps_left = None if h.max_steps is None else h.max_steps - h.t
        return PlannerContext(
            task=task, spec=h.spec, observation=h.render_text(obs), symbolic=h.symbolic_state(),
            history=history[-self.config.history_len:], skills=skills, step=h.t,
            steps_left=steps_left, episode_id=episode_id, feedback=feedback,
        )

    # --- execution -----------------------------------------------------------------------

    def _run_skill(self, call: SkillCall, h: RecordingHarness, obs: Any) -> tuple[dict[str, Any], Any, str | None]:
        """Returns (outcome as JSON, new obs, failure cause or None)."""
        from polar.skills.runner import run_skill

        if self.library is None:
            raise PlannerError(f"skill call {call.skill!r} but no skill library is loaded")
        skill = self.library.get(call.skill)
        budget = skill.step_budget
        if h.max_steps is not None:
            budget = max(1, min(budget, h.max_steps - h.t))
        result = run_skill(skill, h, call.args, budget=budget, obs=obs)
        out = result.outcome.model_dump(mode="json")
        cause = None if result.outcome.success else "skill-failure"
        if result.info.get("harness_error"):
            cause = "harness-error"
        return out, result.obs, cause

    def _run_code(self, code: PolicyCode, h: RecordingHarness, obs: Any) -> tuple[dict[str, Any], Any, str | None]:
        """Run policy code in the sandbox from the current state; returns (outcome, obs, cause)."""
        from polar.sandboxes.policy_runner import run_policy

        cap = code.max_steps or (h.max_steps - h.t if h.max_steps else 500)
        res = run_policy(code.source, h, entrypoint=code.entrypoint, max_steps=cap,
                         backend=self.config.sandbox_backend, obs=obs)
        out = {**res.to_dict(), "episode_return": res.total_return, "reason": res.feedback(),
               "success": res.error_type is None and res.success is not False}
        cause = "sandbox-error" if res.error_type else (None if out["success"] else "skill-failure")
        return out, h.last_obs if res.steps else obs, cause

    def _calls(self) -> list[LLMCallRecord]:
        """The LLM calls of the planner's last decide(), as episode-level records."""
        return [LLMCallRecord.model_validate(c.model_dump() if hasattr(c, "model_dump") else c)
                for c in getattr(self.planner, "last_calls", None) or []]

    # --- the loop ------------------------------------------------------------------------

    def run(self, task: str, harness: Harness, seed: int | None = None) -> EpisodeRecord:
        cfg = self.config
        t0 = time.perf_counter()
        episode_id = uuid.uuid4().hex[:12]
        cap = cfg.max_env_steps or harness.spec.max_steps
        h = RecordingHarness(harness, cap, cfg.record_steps)
        obs, _info = h.reset(seed=seed)
        self.planner.reset()
        skills = self._skills(task, h.spec.id)
        history: list[HistoryItem] = []
        decisions: list[DecisionRecord] = []
        pending: list[SkillCall | SubTask] = []
        feedback: str | None = None
        cause: str | None = None
        detail: str | None = None
        claimed: bool | None = None
        last_fail: str | None = None  # cause of the latest failed execution
        self.on_event("start", {"episode_id": episode_id, "task": task, "harness": h.spec.id, "seed": seed})

        while not h.done:
            if len(decisions) >= cfg.max_decisions and not pending:
                cause, detail = "budget", f"decision budget ({cfg.max_decisions}) exhausted"
                break
            if not pending:
                ctx = self._context(task, h, obs, history, skills, episode_id, feedback)
                p0 = time.perf_counter()
                try:
                    decision: Decision = self.planner.decide(ctx)
                except (BudgetExceeded, PlannerError) as err:
                    cause = "budget" if isinstance(err, BudgetExceeded) else "planner-parse"
                    detail = str(err)
                    # the calls made before the failure are part of the record too
                    decisions.append(DecisionRecord(
                        index=len(decisions), decision={"kind": "error", "error": detail},
                        planner_s=time.perf_counter() - p0, llm_calls=self._calls()))
                    break
                calls = self._calls()
                rec = DecisionRecord(index=len(decisions), decision=decision.model_dump(mode="json"),
                                     planner_s=time.perf_counter() - p0, llm_calls=calls,
                                     context=ctx.model_dump(mode="json", exclude={"spec"})
                                     if cfg.record_context else None)
                decisions.append(rec)
                self.on_event("decision", {"index": rec.index, "decision": decision})
                if isinstance(decision, Finish):
                    claimed = decision.success
                    if not decision.success:
                        # giving up right after a failed execution is that execution's failure
                        last_failed = bool(history) and not history[-1].success
                        cause = (last_fail or "skill-failure") if last_failed else "planner-gave-up"
                        detail = decision.reason
                    break
                if isinstance(decision, PolicyCode):
                    h.decision_index = rec.index
                    before = h.t
                    out, obs, fail = self._run_code(decision, h, obs)
                    rec.outcomes.append(out)
                    rec.env_steps = h.t - before
                    ok = fail is None
                    history.append(HistoryItem(decision="policy code", success=ok, steps=rec.env_steps,
                                               reward=float(out.get("episode_return", 0.0)),
                                               reason=str(out.get("reason") or out.get("error") or "")))
                    feedback = None if ok else history[-1].reason
                    last_fail = fail or last_fail
                    self.on_event("outcome", {"index": rec.index, "outcome": out})
                    continue
                pending = list(decision.steps) if isinstance(decision, Plan) else [decision]
            step = pending.pop(0)
            rec = decisions[-1]
            if isinstance(step, SubTask):
                # refine a sub-goal in words: ask the planner with it as the task
                feedback = f"current sub-goal: {step.description} (overall task: {task})"
                pending.clear()
                continue
            h.decision_index = rec.index
            before = h.t
            try:
                out, obs, fail = self._run_skill(step, h, obs)
            except PolarError as err:  # unknown skill, bad arguments: the planner must know
                out, fail = {"success": False, "reason": f"{type(err).__name__}: {err}", "steps": 0,
                             "episode_return": 0.0}, "skill-failure"
            rec.outcomes.append(out)
            rec.env_steps += h.t - before
            history.append(HistoryItem(decision=describe_decision(step), success=fail is None,
                                       steps=int(out.get("steps", 0)),
                                       reward=float(out.get("episode_return", 0.0)),
                                       reason=str(out.get("reason", ""))))
            self.on_event("outcome", {"index": rec.index, "call": describe_decision(step), "outcome": out})
            if fail is not None:
                last_fail = fail
                pending.clear()  # replan from the new state with the failure as feedback
                feedback = f"{describe_decision(step)} failed: {out.get('reason')}"
                if fail == "harness-error":
                    cause, detail = fail, str(h.last_info.get("harness_error"))
            else:
                feedback = None

        success, source = self._judge(h, task, claimed)
        if success:
            cause = detail = None
        elif cause is None:
            if h.last_info.get("harness_error"):
                cause, detail = "harness-error", str(h.last_info["harness_error"])
            elif h.truncated:
                cause, detail = "step-limit", f"episode truncated after {h.t} steps"
            elif h.terminated:
                cause, detail = "task-failed", "episode terminated without success"
            else:
                cause, detail = "planner-gave-up", "the planner finished without reaching the goal"
        llm = [c for d in decisions for c in d.llm_calls]
        record = EpisodeRecord(
            episode_id=episode_id, agent=self.agent_name, harness_id=h.spec.id, task=task, seed=seed,
            success=success, episode_return=h.total_reward, env_steps=h.t, terminated=h.terminated,
            truncated=h.truncated, failure_cause=cause, failure_detail=detail, decisions=decisions,
            steps=h.steps, llm_calls=sum(not c.cached for c in llm),
            prompt_tokens=sum(c.prompt_tokens for c in llm),
            completion_tokens=sum(c.completion_tokens for c in llm),
            cost_usd=sum(c.cost_usd for c in llm), wall_s=time.perf_counter() - t0,
            extra={"success_source": source} | (
                {"harness_spec": h.spec.model_dump(mode="json")} if cfg.record_context else {}),
        )
        self.on_event("end", {"record": record})
        return record

    @staticmethod
    def _judge(h: RecordingHarness, task: str, claimed: bool | None) -> tuple[bool, str]:
        """Success as measured by the harness where it reports it; else the goal predicates;
        else (a harness with neither) the planner's own claim, marked as such."""
        if h.spec.reports_success and h.done:
            return bool(h.last_info.get("success", False)), "harness"
        state = h.symbolic_state()
        if state is not None and state.goal:
            return all(holds(g, state.predicates) for g in state.goal), "goal-predicates"
        if h.spec.reports_success:
            return False, "harness"
        return bool(claimed), "planner-claim"


def run_episode(task: str, harness: Harness, planner: Planner, library: Any = None,
                seed: int | None = None, config: AgentConfig | None = None,
                on_event: EventHook | None = None) -> EpisodeRecord:
    return Agent(planner, library, config, on_event).run(task, harness, seed=seed)
