"""Sample programs from a served model and play them: the code-mode arms' episodes.

    polar code eval --model code-sft --out evals/results/code/code-sft --seeds 1000-1019

The model is served by llama.cpp (`polar.llm.serve`) and asked through Polar's one LLM client
(call records keep the reply's sampled token ids and log-probs, which RL scores). An episode
of the `code-planner` arm: the model writes a program for the task (one sample at the
suite's temperature); when the restricted gate refuses it, the model is asked again, at most
`k` programs per episode; the first program that passes the gate plays the episode in the
sandbox. Every env step of every program is counted. The results folder holds
`episodes.jsonl` (each episode with its programs, their gate verdicts and returns),
`summary.json` (per task: mean return, success rate, env steps, tokens) and `episodes.md`, the
programs themselves, readable.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from polar.evals.code_runner import ProgramRecord, run_program
from polar.evals.code_tasks import TASKS, CodeTask, task_messages
from polar.files import atomic_write
from polar.harnesses.base import Harness
from polar.llm.client import LLMClient, LLMResponse
from polar.llm.record import CallRecorder
from polar.llm.serve import ServerSettings
from polar.llm.settings import LLMSettings
from polar.sandboxes.profiles import SandboxProfile


def code_llm(model: str, *, port: int = 8031, temperature: float = 0.7, max_tokens: int = 160,
             threads: int = 1, record: Path | None = None) -> LLMClient:
    """A client for `model` served by llama.cpp on `port` (started when not running), recording
    each call (with the sampled tokens' ids and log-probs) to `record`."""
    from polar.llm.serve import resolve, served_name

    server = ServerSettings(model=model, engine="llamacpp", port=port, n_ctx=1024, threads=threads)
    settings = LLMSettings(model=f"openai/{served_name(*resolve(server))}",
                           server=server, temperature=temperature, max_tokens=max_tokens, logprobs=True,
                           top_logprobs=1, warmup="none", timeout_s=300, role="code-planner",
                           pricing={"prompt_usd_per_mtok": 0.0, "completion_usd_per_mtok": 0.0})
    return LLMClient(settings, recorder=CallRecorder(record) if record else None)


class CodeEpisode(BaseModel):
    """One episode of a code-mode arm: the programs the model wrote, and how the one that ran did."""

    model_config = ConfigDict(extra="forbid")

    task: str
    seed: int
    # in order; all but the last were refused by the gate. With selection: the one program that
    # played the episode (or, when every candidate was refused, the last refused one)
    programs: list[ProgramRecord]
    call_ids: list[str]
    ret: float
    success: bool
    env_steps: int
    completion_tokens: int
    prompt_tokens: int
    wall_s: float
    # generate-and-test (polar.evals.code_select): every sampled program with its selection
    # episodes, and the index of the one that played (None: no selection, or none passed the gate)
    selection_seeds: list[int] = []
    candidates: list[ProgramRecord] = []
    chosen: int | None = None

    @property
    def selection_env_steps(self) -> int:
        return sum(c.env_steps for c in self.candidates)


def play_episode(client: LLMClient, task: CodeTask, seed: int, k: int, profile: SandboxProfile, *,
                 harness: Harness | None = None, replies: list[LLMResponse] | None = None,
                 select: int = 0) -> CodeEpisode:
    """Up to `k` programs for one episode: the first that passes the gate plays it. `harness`:
    the task's env made by the caller (`run_program`); `replies` collects each model reply
    (with its call record) for a caller that keeps them in its own record. `select` > 0:
    generate-and-test instead (`polar.evals.code_select`), each program tried on `select`
    selection episodes first."""
    if select:
        return _play_selected(client, task, seed, k, profile, select, harness=harness, replies=replies)
    t0 = time.perf_counter()
    msgs = task_messages(task)
    programs: list[ProgramRecord] = []
    calls: list[str] = []
    ptok = ctok = 0
    for _ in range(k):
        resp = client.complete(msgs, template="code_task", replay=False)
        if replies is not None:
            replies.append(resp)
        calls.append(resp.call.call_id)
        ptok, ctok = ptok + resp.call.prompt_tokens, ctok + resp.call.completion_tokens
        rec = run_program(task, resp.content, [seed], profile, harness=harness)
        programs.append(rec)
        if rec.gate == "ok":
            break
    last = programs[-1].episodes[0]
    return CodeEpisode(task=task.name, seed=seed, programs=programs, call_ids=calls, ret=last.ret,
                       success=last.success, env_steps=sum(p.env_steps for p in programs), completion_tokens=ctok,
                       prompt_tokens=ptok, wall_s=time.perf_counter() - t0)


def _play_selected(client: LLMClient, task: CodeTask, seed: int, k: int, profile: SandboxProfile, n: int, *,
                   harness: Harness | None, replies: list[LLMResponse] | None) -> CodeEpisode:
    """Generate-and-test: up to `k` programs tried on `n` selection episodes, the chosen one
    plays the episode (`polar.evals.code_select`)."""
    from polar.evals.code_select import select_program, selection_seeds

    t0 = time.perf_counter()
    msgs = task_messages(task)
    asked: list[LLMResponse] = []

    def sample() -> Iterator[str]:
        for _ in range(k):
            resp = client.complete(msgs, template="code_task", replay=False)
            asked.append(resp)
            if replies is not None:
                replies.append(resp)
            yield resp.content

    seeds = selection_seeds(seed, n)
    sel = select_program(task, sample(), seeds, profile, harness=harness)
    if sel.chosen is None:  # every program refused: the episode is not played, as without selection
        last = sel.candidates[-1]
        played = last.model_copy(update={"episodes": [last.episodes[0].model_copy(update={"seed": seed})]})
    else:
        played = run_program(task, sel.candidates[sel.chosen].program, [seed], profile, harness=harness)
    run = played.episodes[0]
    return CodeEpisode(task=task.name, seed=seed, programs=[played], call_ids=[r.call.call_id for r in asked],
                       ret=run.ret, success=run.success, env_steps=sel.env_steps + played.env_steps,
                       completion_tokens=sum(r.call.completion_tokens for r in asked),
                       prompt_tokens=sum(r.call.prompt_tokens for r in asked), wall_s=time.perf_counter() - t0,
                       selection_seeds=seeds, candidates=sel.candidates, chosen=sel.chosen)


def _sampled(e: CodeEpisode) -> list[ProgramRecord]:
    """The programs the model wrote for an episode (with selection: the candidates)."""
    return e.candidates or e.programs


def summarise(episodes: list[CodeEpisode]) -> dict[str, Any]:
    """Per task: episodes, mean return (and its std), success rate, the issue's bar and whether
    it is met, env steps, tokens, refused programs."""
    out: dict[str, Any] = {}
    for name in [t for t in TASKS if any(e.task == t for e in episodes)]:
        eps = [e for e in episodes if e.task == name]
        task = TASKS[name]
        rets = [e.ret for e in eps]
        success = sum(e.success for e in eps) / len(eps)
        value = statistics.mean(rets) if task.metric == "return" else success
        out[name] = {"episodes": len(eps), "mean_return": statistics.mean(rets),
                     "std_return": statistics.pstdev(rets), "success": success, "metric": task.metric,
                     "threshold": task.threshold, "meets_threshold": value >= task.threshold,
                     "env_steps": sum(e.env_steps for e in eps),
                     "selection_env_steps": sum(e.selection_env_steps for e in eps),
                     "programs": sum(len(_sampled(e)) for e in eps),
                     "refused": sum(p.gate != "ok" for e in eps for p in _sampled(e)),
                     "errors": sum(any(r.error is not None for r in p.episodes) for e in eps for p in _sampled(e)),
                     "completion_tokens": sum(e.completion_tokens for e in eps),
                     "prompt_tokens": sum(e.prompt_tokens for e in eps)}
    return out


def evaluate(model: str, out: str | Path, *, tasks: list[str], seeds: list[int], k: int, profile: SandboxProfile,
             temperature: float = 0.7, port: int = 8031, threads: int = 1, select: int = 0) -> dict[str, Any]:
    """Every (task, seed) episode, resumable: `episodes.jsonl` keeps the finished ones. `select`
    > 0: generate-and-test on that many selection episodes (`polar.evals.code_select`); a
    folder holds one setting's episodes."""
    from polar.llm.serve import ensure_server, stop_own

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "episodes.jsonl"
    done = [CodeEpisode.model_validate_json(line) for line in path.read_text().splitlines()
            if line.strip()] if path.exists() else []
    have = {(e.task, e.seed) for e in done}
    todo = [(t, s) for t in tasks for s in seeds if (t, s) not in have]
    t0 = time.perf_counter()
    if todo:
        client = code_llm(model, port=port, temperature=temperature, threads=threads, record=out / "calls.jsonl")
        server = client.settings.server
        assert server is not None
        stop_own(server.host, server.port)  # a server a killed run left behind (maybe another model)
        try:
            ensure_server(server, lambda m: None)
            for name, seed in todo:
                ep = play_episode(client, TASKS[name], seed, k, profile, select=select)
                with path.open("a") as f:
                    f.write(ep.model_dump_json() + "\n")
                done.append(ep)
                print(f"{name} seed {seed}: return {ep.ret:.1f} success {ep.success} "
                      f"({len(ep.programs)} program(s), {ep.wall_s:.1f} s)", flush=True)
        finally:
            stop_own(server.host, server.port)
    episodes = [e for e in done if e.task in tasks and e.seed in seeds]
    summary = {"model": model, "k": k, "select_episodes": select, "temperature": temperature, "backend": profile.backend,
               "seeds": seeds, "tasks": summarise(episodes), "wall_s_this_run": time.perf_counter() - t0}
    atomic_write(out / "summary.json", json.dumps(summary, indent=1))
    atomic_write(out / "episodes.md", episode_pages(episodes, title=f"{model}: code-mode episodes"))
    return summary


def episode_pages(episodes: list[CodeEpisode], title: str) -> str:
    """The programs, readable: one section per episode, each program with its verdict."""
    lines = [f"# {title}", ""]
    for e in episodes:
        lines += [f"## {e.task}, seed {e.seed}: return {e.ret:g}, success {e.success}, {e.env_steps} env steps", ""]
        if e.candidates:
            lines += [f"Selection episodes (seeds {e.selection_seeds}, {e.selection_env_steps} env steps); "
                      f"played: program {e.chosen + 1 if e.chosen is not None else '- (all refused)'}", ""]
            for i, p in enumerate(e.candidates, 1):
                verdict = (", ".join(f"seed {r.seed}: return {r.ret:g}" for r in p.episodes) if p.gate == "ok"
                           else f"refused by the gate: {p.gate}")
                lines += [f"Program {i} ({verdict})", "", "```python", p.program.rstrip(), "```", ""]
            lines += [f"Played: {e.programs[0].episodes[0].reason}", ""]
            continue
        for i, p in enumerate(e.programs, 1):
            run = p.episodes[0]
            verdict = "ran" if p.gate == "ok" else "refused by the gate"
            lines += [f"Program {i} ({verdict}): {run.reason}", "", "```python", p.program.rstrip(), "```", ""]
    return "\n".join(lines)
