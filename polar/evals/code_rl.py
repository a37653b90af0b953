"""RL for code mode from the sandbox's return (`polar code rl`): GRPO over whole programs.

Each iteration, for every task: one training episode seed, G programs sampled from the current
model at `temperature` (the model served by llama.cpp, the call records keeping the sampled
token ids and log-probs), each checked by the restricted gate and played on that seed in the
sandbox (docker for committed runs). A program's reward is its episode return (the task's
lowest return when it was refused, raised or timed out); the group-relative advantage
(r - mean) / std is over the G programs of one (task, seed); a group whose returns are all
equal is dropped, and counted. The update is `polar.llm.rl`'s objective (PPO-clip on the
sampled tokens, k3 KL to the starting model, LoRA on the top layers); the merged model is
converted to GGUF and served for the next iteration.

Stages per iteration (`polar.evals.stages`, resumable after a kill): sample -> update ->
convert -> log. `results.json` holds a row per iteration with the cumulative env steps: every
step of every sampled program is charged.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from polar.config import StrictModel
from polar.evals.code_eval import code_llm
from polar.evals.code_runner import ProgramRecord, docker_profile, run_program
from polar.evals.code_tasks import TASKS, task_messages
from polar.evals.stages import StagedRun
from polar.files import atomic_write
from polar.llm.rl import GRPOConfig
from polar.sandboxes.profiles import SandboxProfile


class CodeRLConfig(StrictModel):
    model: str = Field(description="The starting model (and the KL reference): the SFT code model, e.g. code-sft@1.")
    name: str = Field(default="code-rl", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    tasks: list[str] = Field(default_factory=lambda: list(TASKS))
    iterations: int = Field(default=4, ge=1)
    group_size: int = Field(default=8, ge=2, description="G: programs per (task, seed).")
    temperature: float = Field(default=1.0, gt=0)
    max_tokens: int = Field(default=160, ge=16)
    train_seed_base: int = Field(default=10_000, description="Training episode seeds: base + 100 * seed + iteration (held-out eval seeds are below).")
    episodes: int = Field(default=1, ge=1, description=(
        "Start states each program plays (the iteration's seed, then that seed + 1,000,000 * j); its reward is "
        "the mean return over them, its success the share solved, every step charged. More than one ranks "
        "programs by how many starts they solve, not by how fast they solve one."))
    backend: str = Field(default="docker", description="The sandbox that plays programs: docker (committed runs) or process (tests).")
    port: int = Field(default=8032, ge=1, le=65535)
    threads: int = Field(default=1, ge=1, description="llama.cpp threads while sampling.")
    gguf_type: str = "q8_0"
    grpo: GRPOConfig = Field(default_factory=lambda: GRPOConfig(threads=1, minibatch=8, kl_coef=0.04))
    seed: int = 0


def _profile(backend: str) -> SandboxProfile:
    return docker_profile() if backend == "docker" else SandboxProfile(backend=backend)  # type: ignore[arg-type]


def train_seeds(seed: int, episodes: int) -> list[int]:
    """The start states a sampled program plays: the iteration's seed, then seed + 1,000,000 * j
    (clear of every run's and iteration's seeds and of the held-out ones)."""
    return [seed + 1_000_000 * j for j in range(episodes)]


def score_program(rec: ProgramRecord) -> dict[str, Any]:
    """A played program's record for GRPO: reward the mean return over its episodes, success the
    share solved (a single episode: its return and whether it solved), the steps of all of them,
    the first error (why it earned the lowest return), the gate's verdict and the program."""
    runs = rec.episodes
    error = next((r.error for r in runs if r.error is not None), None)
    return {"reward": statistics.mean(r.ret for r in runs), "success": statistics.mean(float(r.success) for r in runs),
            "steps": sum(r.steps for r in runs), "episodes": len(runs), "error": error, "gate": rec.gate,
            "program": rec.program}


