"""The agent loop: decide, execute, judge, replan, until the episode ends.

task + harness + planner + skill library (+ sandbox) -> one EpisodeRecord holding every step,
decision, outcome and LLM call. Every action reaches the harness through `RecordingHarness`,
so the record is complete whichever executor produced the action.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from polar.agent.context import ContextBuilder
from polar.agent.events import (
    DecisionFailed,
    DecisionMade,
    EpisodeEnded,
    EpisodeStarted,
    EventHook,
    ExecutionFinished,
)
from polar.agent.executors import declare_done, execute
from polar.agent.memory import MemoryHarness
from polar.agent.noop import is_noop, mark_noops, noop_feedback
from polar.agent.recording import RecordingHarness
from polar.episode import DecisionRecord, EpisodeRecord, FailureCause, LLMCallRecord, Outcome
from polar.errors import BudgetExceeded, LLMError, NoSkillsError, PlannerError
from polar.harnesses.base import Harness
from polar.harnesses.rollout import Verdict, judge, unsolved_cause
from polar.planners.base import HistoryItem, Planner, PlannerContext
from polar.planners.decisions import Decision, Finish, PolicyCode, describe_decision
from polar.sandboxes.profiles import SandboxProfile
from polar.skills.catalog import SkillCatalog

Failure = tuple[FailureCause, str | None]
# After this many identical decisions in a row that failed, the planner is told so (planners
# with a profile set their own: `repeat_feedback_after`).
REPEAT_FEEDBACK_AFTER = 3


@dataclass
class AgentSettings:
    max_decisions: int = 50
    max_env_steps: int | None = None  # defaults to the harness's own step limit
    history_len: int = 8  # outcomes shown to the planner
    skills_shown: int = 12
    # The sandbox profile policy code runs under (polar.sandboxes.profiles.resolve_sandbox);
    # None refuses policy code (`sandbox: none`).
    sandbox: SandboxProfile | None = field(default_factory=SandboxProfile)
    record_steps: bool = True
    record_context: bool = False  # keep each decision's PlannerContext (training data)


class Agent:
    """Runs episodes of one planner over one skill library."""

    def __init__(self, planner: Planner, library: SkillCatalog | None = None, settings: AgentSettings | None = None,
                 on_event: EventHook | None = None, agent_name: str | None = None) -> None:
        self.planner = planner
        self.library = library
        self.settings = settings or AgentSettings()
        self.on_event: EventHook = on_event or (lambda event: None)
        self.agent_name = agent_name or f"planner:{getattr(planner, 'name', type(planner).__name__)}"

    def run(self, task: str, harness: Harness, seed: int | None = None) -> EpisodeRecord:
        cfg, t0, episode_id = self.settings, time.perf_counter(), uuid.uuid4().hex[:12]
        if getattr(self.planner, "memory", False):  # the agent's own view: everything read goes through its memory
            harness = MemoryHarness(harness)
        h = RecordingHarness(harness, cfg.max_env_steps or harness.spec.max_steps, cfg.record_steps)
        obs, _ = h.reset(seed=seed)
        self.planner.reset()
        context = ContextBuilder(task, h, self.library, episode_id=episode_id, skills_shown=cfg.skills_shown,
                                 history_len=cfg.history_len)
        decisions: list[DecisionRecord] = []
        history: list[HistoryItem] = []
        feedback: str | None = None
        failure: Failure | None = None  # why the loop stopped early, when it did
        last_failed: FailureCause | None = None  # the cause of the latest failed execution
        failed_code: str | None = None  # the source of the latest policy code that failed
        repeats = Repeats(getattr(self.planner, "repeat_feedback_after", REPEAT_FEEDBACK_AFTER))
        noop_guard = bool(getattr(self.planner, "noop_guard", False))  # off unless the profile asks
        claim: bool | None = None
        self.on_event(EpisodeStarted(episode_id=episode_id, task=task, harness=h.spec.id, seed=seed))
        while not h.done:
            if len(decisions) >= cfg.max_decisions:
                failure = FailureCause.BUDGET, f"decision budget ({cfg.max_decisions}) exhausted"
                break
            decision, rec, failure = self._decide(
                context.build(obs, history, feedback, failed_code, last_failed=repeats.count > 0), len(decisions))
            decisions.append(rec)
            if decision is None:
                break
            self.on_event(DecisionMade(index=rec.index, decision=decision))
            if isinstance(decision, Finish):
                claim, failure = decision.success, self._finish(decision, rec, h, obs, history, last_failed)
                break
            h.decision_index, before = rec.index, h.t
            ex = execute(decision, h, obs, library=self.library, task=task, sandbox=cfg.sandbox,
                         on_outcome=lambda what, o, i=rec.index: self._outcome(i, what, o),
                         interrupt=getattr(self.planner, "interrupt", ()))  # the planner's own threats
            rec.outcomes, rec.env_steps = ex.outcomes, h.t - before
            noop = noop_guard and not isinstance(decision, PolicyCode) and is_noop(ex.outcomes)
            if noop:  # told as one, and counted below like a failure
                ex.history, ex.feedback = mark_noops(ex.history), noop_feedback(describe_decision(decision))
            obs, history = ex.obs, history + ex.history
            feedback = repeats.feedback(decision, ex.failure is not None, ex.feedback, noop=noop)
            last_failed = ex.failure or last_failed
            if isinstance(decision, PolicyCode):
                failed_code = None if all(o.success for o in ex.outcomes) else decision.source
            if ex.harness_error is not None:  # a broken harness cannot be replanned around
                failure = FailureCause.HARNESS_ERROR, ex.harness_error
                break
        verdict = self._judge(h, claim)
        return self._record(task, h, seed, episode_id, decisions, verdict, failure, time.perf_counter() - t0, claim)

    # --- the steps of the loop -------------------------------------------------------------

    def _decide(self, ctx: PlannerContext, index: int) -> tuple[Decision | None, DecisionRecord, Failure | None]:
        """The planner's next decision, or why there is none (its calls are recorded either way)."""
        p0 = time.perf_counter()
        try:
            decision: Decision = self.planner.decide(ctx)
        except (BudgetExceeded, LLMError, PlannerError) as err:
            cause = (FailureCause.BUDGET if isinstance(err, BudgetExceeded) else
                     FailureCause.LLM_ERROR if isinstance(err, LLMError) else
                     FailureCause.NO_SKILLS if isinstance(err, NoSkillsError) else FailureCause.PLANNER_PARSE)
            calls = self._calls()
            failed_call = getattr(err, "call", None)  # a call that failed for good, with its attempts
            if isinstance(failed_call, LLMCallRecord) and all(c.call_id != failed_call.call_id for c in calls):
                calls.append(failed_call)
            failed = DecisionFailed(index=index, error=str(err), cause=cause)
            self.on_event(failed)
            return None, DecisionRecord(index=index, decision=failed.as_decision(),
                                        planner_s=time.perf_counter() - p0, llm_calls=calls), (cause, str(err))
        context = ctx.model_dump(mode="json", exclude={"spec"}) if self.settings.record_context else None
        return decision, DecisionRecord(index=index, decision=decision.model_dump(mode="json"),
                                        planner_s=time.perf_counter() - p0, llm_calls=self._calls(),
                                        context=context), None

    def _finish(self, finish: Finish, rec: DecisionRecord, h: RecordingHarness, obs: Any,
                history: list[HistoryItem], last_failed: FailureCause | None) -> Failure | None:
        """A finish(success=true) takes the harness's done action where it declares one (the
        environment judges then, see `declare_done`); the failure a finish stands for, if any."""
        if finish.success:
            h.decision_index, before = rec.index, h.t
            done = declare_done(h, obs, lambda what, o, i=rec.index: self._outcome(i, what, o))
            if done is not None:
                rec.outcomes, rec.env_steps = done.outcomes, h.t - before
                if done.harness_error is not None:
                    return FailureCause.HARNESS_ERROR, done.harness_error
        return self._gave_up(finish, history, last_failed)

    @staticmethod
    def _gave_up(finish: Finish, history: list[HistoryItem], last_failed: FailureCause | None) -> Failure | None:
        """Giving up right after a failed execution is that execution's failure."""
        if finish.success:
            return None
        if history and not history[-1].success:
            return last_failed or FailureCause.SKILL_FAILURE, finish.reason
        return FailureCause.PLANNER_GAVE_UP, finish.reason

    def _outcome(self, index: int, what: str, outcome: Outcome) -> None:
        self.on_event(ExecutionFinished(index=index, call=what, outcome=outcome))

    def _calls(self) -> list[LLMCallRecord]:
        """The LLM calls of the planner's last decide(), as episode-level records."""
        return [LLMCallRecord.model_validate(c.model_dump() if hasattr(c, "model_dump") else c)
                for c in getattr(self.planner, "last_calls", None) or []]

    @staticmethod
    def _judge(h: RecordingHarness, claim: bool | None) -> Verdict:
        """Success as the harness, its success rule or the goal predicates say; where none of
        them can tell, a planner's claim of success is recorded as a claim, never as success."""
        verdict = judge(h.spec, info=h.last_info, terminated=h.terminated, truncated=h.truncated,
                        episode_return=h.total_reward, state=h.symbolic_state)
        if verdict.success is None and claim:
            return Verdict(None, "planner-claim")
        return verdict

    def _record(self, task: str, h: RecordingHarness, seed: int | None, episode_id: str,
                decisions: list[DecisionRecord], verdict: Verdict, failure: Failure | None,
                wall_s: float, claim: bool | None = None) -> EpisodeRecord:
        if verdict.success:
            failure = None
        elif verdict.success is False and failure is None:
            failure = (unsolved_cause(h.terminated, h.truncated, h.t) if h.done else
                       (FailureCause.PLANNER_FALSE_CLAIM, "the planner finished claiming success; judged by "
                                                          f"{verdict.source}, the task is not done") if claim else
                       (FailureCause.PLANNER_GAVE_UP, "the planner finished without reaching the goal"))
        llm = [c for d in decisions for c in d.llm_calls]
        record = EpisodeRecord(
            episode_id=episode_id, agent=self.agent_name, harness_id=h.spec.id, task=task, seed=seed,
            success=verdict.success, episode_return=h.total_reward, env_steps=h.t, terminated=h.terminated,
            truncated=h.truncated, failure_cause=failure[0] if failure else None,
            failure_detail=failure[1] if failure else None, decisions=decisions, steps=h.steps,
            llm_calls=sum(not c.cached for c in llm), prompt_tokens=sum(c.prompt_tokens for c in llm),
            completion_tokens=sum(c.completion_tokens for c in llm), cost_usd=sum(c.cost_usd for c in llm),
            wall_s=wall_s, extra={"success_source": verdict.source} | (
                {"harness_spec": h.spec.model_dump(mode="json")} if self.settings.record_context else {}),
        )
        self.on_event(EpisodeEnded(record=record))
        return record


