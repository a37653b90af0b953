"""The iteration loop of `polar llm rl`: sample -> update -> merge and convert -> serve -> sample.

Each iteration draws `groups` tasks (the curriculum), plays G episodes per (task, start state)
with the current model at `temperature` (the resumable eval runner; the model served by
llama.cpp, its call records keeping the sampled token ids and log-probs), turns the episodes'
rewards into group-relative advantages, and updates the policy (`polar.llm.rl`, GRPO), or, in
the baseline arm (`arm: filtered-sft`), fine-tunes on the decisions the harness rewarded
(today's `polar llm improve` round) from the same start, on the same number of episodes.

The run folder records what finished: `state.json`, rewritten atomically after each stage
(prepare, then per iteration sample, update, convert, eval, log). A run killed at any point
(kill -9) and started again with the same command resumes after the last finished stage; a
stage cut in the middle is redone (the sampling stage keeps the episodes' cells that
finished). One table row per iteration, `metrics.jsonl` and TensorBoard scalars (`tb/`) with
the cumulative env steps as the step; `results.json` holds every row.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from polar.config import StrictModel
from polar.evals.improve import (
    SAMPLE_SEED,
    ImproveConfig,
    _cpu_s,
    _planner_overrides,
    _server_cpu,
    evaluate,
)
from polar.evals.stages import STATE_FILE, StagedRun  # noqa: F401 - STATE_FILE: its name here before
from polar.evals.suite import SuiteHarness
from polar.files import atomic_write
from polar.llm.rl import GRPOConfig

STAGES = ("sample", "update", "convert", "eval", "log")


class Curriculum(StrictModel):
    """Tasks drawn by recent success: those between `low` and `high` (or not yet tried) weigh 1,
    the others `outside_weight` (still drawn now and then: a task can slip back)."""

    low: float = Field(default=0.2, ge=0, le=1)
    high: float = Field(default=0.8, ge=0, le=1)
    window: int = Field(default=3, ge=1, description="Iterations of sampled episodes the recent success is taken over.")
    outside_weight: float = Field(default=0.1, ge=0, le=1)


class RLConfig(StrictModel):
    model: str = Field(description="The starting model (and the KL reference): a shipped or registered name, or a built-in.")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", description="Label of the run's models (served names, registry name of the filtered-sft arm).")
    arm: Literal["grpo", "filtered-sft"] = Field(default="grpo", description="grpo: policy gradient; filtered-sft: the baseline, today's reward-filtered SFT round per iteration.")
    profile: str = "student"
    observation: Literal["predicates", "view", "memory"] = Field(default="predicates", description=(
        "What the planner's prompts show (ImproveConfig.observation); memory: the agent's memory of what "
        "it has seen (docs/memory.md): give the tasks `kwargs: {odometry: true}`, `skills: skills_memory` "
        "and a memory profile (student-memory)."))
    skills: str | None = Field(default=None, description="Skill library folder of the sampled and evaluated "
                               "episodes (e.g. skills_memory); None: the default library.")
    tasks: list[SuiteHarness] = Field(min_length=1)
    eval_tasks: list[SuiteHarness] = Field(default_factory=list, description="Held-out evaluation (episode seeds from 100000), greedy.")
    iterations: int = Field(default=10, ge=1, le=999)
    group_size: int = Field(default=4, ge=2, description="G: episodes per (task, start state).")
    groups: int = Field(default=2, ge=1, description="Groups per iteration, their tasks drawn by the curriculum.")
    temperature: float = Field(default=1.0, gt=0, le=2)
    reward: Literal["success", "return"] = "success"
    shaping: float = Field(default=0.0, ge=0, description="Per-decision shaping from predicate progress (0: off): this times the number of predicates a decision made true for the first time in its episode, added to its advantage. With shaping on, a group whose rewards are all equal is kept with advantage 0, so that its decisions' progress still carries a gradient.")
    explore_skills: float = Field(default=0.0, ge=0, le=1, description=(
        "The sampled episodes' chance per decision that its skill is drawn uniformly from those whose "
        "preconditions hold (the model writes the arguments; LLMProfile.explore_skills): a skill the start model "
        "never samples (the predicates model's `explore` in memory mode) can then earn an advantage. The "
        "evaluations never force. 0: off."))
    explore_objective: Literal["clip", "imitate"] = Field(default="clip", description=(
        "How the update trains a drawn decision: clip, GRPO's clipped ratio against the sampler's log-probs "
        "like any other; imitate, self-imitation (max(A, 0) times its log-likelihood, on the reply as the "
        "tokenizer writes it: polar.llm.rl.imitation_token_loss), since the draw, not the model, chose it."))
    curriculum: Curriculum = Field(default_factory=Curriculum)
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    finetune: dict[str, Any] = Field(default_factory=dict, description="filtered-sft arm: FinetuneConfig fields of each iteration's fine-tune.")
    gguf_type: Literal["f32", "f16", "bf16", "q8_0"] = "q8_0"
    eval_every: int = Field(default=0, ge=0, description="Evaluate every N iterations and after the last (0: never).")
    eval_start: bool = Field(default=False, description="Evaluate the starting model first.")
    eval_seeds: int = Field(default=1, ge=1)
    eval_episodes: int = Field(default=5, ge=1)
    seed: int = Field(default=0, ge=0, lt=100, description="The run's seed: sampled start states, the curriculum's draws, the update's shuffling.")
    port: int = Field(default=8017, ge=1, le=65535)
    threads: int | None = Field(default=None, ge=1, description="The model server's CPU threads.")
    max_decisions: int = Field(default=20, ge=1)
    engine: Literal["llamacpp", "llama-server"] | None = Field(
        default=None, description="The model server's engine (default: the profile's, llama-cpp-python's server, "
        "one decision at a time).")
    parallel: int = Field(default=1, ge=1, le=64, description=(
        "llama-server's slots (engine: llama-server): this many sampled episodes play at once (a group's G "
        "together when parallel >= group_size), and this many of an evaluation cell's episodes."))

    @model_validator(mode="after")
    def _slots_need_llama_server(self) -> RLConfig:
        if self.parallel > 1 and self.engine != "llama-server":
            raise ValueError(f"parallel: {self.parallel} needs engine: llama-server (llama-cpp-python's server "
                             f"answers one request at a time), not {self.engine or 'the profile default'}")
        return self

    def dumped(self) -> dict[str, Any]:
        """The config as the run folder records it: `engine`, `parallel`, `skills` and
        the draw's fields only when set, so a run started before they existed resumes."""
        return self.model_dump(mode="json", exclude={"iterations"} | self.at_default(
            "engine", "parallel", "skills", "explore_skills", "explore_objective"))