class CodeRLRun(StagedRun):
    def __init__(self, cfg: CodeRLConfig, out: str | Path) -> None:
        # `episodes` is recorded only when set, so a run folder started before it existed resumes
        super().__init__(out, cfg.model_dump(mode="json", exclude={"iterations"} | cfg.at_default("episodes")),
                         cfg.model)
        self.cfg = cfg
        self._tok: Any = None

    def start_checkpoint(self) -> Path:
        from polar.llm.rl import start_checkpoint

        return start_checkpoint(self.cfg.model, self.out / "start" / "checkpoint")

    def tokenizer(self) -> Any:
        if self._tok is None:
            from polar.llm.finetune import load_tokenizer

            self._tok = load_tokenizer(self.start_checkpoint())
        return self._tok

    # stages ---------------------------------------------------------------------------------
    def sample(self, it: int) -> dict[str, Any]:
        from polar.llm.record import read_records
        from polar.llm.rl import (
            check_tokenizer,
            group_advantages,
            rollout_from_call,
            write_rollouts,
        )
        from polar.llm.serve import ensure_server, stop_own
        from polar.llm.tokens import ServerTokenizer

        cfg, d = self.cfg, self.out / f"iter-{it}"
        d.mkdir(parents=True, exist_ok=True)
        calls_path = d / "calls.jsonl"
        calls_path.unlink(missing_ok=True)  # a stage cut in the middle is redone whole
        model = self.model_before(it)
        client = code_llm(model, port=cfg.port, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                          threads=cfg.threads, record=calls_path)
        server = client.settings.server
        assert server is not None
        seed = cfg.train_seed_base + 100 * cfg.seed + it
        profile = _profile(cfg.backend)
        t0 = time.perf_counter()
        programs: list[dict[str, Any]] = []
        stop_own(server.host, server.port)
        try:
            ensure_server(server, lambda m: None)
            check_tokenizer(self.tokenizer(), ServerTokenizer(server.api_base).tokenize)
            for name in cfg.tasks:
                msgs = task_messages(TASKS[name])
                for g in range(cfg.group_size):
                    resp = client.complete(msgs, template="code_task", replay=False)
                    played = score_program(run_program(TASKS[name], resp.content, train_seeds(seed, cfg.episodes), profile))
                    programs.append({"task": name, "seed": seed, "g": g, "call_id": resp.call.call_id, **played,
                                     "completion_tokens": resp.call.completion_tokens})
        finally:
            stop_own(server.host, server.port)
        atomic_write(d / "programs.jsonl", "".join(json.dumps(p) + "\n" for p in programs))
        calls = {c.call_id: c for c in read_records(calls_path)}
        rollouts, dropped, unscored = [], 0, 0
        per_task: dict[str, Any] = {}
        for name in cfg.tasks:
            group = [p for p in programs if p["task"] == name]
            rewards = [p["reward"] for p in group]
            per_task[name] = {"mean_return": statistics.mean(rewards), "success": statistics.mean(p["success"] for p in group),
                              "refused": sum(p["gate"] != "ok" for p in group), "errors": sum(p["error"] is not None for p in group)}
            adv = group_advantages(rewards)
            if adv is None:
                dropped += 1
                continue
            for p, a in zip(group, adv, strict=True):
                r = rollout_from_call(self.tokenizer(), calls[p["call_id"]], a, group=f"{name}:{seed}")
                if r is None:
                    unscored += 1
                else:
                    rollouts.append(r)
        write_rollouts(d / "rollouts.jsonl", rollouts)
        return self.finish(it, "sample", {
            "model": model, "seed": seed, "programs": len(programs), "env_steps": sum(p["steps"] for p in programs),
            "completion_tokens": sum(p["completion_tokens"] for p in programs), "per_task": per_task,
            "success": statistics.mean(p["success"] for p in programs), "groups_dropped_zero_std": dropped,
            "unscored": unscored, "rollouts": len(rollouts), "wall_s": time.perf_counter() - t0})

    def update(self, it: int) -> dict[str, Any]:
        from polar.llm.rl import GRPOTrainer, read_rollouts

        d = self.out / f"iter-{it}"
        t0 = time.perf_counter()
        rollouts = read_rollouts(d / "rollouts.jsonl")
        previous = self.adapter_before(it)
        if not rollouts:
            info: dict[str, Any] = {"steps": 0, "adapter": previous,
                                    "note": "no rollout with a non-zero advantage: the model is unchanged"}
        else:
            grpo = self.cfg.grpo.model_copy(update={"seed": self.cfg.grpo.seed + 1000 * self.cfg.seed + it})
            trainer = GRPOTrainer(self.start_checkpoint(), grpo, adapter=previous)
            info = trainer.update(rollouts)
            info["adapter"] = str(trainer.save(d / "adapter"))
        return self.finish(it, "update", info | {"wall_s": time.perf_counter() - t0})

    def convert(self, it: int) -> dict[str, Any]:
        from polar.llm.rl import merge_to_gguf

        t0 = time.perf_counter()
        up = self.done(it, "update") or {}
        if up.get("steps"):
            gguf = self.out / f"iter-{it}" / f"{self.cfg.name}-it{it}.gguf"
            model = str(merge_to_gguf(self.start_checkpoint(), up["adapter"], gguf, self.cfg.gguf_type).resolve())
        else:
            model = self.model_before(it)
        return self.finish(it, "convert", {"model": model, "wall_s": time.perf_counter() - t0})

    # the loop -------------------------------------------------------------------------------
    def row(self, it: int) -> dict[str, Any]:
        s, u, c = self.done(it, "sample"), self.done(it, "update"), self.done(it, "convert")
        steps = sum(self.done(j, "sample")["env_steps"] for j in range(1, it + 1) if self.done(j, "sample"))
        return {"iteration": it, "env_steps_total": steps, "programs": s["programs"], "success": s["success"],
                "per_task": s["per_task"], "rollouts": s["rollouts"], "groups_dropped": s["groups_dropped_zero_std"],
                "kl": u.get("kl"), "loss": u.get("loss"), "clip_frac": u.get("clip_frac"),
                "sample_s": s["wall_s"], "update_s": u["wall_s"], "convert_s": c["wall_s"], "model": c["model"]}

    def run(self, iterations: int | None = None) -> dict[str, Any]:
        n = iterations or self.cfg.iterations
        for it in range(1, n + 1):
            if self.done(it, "log") is not None:
                continue
            self.train_stages(it)
            row = self.row(it)
            tasks = "  ".join(f"{k} {v['success']:.2f}" for k, v in row["per_task"].items())
            print(f"iter {it}: env steps {row['env_steps_total']}, success {row['success']:.2f} ({tasks}), "
                  f"rollouts {row['rollouts']}, dropped {row['groups_dropped']}, kl {row['kl']}, "
                  f"sample {row['sample_s']:.0f} s, update {row['update_s']:.0f} s", flush=True)
            self.finish(it, "log", {"row": row})
            self.write_results()
        return self.write_results()

    def write_results(self) -> dict[str, Any]:
        rows = self.logged_rows()
        res = {"config": self.cfg.model_dump(mode="json"), "rows": rows}
        atomic_write(self.out / "results.json", json.dumps(res, indent=1))
        return res


def code_rl(cfg: CodeRLConfig, out: str | Path, *, iterations: int | None = None) -> dict[str, Any]:
    """Run (or resume) the iterations; returns results.json's content."""
    return CodeRLRun(cfg, out).run(iterations)
