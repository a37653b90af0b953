"""The code-mode arm of a suite (`kind: code`): a served model writes `act(obs)`, the sandbox
plays the episode with it.

Per episode, `polar.evals.code_eval.play_episode` (the same path `polar code eval` takes): the
model answers the harness's code task (`polar.evals.code_tasks`) with a program; the restricted
gate checks it; a refused program is replaced by a new sample, at most `k` per episode; the first
that passes plays the whole episode in the agent's sandbox (docker by default), on the cell's own
harness (its observations mapped to the flat list the prompt documents). Every program is one
decision of the episode record, with its source, its verdict and the model call that wrote it,
so the report's episode pages show the programs. A program that fails earns the task's lowest
return. The model is charged the env steps its training cost (`provenance.env_steps`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from polar.episode import DecisionRecord, EpisodeRecord, FailureCause, LLMCallRecord, Outcome
from polar.errors import ConfigError
from polar.evals.agents import EvalAgent, Information, Preparation, sha
from polar.evals.code_eval import CodeEpisode, code_llm, play_episode
from polar.evals.code_runner import ENTRYPOINT, EpisodeRun
from polar.evals.code_tasks import CodeTask, get_task
from polar.evals.planner_agent import _weights_fingerprint, model_charges
from polar.evals.suite import CodeAgentConfig, SuiteAgent, SuiteHarness
from polar.harnesses.base import Harness
from polar.harnesses.rollout import unsolved_cause
from polar.llm.client import LLMClient, LLMResponse

CODE_TEMPLATES = ("code_system", "code_task")  # what the model is asked with (polar.evals.code_tasks)


def _same_env(entry: SuiteHarness, task: CodeTask) -> None:
    """The suite's harness must be the task's env: the same spaces and step limit (a label mapped
    to the wrong task would otherwise play, badly, without a word)."""
    from polar.harnesses.registry import make_harness

    with entry.make() as mine, make_harness(task.harness, **task.harness_kwargs) as want:
        for field in ("observation_space", "action_space", "max_steps"):
            if getattr(mine.spec, field) != getattr(want.spec, field):
                raise ConfigError(f"harness {entry.label} ({entry.id}): its {field} is not code task {task.name!r}'s "
                                  f"({task.harness} {task.harness_kwargs or ''}); map the label to its task in "
                                  "the agent's `tasks:`")


class CodeAgent(EvalAgent):
    kind = "code"
    config: CodeAgentConfig

    def __init__(self, config: SuiteAgent, suite: Any = None) -> None:
        super().__init__(config, suite)
        self.task: CodeTask | None = None
        self.client: LLMClient | None = None
        self._held = contextlib.ExitStack()

    @classmethod
    def information(cls, config: SuiteAgent) -> Information:
        """It reads the harness's own observation (as a flat list of floats), nothing more."""
        if config.observes not in (None, "view"):
            raise ConfigError(f"agent {config.name}: observes: a code agent's program reads the harness's "
                              f"observation: view, not {config.observes!r}")
        return Information("view", "view", "a served model writes act(obs) (at most k programs an episode), "
                                           "played in the sandbox")

    @classmethod
    def inputs_fingerprint(cls, config: SuiteAgent) -> str:
        """The prompt templates by content and the model's weights (as a planner's server model)."""
        from polar.prompts.templates import load_template

        assert isinstance(config, CodeAgentConfig)
        parts = [f"{t}:{load_template(t).version}" for t in CODE_TEMPLATES]
        try:
            parts += _weights_fingerprint(config.model)
        except ConfigError as err:  # preflight reports it; the key only has to differ
            parts.append(f"model-error:{err}")
        return sha("|".join(parts).encode())

    @property
    def label(self) -> str:
        return f"code:{self.config.model}"

    def prepare(self, entry: SuiteHarness, seed: int, work_dir: Path) -> Preparation:
        from polar.llm.leases import hold

        cfg = self.config
        self.task = get_task(cfg.task_for(entry.label))
        _same_env(entry, self.task)
        work_dir.mkdir(parents=True, exist_ok=True)
        self.client = code_llm(cfg.model, port=cfg.port, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                               threads=cfg.threads, record=work_dir / "calls.jsonl")
        assert self.client.settings.server is not None
        # started when not running (and stopped at close when this agent started it); a server
        # already serving this port for another holder is shared (polar.llm.leases)
        self._held.enter_context(hold([self.client.settings.server]))
        charges = model_charges(cfg.model)
        info = {"charges": charges, "task": self.task.name, "model": cfg.model, "k": cfg.k,
                "sandbox": cfg.sandbox.backend}
        if cfg.select_episodes:  # only when set: the committed cells' preparation stays as it was
            info["select_episodes"] = cfg.select_episodes
        return Preparation(train_env_steps=sum(charges.values()), info=info)

    def close(self) -> None:
        self._held.close()

    def episode(self, harness: Harness, task: str, env_seed: int, max_steps: int | None,
                episode_id: str) -> EpisodeRecord:
        assert self.task is not None and self.client is not None, "prepare() first"
        replies: list[LLMResponse] = []
        ep = play_episode(self.client, self.task, env_seed, self.config.k, self.config.sandbox,
                          harness=harness, replies=replies, select=self.config.select_episodes or 0)
        return episode_record(ep, replies, agent=self.label, harness_id=harness.spec.id, task=task,
                              episode_id=episode_id)