# --- the curriculum ---------------------------------------------------------------------------------------


def recent_success(history: list[dict[str, list[int]]], window: int) -> dict[str, float]:
    """Per task: successes / episodes over the last `window` iterations' sampled episodes
    (`history`: one {task: [successes, episodes]} per iteration, oldest first)."""
    totals: dict[str, list[int]] = {}
    for per_task in history[-window:]:
        for task, (k, n) in per_task.items():
            t = totals.setdefault(task, [0, 0])
            t[0], t[1] = t[0] + k, t[1] + n
    return {task: k / n for task, (k, n) in totals.items() if n}


def task_weights(labels: list[str], recent: dict[str, float], cur: Curriculum) -> dict[str, float]:
    return {t: 1.0 if t not in recent or cur.low <= recent[t] <= cur.high else cur.outside_weight for t in labels}


def draw_tasks(labels: list[str], recent: dict[str, float], cur: Curriculum, n: int, rng: random.Random) -> Counter[str]:
    """`n` draws (with replacement) of task labels by their curriculum weights."""
    w = task_weights(labels, recent, cur)
    if sum(w.values()) == 0:  # every task outside the band and outside_weight 0: draw uniformly
        w = dict.fromkeys(labels, 1.0)
    return Counter(rng.choices(labels, weights=[w[t] for t in labels], k=n))


# --- rewards ------------------------------------------------------------------------------------------------


def episode_reward(rec: Any, kind: str) -> float:
    from polar.planners.dataset import confirmed_success

    return float(confirmed_success(rec)) if kind == "success" else float(rec.episode_return)


def predicate_progress(rec: Any) -> list[int]:
    """Per decision: predicates its execution made true for the first time in the episode."""
    seen: set[str] = set()
    out = []
    for d in rec.decisions:
        if d.outcomes:
            seen |= set(d.outcomes[0].predicates_before)
        new = {p for o in d.outcomes for p in o.predicates_after} - seen
        seen |= new
        out.append(len(new))
    return out