class Repeats:
    """Counts identical decisions that failed in a row; from the `after`-th on, the feedback
    of the next decision says so, so that a planner stuck on one failing call hears it. With
    the no-op guard a no-op (polar.agent.noop) counts as a failure does."""

    def __init__(self, after: int) -> None:
        self.after, self.count, self.last = after, 0, ""
        self.noops = 0  # how many of the `count` were no-ops

    def feedback(self, decision: Decision, failed: bool, feedback: str | None, noop: bool = False) -> str | None:
        what, stuck = describe_decision(decision), failed or noop
        same = stuck and what == self.last
        self.count = (self.count + 1 if same else 1) if stuck else 0
        self.noops = (self.noops + 1 if same else 1) if noop else (self.noops if same else 0)
        self.last = what if stuck else ""
        if self.count < self.after:
            return feedback
        if self.noops == self.count:
            note = (f"{what} has done nothing {self.count} times in a row; the same decision will do nothing "
                    "again: decide something else.")
        elif self.noops:
            note = (f"{what} has failed or done nothing {self.count} times in a row; the same decision will "
                    "not help: decide something else.")
        else:
            note = (f"{what} has failed {self.count} times in a row; the same decision will fail again "
                    "from here: decide something else.")
        return f"{feedback} {note}" if feedback else note


def run_episode(task: str, harness: Harness, planner: Planner, library: SkillCatalog | None = None,
                seed: int | None = None, settings: AgentSettings | None = None,
                on_event: EventHook | None = None) -> EpisodeRecord:
    return Agent(planner, library, settings, on_event).run(task, harness, seed=seed)
