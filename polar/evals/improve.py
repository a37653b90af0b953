"""Reward-filtered self-improvement of a planner model (`polar llm improve`).

Each round: sample `episodes` episodes per training task at temperature `temperature` with
the current model (the resumable eval runner, the model served by its engine), keep the
decisions the harness rewarded (`polar.planners.dataset`, keep=both), fine-tune the current
model on them (`polar.llm.finetune`), and evaluate the new model greedily on held-out seeds.
This is expert iteration / rejection-sampling fine-tuning: RL with a filtered-BC update.

With `targets: teacher` a round is DAgger's instead (Ross et al., 2011): the current model
plays the training tasks, every decision state it visited is labelled with the teacher
planner's decision for that state (`polar.planners.dataset.relabel_examples`: the prompt as the
student saw it, the teacher's canonical decision as the target), and the model is fine-tuned on
the aggregate: every round's labels so far plus the teacher's own examples (`aggregate`, e.g.
the SFT dataset, balanced per task with `teacher_per_task`). It fixes behaviour cloning's
compounding error: the student learns what to do in the states its own mistakes lead to.

Every round appends a ledger row (LLM tokens, training tokens, env steps, CPU and wall time)
and an evaluation row per task; `results.json` holds both and the learning curve is the
success of each arm (`start`, `round-1`, ...) on the held-out seeds.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from polar.config import StrictModel
from polar.errors import ConfigError
from polar.evals.suite import SuiteHarness
from polar.files import atomic_write
from polar.statistics import wilson_interval

EVAL_SEED = 100_000  # the flagship's held-out episode seeds
SAMPLE_SEED = 200_000  # sampling seeds: disjoint from the teacher's (< 100000) and the held-out ones


class ImproveConfig(StrictModel):
    model: str = Field(description="The model to improve: a registered name (e.g. the SFT model) or a built-in.")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", description="Name the improved models are registered under (versions count up).")
    profile: str = Field(default="local", description="The student's planner profile (templates, schema, server block).")
    observation: Literal["predicates", "view", "memory"] = Field(
        default="predicates", description="What the student's prompts show: predicates, view, or memory (the "
        "agent's memory of what it has seen, docs/memory.md: give the tasks `kwargs: {odometry: true}` and "
        "skills the memory library).")
    skills: str | None = Field(default=None, description="Skill library folder of the sampled and evaluated "
                               "episodes (e.g. skills_memory); None: the default library.")
    skills_shown: int | None = Field(default=None, ge=1, description=(
        "Skills the student's prompts list (the suite agent's `skills_shown`, e.g. 40 for all of Crafter's): "
        "as the model was trained and is evaluated; None: the agent's default."))
    tasks: list[SuiteHarness] = Field(min_length=1, description="Training tasks (sampled each round).")
    eval_tasks: list[SuiteHarness] = Field(default_factory=list, description="Held-out evaluation: tasks, paraphrases, unseen harnesses; none: the rounds' models are not evaluated here (e.g. a suite evaluates them).")
    rounds: int = Field(default=2, ge=0, le=99)
    seed: int = Field(default=0, ge=0, description="Training seed: the fine-tunes' seed (data subset and order, adapter init) and the sampling episodes' (seeds 100*seed + round).")
    episodes: int = Field(default=8, ge=1, description="Sampled episodes per training task per round.")
    temperature: float = Field(default=0.7, ge=0, le=2)
    eval_seeds: int = Field(default=2, ge=1)
    eval_episodes: int = Field(default=5, ge=1, description="Per eval task and seed.")
    finetune: dict[str, Any] = Field(default_factory=dict, description="FinetuneConfig fields for each round (e.g. token_budget, learning_rate).")
    port: int = Field(default=8013, ge=1, le=65535)
    threads: int | None = Field(default=None, ge=1, description="The model server's CPU threads (default: all cores but one).")
    max_decisions: int = Field(default=20, ge=1)
    engine: Literal["llamacpp", "llama-server"] | None = Field(
        default=None, description="The model server's engine (default: the profile's, llama-cpp-python's server).")
    parallel: int = Field(default=1, ge=1, le=64, description=(
        "llama-server's slots (engine: llama-server): this many of a cell's episodes play at once."))
    targets: Literal["reward", "teacher"] = Field(default="reward", description=(
        "What a round trains on: `reward`, the sampled decisions the harness rewarded (expert iteration); "
        "`teacher`, DAgger: the teacher planner's decision for every state the model visited."))
    teacher: str | None = Field(default=None, description="targets teacher: the planner profile that labels the "
                                "student's states (e.g. symbolic-memory); it must plan from any state it is shown.")
    aggregate: list[str] = Field(default_factory=list, description=(
        "targets teacher: dataset folders (e.g. the SFT dataset of the teacher's own episodes) whose train "
        "examples join every round's fine-tune beside all the rounds' labels so far (DAgger's aggregation)."))
    teacher_per_task: int | None = Field(default=None, ge=1, description=(
        "targets teacher: at most this many examples per task from `aggregate` (a seeded subset, so that a "
        "task with few examples is not outweighed); None: all of them."))

    @model_validator(mode="after")
    def _teacher_named(self) -> ImproveConfig:
        if self.targets == "teacher" and not self.teacher:
            raise ConfigError("targets: teacher needs `teacher`, the planner profile that labels the states")
        return self


def _planner_overrides(cfg: ImproveConfig, model_ref: str, temperature: float, record: Path,
                       logprobs: bool) -> dict[str, Any]:
    from polar.llm.models import resolve_model
    from polar.planners.profile import LLMProfile, load_planner_profile

    base = load_planner_profile(cfg.profile)
    if not isinstance(base, LLMProfile) or base.server is None:
        raise ConfigError(f"profile {cfg.profile}: improve needs an LLM profile with a server block (a local model)")
    entry = resolve_model(model_ref)
    server = base.server.model_dump(mode="json") | {"model": model_ref, "port": cfg.port}
    if cfg.threads is not None:
        server["threads"] = cfg.threads
    if cfg.engine is not None:
        server["engine"] = cfg.engine
    if cfg.parallel > 1:
        server["parallel"] = cfg.parallel
    out = {"model": f"openai/{entry.name}", "server": server, "temperature": temperature,
           "observation": cfg.observation, "record_path": str(record), "cache_dir": None}
    # sampled episodes become training data: keep the profile's log-probs (the sampled token ids
    # enter the dataset as they are); a greedy evaluation trains nothing, and llama-cpp-python
    # works log-probs out over the whole vocabulary in Python (loop-2026-12-02: 2.98 s median
    # per sampled decision with them, 1.18 s per evaluated one without)
    return out if logprobs else out | {"logprobs": False}


def student_suite(cfg: ImproveConfig, label: str, overrides: dict[str, Any], harnesses: list[SuiteHarness],
                  seeds: list[int], episodes: int, eval_seed: int, record_context: bool = False) -> dict[str, Any]:
    """The suite that plays the student: its profile with `overrides`, the config's skill library
    (the memory skills in memory mode) and the harnesses as given (their kwargs, e.g. odometry).
    `record_context` keeps each decision's planner context (DAgger's teacher decides from it)."""
    agent = {"name": "student", "kind": "planner", "planner": cfg.profile, "overrides": overrides,
             "budget": {"decisions": cfg.max_decisions}} | ({"skills": cfg.skills} if cfg.skills else {}) | (
        {"record_context": True} if record_context else {}) | (
        {"skills_shown": cfg.skills_shown} if cfg.skills_shown else {})
    return {"name": label, "agents": [agent], "harnesses": [h.model_dump(mode="json") for h in harnesses],
            "seeds": seeds, "episodes": episodes, "eval_seed": eval_seed, "workers": 0}


def _run(cfg: ImproveConfig, label: str, model_ref: str, harnesses: list[SuiteHarness], seeds: list[int],
         episodes: int, eval_seed: int, temperature: float, out: Path, *,
         logprobs: bool = True, record_context: bool = False) -> tuple[list[Any], dict[str, Any]]:
    """Episodes of the model on `harnesses`; returns the cells and their cost."""
    from polar.evals.runner import run_cells
    from polar.llm.serve import stop_own
    from polar.planners.profile import load_planner_profile

    overrides = _planner_overrides(cfg, model_ref, temperature, out / "calls.jsonl", logprobs)
    suite = student_suite(cfg, label, overrides, harnesses, seeds, episodes, eval_seed, record_context)
    server = load_planner_profile(cfg.profile, overrides).server  # type: ignore[union-attr]
    # A server an interrupted run left on this port may serve other weights under the same name
    # (versions of one model share it): serve this model fresh.
    stop_own(server.host, server.port)
    t0, cpu0 = time.perf_counter(), _cpu_s()
    try:
        summary = run_cells(suite, out, workers=0, progress=True)
        server_cpu = _server_cpu(server.host, server.port)
    finally:
        stop_own(server.host, server.port)  # the next model is served fresh (same alias, other weights)
    eps = [e for c in summary.results for e in c.episodes]
    cost = {"episodes": len(eps), "env_steps": sum(e.env_steps for e in eps),
            "llm_prompt_tokens": sum(e.prompt_tokens for e in eps),
            "llm_completion_tokens": sum(e.completion_tokens for e in eps),
            "llm_calls": sum(e.llm_calls for e in eps), "wall_s": time.perf_counter() - t0,
            "cpu_s": _cpu_s() - cpu0 + server_cpu}
    return summary.results, cost


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _server_cpu(host: str, port: int) -> float:
    """CPU seconds the model server used (it runs in its own session, so not a waited child)."""
    from polar.llm.serve import read_state

    state = read_state(host, port)
    try:
        import psutil

        t = psutil.Process(int(state["pid"])).cpu_times() if state else None
        return float(t.user + t.system) if t else 0.0
    except Exception:  # the server is gone: nothing to add
        return 0.0


def success_rows(arm: str, model: str, cells: list[Any], observation: str) -> list[dict[str, Any]]:
    rows = []
    by_task: dict[str, list[bool]] = {}
    for c in cells:
        by_task.setdefault(c.cell.harness, []).extend(e.success for e in c.episodes)
    for task, outcomes in by_task.items():
        k, n = sum(outcomes), len(outcomes)
        lo, hi = wilson_interval(k, n)
        rows.append({"arm": arm, "model": model, "task": task, "observation": observation,
                     "successes": k, "episodes": n, "success": k / n, "ci95": [lo, hi]})
    return rows


def evaluate(cfg: ImproveConfig, arm: str, model_ref: str, out: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    cells, cost = _run(cfg, f"eval-{arm}", model_ref, cfg.eval_tasks, list(range(cfg.eval_seeds)),
                       cfg.eval_episodes, EVAL_SEED, 0.0, out, logprobs=False)
    return success_rows(arm, model_ref, cells, cfg.observation), cost


def improve(cfg: ImproveConfig, out_dir: str | Path, *, evaluate_start: bool = True) -> dict[str, Any]:
    """Run the rounds; writes and returns results.json (rows, ledger, curve). A re-run after a
    kill (`kill -9` included) takes the finished rounds from their `row.json` and resumes the
    interrupted one."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"config": cfg.model_dump(mode="json"), "rows": [], "ledger": []}

    def save() -> None:
        arms = sorted({r["arm"] for r in results["rows"]}, key=lambda a: (a != "start", a))
        results["curve"] = [{"arm": a, "success": _mean([r["success"] for r in results["rows"] if r["arm"] == a])}
                            for a in arms]
        atomic_write(out / "results.json", json.dumps(results, indent=1))

    current = cfg.model
    if evaluate_start and cfg.eval_tasks:
        key = _key(cfg, 0, current)
        row = _finished(out / "start" / ROW_FILE, key)
        if row is None:
            rows, cost = evaluate(cfg, "start", current, out / "start" / "eval")
            row = _keep(out / "start" / ROW_FILE, {"round": 0, "model": current, "eval": cost}, rows, key)
        results["rows"] += row.pop("rows")
        results["ledger"].append(row)
        save()
    for r in range(1, cfg.rounds + 1):
        rd = out / f"round-{r}"
        key = _key(cfg, r, current)
        row = _finished(rd / ROW_FILE, key)
        if row is None:
            row = _round(cfg, r, current, rd, key)
        current = row["model"]
        results["rows"] += row.pop("rows")
        results["ledger"].append(row)
        save()
    return results