def build_rollouts(episodes: list[Any], calls: dict[str, Any], tok: Any, cfg: RLConfig) -> tuple[list[Any], dict[str, Any]]:
    """Rollouts (each decision's model calls, with their episode's group-relative advantage, plus
    shaping) and the counts: groups used and dropped, calls not scored and why."""
    from polar.llm.rl import group_advantages, rollout_from_call

    groups: dict[str, list[Any]] = {}
    for rec in episodes:
        groups.setdefault(f"{rec.extra.get('cell_harness', rec.harness_id)}|{rec.seed}", []).append(rec)
    rollouts, counts = [], Counter()
    imitate = cfg.explore_objective == "imitate"
    for key, recs in groups.items():
        adv = group_advantages([episode_reward(r, cfg.reward) for r in recs])
        if adv is None:
            counts["groups_dropped_zero_std"] += 1
            if not cfg.shaping:
                continue
            # equal rewards (e.g. no episode solved): the episodes' advantage is 0, and only the
            # shaping of the decisions that made progress carries a gradient
            adv, shaping_only = [0.0] * len(recs), True
            counts["groups_shaping_only"] += 1
        else:
            shaping_only = False
            counts["groups_used"] += 1
        for rec, a in zip(recs, adv, strict=True):
            progress = predicate_progress(rec) if cfg.shaping else [0] * len(rec.decisions)
            for d, p in zip(rec.decisions, progress, strict=True):
                for c in d.llm_calls:
                    call = calls.get(c.call_id or "")
                    if call is None:
                        counts["calls_not_in_record"] += 1
                        continue
                    if shaping_only and p == 0:  # no advantage: only the KL term would move it
                        counts["calls_without_progress"] += 1
                        continue
                    r = rollout_from_call(tok, call, a + cfg.shaping * p, group=key, episode_id=rec.episode_id,
                                          imitate_forced=imitate)
                    if r is None:
                        counts["calls_without_sampled_ids"] += 1
                    elif r.imitate and r.advantage <= 0:  # self-imitation learns only from the better ones
                        counts["forced_calls_not_imitated"] += 1
                    else:
                        rollouts.append(r)
                        if r.imitate:
                            counts["forced_calls_imitated"] += 1
    return rollouts, dict(counts)


# --- the run -------------------------------------------------------------------------------------------------