def _outcome(run: EpisodeRun, gate: str) -> Outcome:
    """What one program did, as the agent loop's executors report policy code."""
    if gate != "ok":
        return Outcome(kind="code", success=False, cause=FailureCause.SANDBOX_ERROR, error_type="GateRefused",
                       stopped_by="error", reason=run.reason)
    fields: dict[str, Any] = dict(kind="code", steps=run.steps, reward=run.ret, terminated=run.terminated,
                                  truncated=run.truncated, wall_s=run.wall_s, reason=run.reason)
    if run.error is not None:
        return Outcome(**fields, success=False, cause=FailureCause.SANDBOX_ERROR, error_type=run.error,
                       stopped_by="error")
    stopped = "terminated" if run.terminated else "truncated"
    return Outcome(**fields, success=run.success, cause=None if run.success else FailureCause.SKILL_FAILURE,
                   stopped_by=stopped)


def _selection_decisions(ep: CodeEpisode, replies: list[LLMResponse]) -> list[DecisionRecord]:
    """Generate-and-test: one decision per sampled program (its selection episodes as its
    outcomes, the call that wrote it), then the chosen program's play of the episode."""
    decisions = []
    for i, (prog, resp) in enumerate(zip(ep.candidates, replies, strict=True)):
        call = LLMCallRecord.model_validate({**resp.call.model_dump(), "reply": resp.content})
        outs = [_outcome(run, prog.gate) for run in prog.episodes]
        for out, run in zip(outs, prog.episodes, strict=True):
            out.reason = f"selection episode, seed {run.seed}: return {run.ret:g}; {out.reason}"
        decisions.append(DecisionRecord(
            index=i, decision={"kind": "code", "source": prog.program, "entrypoint": ENTRYPOINT, "role": "candidate"},
            outcomes=outs, env_steps=prog.env_steps, planner_s=call.latency_s, llm_calls=[call]))
    if ep.chosen is not None:
        played = ep.programs[0]
        best = ep.candidates[ep.chosen].mean_return
        out = _outcome(played.episodes[0], played.gate)
        out.reason = (f"the episode, played by program {ep.chosen + 1} of {len(ep.candidates)} "
                      f"(mean selection return {best:g}); {out.reason}")
        decisions.append(DecisionRecord(
            index=len(decisions), decision={"kind": "code", "source": played.program, "entrypoint": ENTRYPOINT,
                                            "role": "played", "candidate": ep.chosen},
            outcomes=[out], env_steps=played.env_steps))
    return decisions


def episode_record(ep: CodeEpisode, replies: list[LLMResponse], *, agent: str, harness_id: str, task: str,
                   episode_id: str) -> EpisodeRecord:
    """A code episode as a suite's episode record: one decision per program (its source, its
    verdict, the call that wrote it, with the reply), the last program's episode as the result.
    With selection, the env steps are the selection episodes' and the episode's together."""
    decisions = _selection_decisions(ep, replies) if ep.candidates else []
    for i, (prog, resp) in enumerate(zip(ep.programs, replies, strict=True) if not ep.candidates else ()):
        run = prog.episodes[0]
        call = LLMCallRecord.model_validate({**resp.call.model_dump(), "reply": resp.content})
        decisions.append(DecisionRecord(
            index=i, decision={"kind": "code", "source": prog.program, "entrypoint": ENTRYPOINT},
            outcomes=[_outcome(run, prog.gate)], env_steps=run.steps, planner_s=call.latency_s, llm_calls=[call]))
    last = ep.programs[-1].episodes[0]
    if ep.success:
        cause, detail = None, None
    elif last.error is not None:
        cause = FailureCause.SANDBOX_ERROR
        detail = f"{last.error}: {last.reason}" + (f" ({len(ep.candidates or ep.programs)} programs, all refused)"
                                                   if ep.programs[-1].gate != "ok" else "")
    else:
        cause, detail = unsolved_cause(last.terminated, last.truncated, last.steps)
    return EpisodeRecord(
        episode_id=episode_id, agent=agent, harness_id=harness_id, task=task, seed=ep.seed, success=ep.success,
        episode_return=ep.ret, env_steps=ep.env_steps, terminated=last.terminated, truncated=last.truncated,
        failure_cause=cause, failure_detail=detail, decisions=decisions, llm_calls=len(replies),
        prompt_tokens=ep.prompt_tokens, completion_tokens=ep.completion_tokens, wall_s=ep.wall_s,
        extra=_extra(ep))


def _extra(ep: CodeEpisode) -> dict[str, Any]:
    if not ep.candidates:
        return {"code_task": ep.programs[-1].task, "programs": len(ep.programs),
                "refused": sum(p.gate != "ok" for p in ep.programs)}
    return {"code_task": ep.task, "programs": len(ep.candidates),
            "refused": sum(p.gate != "ok" for p in ep.candidates), "selection_seeds": ep.selection_seeds,
            "selection_env_steps": ep.selection_env_steps, "episode_env_steps": ep.programs[0].env_steps,
            "chosen": ep.chosen, "selection_returns": [p.mean_return for p in ep.candidates]}