# fields added after the first runs: a round's key has them only when they are set
ADDED_FIELDS = ("skills", "engine", "parallel", "targets", "teacher", "aggregate", "teacher_per_task", "skills_shown")
ROW_FILE = "row.json"  # a finished round's ledger row and evaluation rows: a re-run takes it as is


def _key(cfg: ImproveConfig, r: int, model: str) -> str:
    """What a round's result depends on: the config and the model it starts from."""
    import hashlib

    # the fields added after the first runs (the skills, serving and DAgger fields) enter only when
    # set, so the keys of rounds run before they existed stay the same
    config = cfg.model_dump(mode="json", exclude=cfg.at_default(*ADDED_FIELDS))
    blob = json.dumps({"config": config, "round": r, "model": model}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _finished(path: Path, key: str) -> dict[str, Any] | None:
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return row if row.pop("key", None) == key else None


def _keep(path: Path, row: dict[str, Any], rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    atomic_write(path, json.dumps({**row, "rows": rows, "key": key}, indent=1))
    return {**row, "rows": rows}


def _round(cfg: ImproveConfig, r: int, current: str, rd: Path, key: str) -> dict[str, Any]:
    """One round: sample, keep what the harness rewarded, fine-tune, evaluate. Each step resumes
    after a kill: finished episodes and cells are reused, the fine-tune continues from its last
    checkpoint (or returns the model it registered), and the round's row is written last."""
    from polar.llm.finetune import FinetuneConfig, finetune
    from polar.planners.dataset import build_dataset

    dagger = cfg.targets == "teacher"
    # DAgger's labels need the contexts, not the sampled tokens (the target is the teacher's)
    _, sample_cost = _run(cfg, f"sample-{r}", current, cfg.tasks, [100 * cfg.seed + r], cfg.episodes, SAMPLE_SEED,
                          cfg.temperature, rd / "sample", logprobs=not dagger, record_context=dagger)
    info = build_dataset([rd / "sample" / "cells"], rd / "data", calls=[rd / "sample" / "calls.jsonl"],
                         keep="both", val_fraction=0.0, teacher=cfg.teacher if dagger else None)
    row: dict[str, Any] = {"round": r, "sample": sample_cost, "kept_examples": info.counts.get("train", 0),
                           "skipped": info.skipped}
    data = rd / "data"
    if dagger:
        from polar.evals.dagger import aggregate

        data = rd / "train"
        row["train_data"] = aggregate([rd.parent / f"round-{j}" / "data" for j in range(1, r + 1)],
                                      [Path(a) for a in cfg.aggregate], cfg.teacher_per_task, cfg.seed, data)
    if info.counts.get("train", 0) == 0:
        row["note"] = ("no state the teacher could label" if dagger else
                       "nothing the harness rewarded") + ": the model is unchanged this round"
    else:
        t0, cpu0 = time.perf_counter(), _cpu_s()
        ft = FinetuneConfig.model_validate({"eval_examples": 0, "seed": cfg.seed, **cfg.finetune, "base": current,
                                            "data": str(data), "name": cfg.name,
                                            "work_dir": str(rd / "finetune")})
        entry = finetune(ft, resume=True)
        current = entry.ref
        row["train"] = {"model": current, "tokens": entry.provenance["tokens_seen"],
                        "steps": entry.provenance["steps"], "wall_s": time.perf_counter() - t0,
                        "cpu_s": _cpu_s() - cpu0}
    row["model"] = current
    rows: list[dict[str, Any]] = []
    if cfg.eval_tasks:
        rows, cost = evaluate(cfg, f"round-{r}", current, rd / "eval")
        row["eval"] = cost
    return _keep(rd / ROW_FILE, row, rows, key)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