class RLRun(StagedRun):
    """One run folder: its config, what finished (state.json, `polar.evals.stages`), and the stages."""

    def __init__(self, cfg: RLConfig, out: str | Path, progress: bool = True) -> None:
        super().__init__(out, cfg.dumped(), cfg.model)
        self.cfg, self.progress = cfg, progress
        self._tok: Any = None

    def improve_cfg(self) -> ImproveConfig:
        c = self.cfg
        return ImproveConfig(model=c.model, name=c.name, profile=c.profile, observation=c.observation,
                             skills=c.skills, tasks=c.tasks,
                             eval_tasks=c.eval_tasks, eval_seeds=c.eval_seeds, eval_episodes=c.eval_episodes,
                             port=c.port, threads=c.threads, max_decisions=c.max_decisions, seed=c.seed,
                             engine=c.engine, parallel=c.parallel)

    def tokenizer(self) -> Any:
        if self._tok is None:
            from polar.llm.finetune import load_tokenizer

            self._tok = load_tokenizer(self.start_checkpoint())
        return self._tok

    def start_checkpoint(self) -> Path:
        from polar.llm.rl import start_checkpoint

        return start_checkpoint(self.cfg.model, self.out / "start" / "checkpoint")

    # stages -------------------------------------------------------------------------------
    def prepare(self) -> None:
        if self.done(0, "prepare") is None:
            t0 = time.perf_counter()
            ckpt = self.start_checkpoint() if self.cfg.arm == "grpo" else None
            self.finish(0, "prepare", {"start_checkpoint": str(ckpt) if ckpt else None,
                                       "wall_s": time.perf_counter() - t0})
        if self.cfg.eval_start and self.cfg.eval_tasks and self.done(0, "eval") is None:
            self.eval_stage(0, self.cfg.model)

    def sample(self, it: int) -> dict[str, Any]:
        from polar.evals.runner import run_cells
        from polar.llm.serve import ensure_server, stop_own
        from polar.planners.dataset import index_calls
        from polar.planners.profile import load_planner_profile

        cfg, d = self.cfg, self.out / f"iter-{it}" / "sample"
        history = [self.done(j, "sample")["per_task"] for j in range(1, it) if self.done(j, "sample")]
        labels = [h.label for h in cfg.tasks]
        draws = draw_tasks(labels, recent_success(history, cfg.curriculum.window), cfg.curriculum, cfg.groups,
                           random.Random(1_000_003 * cfg.seed + it))
        model = self.model_before(it)
        overrides = self.sampling_overrides(model, d / "calls.jsonl")
        base = (1000 * cfg.seed + it) * 10  # suite seeds: start states eval_seed + 1000 * seed, distinct per run and iteration
        suite = self.sample_suite(it, draws, overrides, base)
        server = load_planner_profile(cfg.profile, overrides).server  # type: ignore[union-attr]
        stop_own(server.host, server.port)  # a server a killed run left behind (another model, maybe)
        t0, cpu0 = time.perf_counter(), _cpu_s()
        probe: dict[str, Any] = {}
        try:
            ensure_server(server, lambda m: None)
            if cfg.arm == "grpo":  # the trainer must split text as the server does, before anything is sampled
                from polar.llm.rl import TOKENIZER_PROBE, check_tokenizer
                from polar.llm.tokens import ServerTokenizer

                check_tokenizer(self.tokenizer(), ServerTokenizer(server.api_base).tokenize)
                probe = {"tokenizer_probe": "equal", "probe_tokens": len(self.tokenizer()(TOKENIZER_PROBE)["input_ids"])}
            # one agent (g0, g1, ...) per episode of a group, so `parallel` slots play that many cells at once
            summary = run_cells(suite, d, workers=0, progress=self.progress, cells_at_once=cfg.parallel,
                                only=lambda c: c.seed - base < draws[c.harness])
            server_cpu = _server_cpu(server.host, server.port)
        finally:
            stop_own(server.host, server.port)
        wall = time.perf_counter() - t0
        episodes = []
        for cell in summary.results:
            for e in cell.episodes:
                episodes.append(e.model_copy(update={"extra": {**e.extra, "cell_harness": cell.cell.harness}}))
        per_task: dict[str, list[int]] = {}
        for e in episodes:
            t = per_task.setdefault(e.extra["cell_harness"], [0, 0])
            t[0], t[1] = t[0] + int(episode_reward(e, "success")), t[1] + 1
        info: dict[str, Any] = {
            "model": model, "draws": dict(draws), "per_task": per_task, "episodes": len(episodes),
            "success": sum(k for k, _ in per_task.values()) / max(len(episodes), 1),
            "mean_return": sum(e.episode_return for e in episodes) / max(len(episodes), 1),
            "env_steps": sum(e.env_steps for e in episodes), "decisions": sum(len(e.decisions) for e in episodes),
            "prompt_tokens": sum(e.prompt_tokens for e in episodes),
            "completion_tokens": sum(e.completion_tokens for e in episodes), "wall_s": wall,
            "cpu_s": _cpu_s() - cpu0 + server_cpu, "engine": server.engine or "llamacpp", "lanes": cfg.parallel,
            **probe}
        info["sampled_tokens_per_s"] = info["completion_tokens"] / max(wall, 1e-9)
        calls = index_calls([d / "calls.jsonl"])
        if cfg.explore_skills:  # which skills the draw forced, over the iteration's calls
            info["forced_skills"] = dict(Counter(f for c in calls.values() if (f := getattr(c, "forced_skill", None))))
        if cfg.arm == "grpo":
            from polar.llm.rl import write_rollouts

            rollouts, counts = build_rollouts(episodes, calls, self.tokenizer(), cfg)
            write_rollouts(d.parent / "rollouts.jsonl", rollouts)
            info |= {"rollouts": len(rollouts), **counts}
        return self.finish(it, "sample", info)

    def sampling_overrides(self, model: str, record: Path) -> dict[str, Any]:
        """The profile overrides of the sampled episodes: `model` at the run's temperature, log-probs
        kept, a sampler seed per request on llama-server, the skill draw when `explore_skills` is set."""
        cfg = self.cfg
        overrides = _planner_overrides(self.improve_cfg(), model, cfg.temperature, record, True)
        if cfg.engine == "llama-server":  # else concurrent requests come back alike (polar.llm.settings)
            overrides["seed_per_call"] = True
        if cfg.explore_skills:
            overrides["explore_skills"] = cfg.explore_skills
        return overrides

    def sample_suite(self, it: int, draws: dict[str, int], overrides: dict[str, Any], base: int) -> dict[str, Any]:
        """Iteration `it`'s sampling suite: one agent per episode of a group (g0, g1, ...), the
        drawn tasks, `max(draws)` start states from suite seed `base` on."""
        cfg = self.cfg
        agent = {"kind": "planner", "planner": cfg.profile, "overrides": overrides,
                 "budget": {"decisions": cfg.max_decisions}} | ({"skills": cfg.skills} if cfg.skills else {})
        return {"name": f"{cfg.name}-sample-{it}", "episodes": 1, "eval_seed": SAMPLE_SEED, "workers": 0, "trace": 0,
                "agents": [{"name": f"g{k}", **agent} for k in range(cfg.group_size)],
                "harnesses": [h.model_dump(mode="json") for h in cfg.tasks if h.label in draws],
                "seeds": list(range(base, base + max(draws.values())))}

    def update(self, it: int) -> dict[str, Any]:
        d = self.out / f"iter-{it}"
        t0, cpu0 = time.perf_counter(), _cpu_s()
        if self.cfg.arm == "filtered-sft":
            info = self._filtered_sft(it)
        else:
            from polar.llm.rl import GRPOTrainer, read_rollouts

            rollouts = read_rollouts(d / "rollouts.jsonl")
            previous = self.adapter_before(it)
            if not rollouts:
                info = {"steps": 0, "adapter": previous,
                        "note": "no rollout with a non-zero advantage: the model is unchanged this iteration"}
            else:
                cfg = self.cfg.grpo.model_copy(update={"seed": self.cfg.grpo.seed + 1000 * self.cfg.seed + it})
                trainer = GRPOTrainer(self.start_checkpoint(), cfg, adapter=previous)
                info = trainer.update(rollouts, progress=self.progress)
                info["adapter"] = str(trainer.save(d / "adapter"))
        info |= {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu_s() - cpu0}
        return self.finish(it, "update", info)

    def _filtered_sft(self, it: int) -> dict[str, Any]:
        """Today's improve round: the decisions the harness rewarded, fine-tuned from the current model."""
        from polar.llm.finetune import FinetuneConfig, finetune
        from polar.planners.dataset import build_dataset

        d = self.out / f"iter-{it}"
        data = build_dataset([d / "sample" / "cells"], d / "data", calls=[d / "sample" / "calls.jsonl"],
                             keep="both", val_fraction=0.0)
        kept = data.counts.get("train", 0)
        if kept == 0:
            return {"steps": 0, "kept_examples": 0, "model": None,
                    "note": "nothing the harness rewarded: the model is unchanged this iteration"}
        ft = FinetuneConfig.model_validate({"eval_examples": 0, "seed": self.cfg.seed, **self.cfg.finetune,
                                            "base": self.model_before(it), "data": str(d / "data"),
                                            "name": self.cfg.name, "work_dir": str(d / "finetune"),
                                            "gguf_type": self.cfg.gguf_type})
        entry = finetune(ft, resume=True, progress=self.progress)
        p = entry.provenance
        return {"steps": p["steps"], "tokens": p["tokens_seen"], "kept_examples": kept, "model": entry.ref,
                "tokens_per_s": p["tokens_seen"] / max(p["wall_s"], 1e-9)}

    def convert(self, it: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        up = self.done(it, "update") or {}
        if self.cfg.arm == "filtered-sft":  # finetune converted and registered it already
            model = up.get("model") or self.model_before(it)
        elif up.get("steps"):
            from polar.llm.rl import merge_to_gguf

            gguf = self.out / f"iter-{it}" / f"{self.cfg.name}-it{it}.gguf"
            model = str(merge_to_gguf(self.start_checkpoint(), up["adapter"], gguf, self.cfg.gguf_type).resolve())
        else:
            model = self.model_before(it)
        return self.finish(it, "convert", {"model": model, "wall_s": time.perf_counter() - t0})

    def eval_stage(self, it: int, model: str) -> dict[str, Any]:
        rows, cost = evaluate(self.improve_cfg(), f"iter-{it}", model, self.out / f"iter-{it}" / "eval")
        success = sum(r["successes"] for r in rows) / max(sum(r["episodes"] for r in rows), 1)
        return self.finish(it, "eval", {"rows": rows, "success": success, "cost": cost})

    def eval_due(self, it: int, last: int) -> bool:
        c = self.cfg
        return bool(c.eval_tasks) and c.eval_every > 0 and (it % c.eval_every == 0 or it == last)

    # the loop -----------------------------------------------------------------------------
    def row(self, it: int) -> dict[str, Any]:
        """The iteration's table row (and metrics.jsonl / TensorBoard row)."""
        s, u, c = self.done(it, "sample"), self.done(it, "update"), self.done(it, "convert")
        before = [self.done(j, "sample") for j in range(1, it + 1)]
        walls = [sum(_wall_s(self.done(j, st)) for st in ("sample", "update", "convert", "eval")) for j in range(1, it + 1)]
        ev = self.done(it, "eval")
        return {"iteration": it, "env_steps": sum(b["env_steps"] for b in before if b),
                "episodes_total": sum(b["episodes"] for b in before if b), "wall_total_s": sum(walls),
                "success": s["success"], "mean_return": s["mean_return"], "episodes": s["episodes"],
                "groups_used": s.get("groups_used", 0), "groups_dropped": s.get("groups_dropped_zero_std", 0),
                "rollouts": s.get("rollouts", 0), "kl": u.get("kl"), "clip_frac": u.get("clip_frac"),
                "loss": u.get("loss"), "sample_tokens_per_s": s["sampled_tokens_per_s"],
                "train_tokens_per_s": u.get("tokens_per_s"), "sample_s": s["wall_s"],
                "update_s": u["wall_s"], "convert_s": c["wall_s"], "eval_success": ev["success"] if ev else None,
                "model": c["model"]}  # None: no update (or no evaluation) this iteration

    def run(self, iterations: int | None = None) -> dict[str, Any]:
        from polar.rl.common.runlog import RunLog

        n = iterations or self.cfg.iterations
        self.prepare()
        logged = self.state.get("logged", {"rows": 0, "events": 0})
        log = RunLog(self.out, logged["rows"], logged["events"])
        log.trim()  # rows written after the last recorded count (a kill between the two) go
        with contextlib.suppress(ImportError):  # TensorBoard not installed: metrics.jsonl only
            log.open()
        try:
            for it in range(1, n + 1):
                if self.done(it, "log") is not None:
                    continue
                self.train_stages(it)
                if self.eval_due(it, n) and self.done(it, "eval") is None:
                    self.eval_stage(it, self.done(it, "convert")["model"])
                row = self.row(it)
                log.write({k: v for k, v in row.items() if k != "model" and v is not None})
                log.flush()
                _print_row(row, header=it == 1 or not any(self.done(j, "log") for j in range(1, it)))
                self.state["logged"] = {"rows": log.rows, "events": log.events}
                self.finish(it, "log", {"row": row})
                self.write_results()  # results.json follows the run: one more row per iteration
        finally:
            log.close()
        return self.write_results()

    def write_results(self) -> dict[str, Any]:
        rows = self.logged_rows()
        evals = [{"iteration": int(j), **{k: v for k, v in st["eval"].items() if k != "cost"}}
                 for j, st in sorted(self.state["iterations"].items(), key=lambda kv: int(kv[0])) if "eval" in st]
        res = {"config": self.cfg.model_dump(mode="json"), "rows": rows, "evals": evals,
               "prepare": self.done(0, "prepare")}
        atomic_write(self.out / "results.json", json.dumps(res, indent=1))
        return res


def _wall_s(record: dict[str, Any] | None) -> float:
    """A finished stage's wall time (an evaluation keeps it in its `cost`); 0 for a stage not run."""
    if record is None:
        return 0.0
    return float(record["wall_s"] if "wall_s" in record else record.get("cost", {}).get("wall_s", 0.0))


COLUMNS = [("iteration", "iter", "{:>4}"), ("episodes_total", "episodes", "{:>8}"), ("success", "success", "{:>7.2f}"),
           ("mean_return", "return", "{:>6.3f}"), ("groups_used", "groups", "{:>6}"), ("groups_dropped", "dropped", "{:>7}"),
           ("rollouts", "seqs", "{:>5}"), ("kl", "KL", "{:>8.5f}"), ("sample_tokens_per_s", "sample tok/s", "{:>12.1f}"),
           ("train_tokens_per_s", "train tok/s", "{:>11.1f}"), ("sample_s", "sample s", "{:>8.0f}"),
           ("update_s", "update s", "{:>8.0f}"), ("convert_s", "convert s", "{:>9.0f}"), ("eval_success", "eval", "{:>5.2f}")]


def _print_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print("  ".join(f"{h:>{len(f.format(0))}}" for _k, h, f in COLUMNS), flush=True)
    print("  ".join(f.format(row[k]) if row[k] is not None else f"{'-':>{len(f.format(0))}}" for k, _h, f in COLUMNS),
          flush=True)


def rl(cfg: RLConfig, out: str | Path, *, iterations: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) the iterations; returns results.json's content."""
    return RLRun(cfg, out, progress).run(iterations)
