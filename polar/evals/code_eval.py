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
    programs: list[ProgramRecord]  # in order; all but the last were refused by the gate
    call_ids: list[str]
    ret: float
    success: bool
    env_steps: int
    completion_tokens: int
    prompt_tokens: int
    wall_s: float


def play_episode(client: LLMClient, task: CodeTask, seed: int, k: int, profile: SandboxProfile, *,
                 harness: Harness | None = None, replies: list[LLMResponse] | None = None) -> CodeEpisode:
    """Up to `k` programs for one episode: the first that passes the gate plays it. `harness`:
    the task's env made by the caller (`run_program`); `replies` collects each model reply
    (with its call record) for a caller that keeps them in its own record."""
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
                     "programs": sum(len(e.programs) for e in eps),
                     "refused": sum(p.gate != "ok" for e in eps for p in e.programs),
                     "errors": sum(p.episodes[0].error is not None for e in eps for p in e.programs),
                     "completion_tokens": sum(e.completion_tokens for e in eps),
                     "prompt_tokens": sum(e.prompt_tokens for e in eps)}
    return out


def evaluate(model: str, out: str | Path, *, tasks: list[str], seeds: list[int], k: int, profile: SandboxProfile,
             temperature: float = 0.7, port: int = 8031, threads: int = 1) -> dict[str, Any]:
    """Every (task, seed) episode, resumable: `episodes.jsonl` keeps the finished ones."""
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
                ep = play_episode(client, TASKS[name], seed, k, profile)
                with path.open("a") as f:
                    f.write(ep.model_dump_json() + "\n")
                done.append(ep)
                print(f"{name} seed {seed}: return {ep.ret:.1f} success {ep.success} "
                      f"({len(ep.programs)} program(s), {ep.wall_s:.1f} s)", flush=True)
        finally:
            stop_own(server.host, server.port)
    episodes = [e for e in done if e.task in tasks and e.seed in seeds]
    summary = {"model": model, "k": k, "temperature": temperature, "backend": profile.backend,
               "seeds": seeds, "tasks": summarise(episodes), "wall_s_this_run": time.perf_counter() - t0}
    atomic_write(out / "summary.json", json.dumps(summary, indent=1))
    atomic_write(out / "episodes.md", episode_pages(episodes, title=f"{model}: code-mode episodes"))
    return summary


def episode_pages(episodes: list[CodeEpisode], title: str) -> str:
    """The programs, readable: one section per episode, each program with its verdict."""
    lines = [f"# {title}", ""]
    for e in episodes:
        lines += [f"## {e.task}, seed {e.seed}: return {e.ret:g}, success {e.success}, {e.env_steps} env steps", ""]
        for i, p in enumerate(e.programs, 1):
            run = p.episodes[0]
            verdict = "ran" if p.gate == "ok" else "refused by the gate"
            lines += [f"Program {i} ({verdict}): {run.reason}", "", "```python", p.program.rstrip(), "```", ""]
    return "\n".join(lines)
