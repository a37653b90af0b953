"""`polar llm rl`'s loop: the curriculum, rewards and groups into rollouts, the recipe, and (slow)
a real run killed with SIGKILL at a stage and resumed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pydantic
import pytest
import yaml

from polar.config import load_yaml
from polar.episode import DecisionRecord, EpisodeRecord, LLMCallRecord, Outcome
from polar.errors import ConfigError
from polar.evals.planner_rl import (
    Curriculum,
    RLConfig,
    RLRun,
    build_rollouts,
    draw_tasks,
    predicate_progress,
    recent_success,
    task_weights,
)
from polar.evals.suite import SuiteHarness
from tests.llm.engine import free_port, require_engine, require_model

REPO = Path(__file__).resolve().parents[2]


def test_recent_success_is_taken_over_the_window() -> None:
    history = [{"A": [0, 4]}, {"A": [4, 4], "B": [1, 4]}, {"A": [2, 4]}]
    assert recent_success(history, 2) == {"A": 6 / 8, "B": 1 / 4}
    assert recent_success(history, 1) == {"A": 0.5}
    assert recent_success(history, 3)["A"] == 6 / 12


def test_the_curriculum_favours_tasks_between_20_and_80_percent() -> None:
    cur = Curriculum()
    labels = ["solved", "hopeless", "learning", "edge-low", "edge-high", "new"]
    recent = {"solved": 1.0, "hopeless": 0.0, "learning": 0.5, "edge-low": 0.2, "edge-high": 0.8}
    w = task_weights(labels, recent, cur)
    assert w == {"solved": 0.1, "hopeless": 0.1, "learning": 1.0, "edge-low": 1.0, "edge-high": 1.0, "new": 1.0}
    draws = draw_tasks(labels, recent, cur, 6000, random.Random(0))
    assert sum(draws.values()) == 6000
    for inside in ("learning", "edge-low", "edge-high", "new"):
        for outside in ("solved", "hopeless"):
            assert draws[inside] > 5 * draws[outside]
    assert draws["solved"] > 0  # still drawn now and then: a solved task can slip back
    # the same seed draws the same tasks; every task outside the band with weight 0: uniform
    assert draw_tasks(labels, recent, cur, 10, random.Random(3)) == draw_tasks(labels, recent, cur, 10, random.Random(3))
    strict = Curriculum(outside_weight=0.0)
    assert set(draw_tasks(["a", "b"], {"a": 1.0, "b": 0.0}, strict, 200, random.Random(0))) == {"a", "b"}
    assert set(draw_tasks(["a", "b"], {"a": 1.0, "b": 0.5}, strict, 200, random.Random(0))) == {"b"}


def _episode(i: int, seed: int, success: bool, call_ids: list[str], preds: list[tuple[list[str], list[str]]] | None = None,
             harness: str = "T") -> EpisodeRecord:
    decisions = []
    for k, cid in enumerate(call_ids):
        before, after = (preds or [([], [])] * len(call_ids))[k]
        decisions.append(DecisionRecord(index=k, decision={"kind": "skill", "skill": "goto", "args": {}},
                                        outcomes=[Outcome(kind="skill", success=True, reason="ok", predicates_before=before,
                                                          predicates_after=after)],
                                        llm_calls=[LLMCallRecord(model="m", call_id=cid)]))
    return EpisodeRecord(episode_id=f"e{i}", agent="planner:x", harness_id="minigrid:X", task="t", seed=seed,
                         success=success, episode_return=0.9 if success else 0.0, env_steps=3, terminated=success,
                         truncated=False, decisions=decisions,
                         extra={"success_source": "harness", "cell_harness": harness})


def test_predicate_progress_counts_facts_made_true_for_the_first_time() -> None:
    rec = _episode(0, 1, True, ["a", "b", "c", "d"], preds=[
        ([], ["at(key)"]), (["at(key)"], ["at(key)", "carrying(key)"]),
        (["carrying(key)"], ["carrying(key)"]),  # nothing new
        (["carrying(key)"], ["at(key)", "carrying(key)"])])  # at(key) again: not new
    assert predicate_progress(rec) == [1, 1, 0, 0]


def test_groups_become_advantages_and_zero_std_groups_are_dropped_and_counted() -> None:
    require_model("smollm2-135m")
    from polar.llm.finetune import load_tokenizer
    from polar.llm.record import CallRecord
    from polar.llm.rl import prompt_token_ids

    tok = load_tokenizer("smollm2-135m")
    messages = [{"role": "user", "content": "Goal: at(goal)"}]
    n_prompt = len(prompt_token_ids(tok, messages))
    reply = '{"decision": {"kind": "finish", "success": true}}'
    ids = tok(reply, add_special_tokens=False)["input_ids"]

    def call(cid: str) -> CallRecord:
        return CallRecord(call_id=cid, time=0.0, model="m", messages=messages, reply=reply, prompt_tokens=n_prompt,
                          completion_tokens=len(ids), token_ids=ids, token_ids_source="sampled",
                          logprobs={"content": [{"token": tok.decode([i]), "logprob": -0.2} for i in ids]})

    episodes = [_episode(0, 7, True, ["a1", "a2"]), _episode(1, 7, False, ["b1"]),  # group 7: 1 of 2
                _episode(2, 8, True, ["c1"]), _episode(3, 8, True, ["d1"])]  # group 8: all solved
    calls = {c: call(c) for c in ("a1", "a2", "b1", "c1")}  # d1 is missing from the record
    cfg = RLConfig(model="smollm2-135m", name="t", tasks=[{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}])
    rollouts, counts = build_rollouts(episodes, calls, tok, cfg)
    assert counts == {"groups_used": 1, "groups_dropped_zero_std": 1}
    assert [(r.call_id, r.advantage) for r in rollouts] == [("a1", 1.0), ("a2", 1.0), ("b1", -1.0)]
    assert {r.group for r in rollouts} == {"T|7"}
    # shaping (off unless asked): each decision's predicate progress times the coefficient
    shaped = [_episode(0, 7, True, ["a1", "a2"], preds=[([], ["p"]), (["p"], ["p", "q", "r"])]), _episode(1, 7, False, ["b1"])]
    rollouts, _ = build_rollouts(shaped, calls, tok, cfg.model_copy(update={"shaping": 0.1}))
    assert [round(r.advantage, 6) for r in rollouts] == [1.1, 1.2, -1.0]
    # a group with equal rewards (none solved): with shaping on, its decisions that made progress
    # still carry their shaping (the episodes' advantage 0); those that made none are left out
    failed = [_episode(0, 9, False, ["a1", "a2"], preds=[([], ["p"]), (["p"], ["p"])]),
              _episode(1, 9, False, ["b1"], preds=[([], ["p", "q"])])]
    rollouts, counts = build_rollouts(failed, calls, tok, cfg.model_copy(update={"shaping": 0.1}))
    assert [(r.call_id, round(r.advantage, 6)) for r in rollouts] == [("a1", 0.1), ("b1", 0.2)]
    assert counts == {"groups_dropped_zero_std": 1, "groups_shaping_only": 1, "calls_without_progress": 1}
    assert build_rollouts(failed, calls, tok, cfg) == ([], {"groups_dropped_zero_std": 1})  # shaping off: dropped
    # explore_objective imitate: a drawn decision of a better episode is imitated, of a worse one left out
    forced = calls | {c: calls[c].model_copy(update={"forced_skill": "goto"}) for c in ("a2", "b1")}
    rollouts, counts = build_rollouts(episodes, forced, tok, cfg.model_copy(update={"explore_objective": "imitate"}))
    assert [(r.call_id, r.imitate) for r in rollouts] == [("a1", False), ("a2", True)]
    assert counts == {"groups_used": 1, "groups_dropped_zero_std": 1, "forced_calls_imitated": 1,
                      "forced_calls_not_imitated": 1}


@pytest.mark.parametrize("pair", [("rl.yaml", "rl-filtered-sft.yaml"), ("rl-seed2.yaml", "rl-seed2-filtered-sft.yaml")])
def test_the_shipped_recipes_load_and_a_changed_config_is_refused_on_resume(tmp_path: Path, pair) -> None:  # noqa: ANN001
    grpo = load_yaml(REPO / "evals" / "planner-training" / pair[0], RLConfig)
    base = load_yaml(REPO / "evals" / "planner-training" / pair[1], RLConfig)
    # the two arms differ only in the update: same start, tasks, groups, episodes and serving
    same = {"model", "tasks", "group_size", "groups", "temperature", "reward", "seed", "max_decisions", "eval_tasks",
            "eval_episodes", "engine", "parallel", "threads", "iterations"}
    assert {k: getattr(grpo, k) for k in same} == {k: getattr(base, k) for k in same}
    assert (grpo.arm, base.arm) == ("grpo", "filtered-sft") and grpo.port != base.port
    run = RLRun(grpo, tmp_path, progress=False)
    run.finish(0, "prepare", {"start_checkpoint": None, "wall_s": 0.0})
    RLRun(grpo.model_copy(update={"iterations": 99}), tmp_path)  # more iterations: fine
    with pytest.raises(ConfigError, match="holds a run with another config"):
        RLRun(grpo.model_copy(update={"temperature": 0.3}), tmp_path)


def test_concurrent_sampling_is_a_recipe_setting_that_leaves_old_runs_resumable(tmp_path: Path) -> None:
    grpo = load_yaml(REPO / "evals" / "planner-training" / "rl.yaml", RLConfig)
    # the defaults (one decision at a time, the profile's engine) are not in the recorded config,
    # so a run folder started before the settings existed resumes
    assert "engine" not in grpo.dumped() and "parallel" not in grpo.dumped()
    RLRun(grpo, tmp_path, progress=False).finish(0, "prepare", {"start_checkpoint": None, "wall_s": 0.0})
    RLRun(grpo.model_copy(update={"engine": None, "parallel": 1}), tmp_path)
    slots = grpo.model_copy(update={"engine": "llama-server", "parallel": 4})
    assert slots.dumped()["parallel"] == 4 and slots.dumped()["engine"] == "llama-server"
    with pytest.raises(ConfigError, match="holds a run with another config"):
        RLRun(slots, tmp_path)
    # the served model gets the engine and the slots (sampling and the evaluations)
    server = RLRun(slots, tmp_path / "other").improve_cfg()
    assert (server.engine, server.parallel) == ("llama-server", 4)
    with pytest.raises(ValueError, match="parallel: 4 needs engine: llama-server"):
        RLConfig.model_validate(grpo.model_dump() | {"parallel": 4})


# --- a real run, killed and resumed ------------------------------------------------------------------------


def _stages(out: Path) -> list[str]:
    p = out / "state.json"
    if not p.exists():
        return []
    try:
        state = json.loads(p.read_text())
    except json.JSONDecodeError:  # never: state.json is replaced atomically
        raise AssertionError(f"{p}: torn state file") from None
    return [f"{it}/{st}" for it, stages in state["iterations"].items() for st in stages]


@pytest.mark.slow
@pytest.mark.timeout(3000)
@pytest.mark.parametrize("kill_after", ["1/sample", "1/update"])
def test_a_run_killed_after_a_stage_resumes_from_it(tmp_path: Path, kill_after: str) -> None:
    """`polar llm rl` on the shipped polar-planner, one group of 3 episodes on DoorKey-5x5 (8
    decisions at most, reward: the return, so episodes that both succeed still differ):
    SIGKILL as soon as `kill_after` is recorded (the process group: the driver and whatever
    stage it had started), then the same command finishes the run (update, merge + convert,
    then a second iteration served by the converted model) without redoing a finished stage."""
    require_engine()
    require_model("smollm2-135m")
    port = free_port()
    recipe = {"model": "polar-planner", "name": "rl-kill", "profile": "student",
              "tasks": [{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}],
              "iterations": 2, "group_size": 3, "groups": 1, "temperature": 1.0, "max_decisions": 8,
              "port": port, "threads": 1, "reward": "return",
              "grpo": {"minibatch": 4, "threads": 1, "learning_rate": 1e-4}}
    (tmp_path / "rl.yaml").write_text(yaml.safe_dump(recipe))
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "POLAR_SKILLS": str(REPO / "skills"),
           "POLAR_MODELS": str(tmp_path / "models.json")}
    cmd = [sys.executable, "-m", "polar", "llm", "rl", str(tmp_path / "rl.yaml"), "--out", str(out)]
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 2400
    try:
        while kill_after not in _stages(out):
            assert proc.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.time() < deadline
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = _stages(out)
    assert kill_after in before and "2/log" not in before
    mtimes = {f: f.stat().st_mtime_ns for f in out.rglob("*") if f.is_file() and f.name != "state.json"
              and "/tb/" not in str(f) and f.name != "metrics.jsonl"}
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=2400)
    subprocess.run([sys.executable, "-m", "polar", "serve-llm", "--stop", "--port", str(port)], env=env, cwd=REPO,
                   capture_output=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    after = _stages(out)
    assert Counter(after) == Counter(set(after)) and {"1/log", "2/log"} <= set(after)
    state = json.loads((out / "state.json").read_text())
    for stage in before:  # finished stages kept their record and their files
        it, st = stage.split("/")
        assert stage in after and state["iterations"][it][st] is not None
    finished_files = [f for f in mtimes if f.exists() and ("iter-1/sample/cells" in str(f) or f.name == "rollouts.jsonl")]
    assert all(f.stat().st_mtime_ns == mtimes[f] for f in finished_files)  # not redone
    # the model iteration 1 ended with is the one iteration 2 sampled: the converted GGUF when
    # its group carried a gradient, the start when every episode had the same return
    one = state["iterations"]["1"]
    if one["sample"]["rollouts"]:
        assert one["update"]["steps"] > 0 and Path(one["update"]["adapter"]).is_dir()
        assert one["convert"]["model"].endswith("rl-kill-it1.gguf") and Path(one["convert"]["model"]).exists()
    else:
        assert one["sample"]["groups_dropped_zero_std"] == 1 and one["update"]["steps"] == 0
        assert one["convert"]["model"] == "polar-planner"
    assert state["iterations"]["2"]["sample"]["model"] == one["convert"]["model"]
    res = json.loads((out / "results.json").read_text())
    assert [row["iteration"] for row in res["rows"]] == [1, 2]
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2  # one row per iteration, none twice
    assert "sample tok/s" in r.stdout  # the table's header, and a row per iteration run now
    rows = [ln.split() for ln in r.stdout.splitlines() if len(ln.split()) == 14 and ln.split()[0].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"]


def test_finished_stages_are_not_run_again_and_a_row_written_before_a_kill_is_not_doubled(tmp_path: Path) -> None:
    """Every stage of iteration 1 is recorded: the run only logs it (a stage that ran again would
    start a server or load a model, and fail here: the recipe's model does not exist). A row
    written to metrics.jsonl whose `log` stage was never recorded (a kill in between) is cut
    and written once."""
    pytest.importorskip("tensorboard")
    cfg = RLConfig(model="no-such-model", name="t", tasks=[{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}], iterations=1)
    run = RLRun(cfg, tmp_path, progress=False)
    run.finish(0, "prepare", {"start_checkpoint": None, "wall_s": 1.0})
    run.finish(1, "sample", {"model": "no-such-model", "per_task": {"DoorKey-5x5": [1, 2]}, "episodes": 2, "success": 0.5,
                             "mean_return": 0.4, "env_steps": 30, "sampled_tokens_per_s": 3.0, "wall_s": 10.0,
                             "rollouts": 9, "groups_used": 1})
    run.finish(1, "update", {"steps": 2, "kl": 0.01, "tokens_per_s": 50.0, "wall_s": 5.0, "adapter": "a"})
    run.finish(1, "convert", {"model": "m.gguf", "wall_s": 2.0})
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1, "env_steps": 30}\n')  # written, then killed
    res = RLRun(cfg, tmp_path, progress=False).run()
    assert [r["iteration"] for r in res["rows"]] == [1] and res["rows"][0]["kl"] == 0.01
    assert res["rows"][0]["wall_total_s"] == 17.0 and res["rows"][0]["eval_success"] is None
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["success"] == 0.5
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    RLRun(cfg, tmp_path, progress=False).run()  # everything logged: nothing happens
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 1


def test_an_iteration_with_an_evaluation_is_logged_with_its_wall_time(tmp_path: Path) -> None:
    """The evaluation's record keeps its wall time in `cost`: the row adds it to the total and
    shows the held-out success (a run once stopped at this row with a KeyError)."""
    cfg = RLConfig(model="no-such-model", name="t", tasks=[{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}], iterations=1,
                   eval_tasks=[{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}], eval_every=1)
    run = RLRun(cfg, tmp_path, progress=False)
    run.finish(0, "prepare", {"start_checkpoint": None, "wall_s": 1.0})
    run.finish(1, "sample", {"model": "no-such-model", "per_task": {"DoorKey-5x5": [1, 2]}, "episodes": 2, "success": 0.5,
                             "mean_return": 0.4, "env_steps": 30, "sampled_tokens_per_s": 3.0, "wall_s": 10.0})
    run.finish(1, "update", {"steps": 2, "kl": 0.01, "tokens_per_s": 50.0, "wall_s": 5.0, "adapter": "a"})
    run.finish(1, "convert", {"model": "m.gguf", "wall_s": 2.0})
    run.finish(1, "eval", {"rows": [], "success": 0.25, "cost": {"wall_s": 8.0}})
    row = RLRun(cfg, tmp_path, progress=False).run()["rows"][0]
    assert row["wall_total_s"] == 25.0 and row["eval_success"] == 0.25


def test_seed4_doorkey_recipes_change_only_what_their_plan_says() -> None:
    """evals/results/planner-rl/seed4-doorkey-2026-12-06/README.md: GRPO is the seed-1 DoorKey recipe with only the
    start model and labels changed; the baseline is the flagship's per-seed round (runs/pt-seedN-order's flags)
    with only the start model, name, sampled tasks and episodes (the GRPO run's 24, DoorKey-8x8 only) and the
    server (the GRPO run's llama-server slots) changed."""
    import importlib.util

    from polar.evals.improve import ImproveConfig

    seed1 = load_yaml(REPO / "evals" / "planner-training" / "rl-seed1-doorkey.yaml", RLConfig).dumped()
    seed4 = load_yaml(REPO / "evals" / "planner-training" / "rl-seed4-doorkey.yaml", RLConfig).dumped()
    assert {k for k in seed1.keys() | seed4.keys() if seed1.get(k) != seed4.get(k)} == {"model", "name", "port"}
    assert seed4["model"] == "polar-planner-s4o"

    spec = importlib.util.spec_from_file_location("planner_training", REPO / "benchmarks" / "planner_training.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    flags = ("--out runs/pt-seed4-order --seed 4 --name polar-planner-s4o --threads 1 --max-length 512 --lr 1e-3 "
             "--lora-layers 10 --max-decisions 20 --rounds 1 --episodes 3 --round-token-budget 30000 "
             "--no-round-eval --port 8743 --server-threads 1")  # runs/pt-seed4-order.sh's round
    evaluation = {"eval_tasks", "eval_seeds", "eval_episodes"}  # neither round evaluates (--no-round-eval): not training
    flagship = bench.improve_config(bench.parse_args(flags.split())).model_dump(mode="json", exclude=evaluation)
    rft = load_yaml(REPO / "evals" / "planner-training" / "rft-seed4-doorkey.yaml", ImproveConfig)
    assert rft.eval_tasks == []
    baseline = rft.model_dump(mode="json", exclude=evaluation)
    differ = {k for k in flagship if flagship[k] != baseline[k]}
    assert differ == {"name", "tasks", "episodes", "port", "engine", "parallel"}
    assert [t.label for t in rft.tasks] == ["DoorKey-8x8"] and rft.episodes * rft.rounds == seed4["group_size"] * 3
    assert (rft.engine, rft.parallel, rft.threads) == (seed4["engine"], seed4["parallel"], seed4["threads"])


def test_seed0_gotoseq_recipe_changes_only_what_its_plan_says() -> None:
    """evals/results/planner-rl/seed0-gotoseq-2026-12-06/README.md: the seed-4 DoorKey recipe with only the task,
    the start model (seed 0's SFT model, trained on no GoToSeqS5R2 decision) and the labels changed."""
    seed4 = load_yaml(REPO / "evals" / "planner-training" / "rl-seed4-doorkey.yaml", RLConfig).dumped()
    cfg = load_yaml(REPO / "evals" / "planner-training" / "rl-seed0-gotoseq.yaml", RLConfig)
    gts = cfg.dumped()
    differ = {k for k in seed4.keys() | gts.keys() if seed4.get(k) != gts.get(k)}
    assert differ == {"model", "name", "port", "tasks", "eval_tasks"}
    assert gts["model"] == "polar-planner-s0o"
    assert [t["id"] for t in gts["tasks"]] == ["minigrid:BabyAI-GoToSeqS5R2-v0"] == [t["id"] for t in gts["eval_tasks"]]
    assert cfg.iterations == 3


def test_every_rl_recipe_loads() -> None:
    """Each recipe under evals/planner-training/ that a results README names still validates."""
    recipes = sorted((REPO / "evals" / "planner-training").glob("rl*.yaml"))
    assert any(p.name == "rl-seed2-boxes.yaml" for p in recipes)
    for p in recipes:
        cfg = load_yaml(p, RLConfig)
        assert cfg.tasks and cfg.name, p.name


@pytest.mark.parametrize(("recipe", "changed"), [
    ("rl-seed4-boxes.yaml", {"model"}),                 # the replication from another SFT seed
    ("rl-seed2-boxes-s2.yaml", {"seed"}),               # the replication over run seeds
    ("rl-seed2-boxes-filtered-sft.yaml", {"arm", "finetune"}),  # the same-budget baseline arm
    # the robustness bar's plan C: rl-seed2-boxes-s2.yaml (seed 2) from SFT seed 1, sampling the task it fails
    ("rl-seed1-doorkey.yaml", {"model", "seed", "tasks", "eval_tasks"}),
    ("rl-seed4-doorkey.yaml", {"model", "seed", "tasks", "eval_tasks"}),  # seed 4 on the fixed key order: the same
])
def test_the_replication_recipes_change_only_what_their_plan_says(recipe: str, changed: set[str]) -> None:
    """evals/results/planner-rl/README.md: each replication is rl-seed2-boxes.yaml with only `changed` (and
    its labels, the iteration budget the first run logged and the in-run evaluations, which train nothing)."""
    first = load_yaml(REPO / "evals" / "planner-training" / "rl-seed2-boxes.yaml", RLConfig).dumped()
    other = load_yaml(REPO / "evals" / "planner-training" / recipe, RLConfig).dumped()
    labels = {"name", "port", "eval_every", "eval_start", "eval_seeds", "eval_episodes"}
    differ = {k for k in first.keys() | other.keys() if first.get(k) != other.get(k)}
    assert differ - labels == changed, recipe


def test_memory_mode_samples_and_evaluates_with_the_memory_skills(tmp_path: Path) -> None:
    """RL from the own-view memory model (docs/memory.md): the sampled episodes' agents and the
    evaluation's ImproveConfig get `observation: memory` and the memory skills; the recorded config
    of a run without `skills` is what it was, so older run folders resume."""
    grpo = load_yaml(REPO / "evals" / "planner-training" / "rl.yaml", RLConfig)
    assert "skills" not in grpo.dumped()
    memory = grpo.model_copy(update={
        "observation": "memory", "skills": "skills_memory", "profile": "student-memory",
        "tasks": [SuiteHarness(id="minigrid:MiniGrid-DoorKey-8x8-v0", kwargs={"odometry": True})]})
    run = RLRun(memory, tmp_path, progress=False)
    imp = run.improve_cfg()
    assert (imp.observation, imp.skills, imp.profile) == ("memory", "skills_memory", "student-memory")
    suite = run.sample_suite(1, {"DoorKey-8x8": 2}, {"observation": "memory"}, base=10)
    assert len(suite["agents"]) == memory.group_size and suite["seeds"] == [10, 11]
    assert all(a["skills"] == "skills_memory" and a["planner"] == "student-memory" for a in suite["agents"])
    assert [(h["id"], h["kwargs"]) for h in suite["harnesses"]] == [("minigrid:MiniGrid-DoorKey-8x8-v0", {"odometry": True})]
    assert "skills" not in RLRun(grpo, tmp_path / "plain").sample_suite(1, {"x": 1}, {}, 0)["agents"][0]
    with pytest.raises(pydantic.ValidationError, match="observation"):
        RLConfig.model_validate(grpo.model_dump() | {"observation": "pixels"})


def test_explore_skills_reaches_the_sampled_episodes_and_leaves_old_runs_resumable(tmp_path: Path) -> None:
    """`explore_skills` goes to the sampled episodes' profile (LLMProfile.explore_skills: the
    decision's skill drawn among the applicable ones); at its default the recorded config and the
    sampling overrides are what they were before it existed."""
    from polar.planners.profile import load_planner_profile

    grpo = load_yaml(REPO / "evals" / "planner-training" / "rl.yaml", RLConfig)
    assert "explore_skills" not in grpo.dumped()
    plain = RLRun(grpo, tmp_path / "plain", progress=False).sampling_overrides(grpo.model, tmp_path / "c.jsonl")
    assert "explore_skills" not in plain and load_planner_profile(grpo.profile, plain).explore_skills == 0.0
    explore = grpo.model_copy(update={"explore_skills": 0.15})
    assert explore.dumped()["explore_skills"] == 0.15
    run = RLRun(explore, tmp_path / "explore", progress=False)
    overrides = run.sampling_overrides(explore.model, tmp_path / "c.jsonl")
    assert overrides == plain | {"explore_skills": 0.15}
    assert load_planner_profile(explore.profile, overrides).explore_skills == 0.15
    with pytest.raises(pydantic.ValidationError, match="explore_skills"):
        RLConfig.model_validate(grpo.model_dump() | {"explore_skills": 1.5})


def test_the_memory_explore_recipe_changes_only_what_its_plan_says() -> None:
    """evals/results/planner-rl/memory-doorkey-explore-2026-12-07/: rl-memory-doorkey.yaml with the skill
    draw, two groups an iteration and one iteration more (`iterations` is not in the recorded config)."""
    first = load_yaml(REPO / "evals" / "planner-training" / "rl-memory-doorkey.yaml", RLConfig)
    other = load_yaml(REPO / "evals" / "planner-training" / "rl-memory-doorkey-explore.yaml", RLConfig)
    a, b = first.dumped(), other.dumped()
    differ = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    assert differ - {"name", "port", "eval_every", "eval_start"} == {"groups", "explore_skills"}
    assert (other.iterations, other.explore_skills, other.groups) == (4, 0.25, 2)
    # the third run (memory-doorkey-imitate-2026-12-07/): the second with drawn decisions imitated
    third = load_yaml(REPO / "evals" / "planner-training" / "rl-memory-doorkey-imitate.yaml", RLConfig)
    c = third.dumped()
    assert {k for k in b.keys() | c.keys() if b.get(k) != c.get(k)} == {"name", "port", "explore_objective"}
    assert third.explore_objective == "imitate" and third.iterations == other.iterations
    assert "explore_objective" not in b  # at its default the recorded config is what it was
