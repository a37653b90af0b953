"""The planner-training loop in memory mode (issue 41; docs/memory.md): a tiny real run of
`benchmarks/planner_training.py --observation memory` (the symbolic-memory teacher over the memory
skills on harnesses with odometry, then the dataset stage), whose rendered prompts are checked
against a replay of each episode: a prompt's facts name no object the agent's view had not shown
by then. The predicates run keeps its teacher, student and round config."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from polar.domains.minigrid.harness import MiniGridHarness
from polar.evals.improve import student_suite
from polar.evals.suite import Suite

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "benchmarks" / "planner_training.py"
OBJECTS = ("key", "door", "box", "ball", "goal")


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("planner_training", LOOP)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _teacher_suite(tmp_path: Path) -> Path:
    """evals/planner_teacher_memory.yaml, smaller: two training tasks, one seed, a few episodes."""
    suite = yaml.safe_load((ROOT / "evals" / "planner_teacher_memory.yaml").read_text())
    # every episode keeps its step trace (its actions), which the test replays
    suite.update(harnesses=suite["harnesses"][0:3:2], seeds=[0], episodes=3, trace=3)
    path = tmp_path / "teacher.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _visible(env: Any) -> set[tuple[int, int]]:
    """The world cells MiniGrid's own view code marks visible now (the oracle, not the reader)."""
    _, vis = env.gen_obs_grid()
    out = set()
    for x in range(env.width):
        for y in range(env.height):
            rel = env.relative_coords(x, y)
            if rel is not None and vis[rel[0], rel[1]]:
                out.add((x, y))
    return out


def _name(obj: Any) -> str:
    return "goal" if obj.type == "goal" else f"{obj.type},{obj.color}"


def _objects(env: Any, cells: set[tuple[int, int]] | None = None) -> set[str]:
    """The objects on the true grid (in `cells` only, when given), as the predicates name them."""
    out = set()
    for x in range(env.width):
        for y in range(env.height):
            obj = env.grid.get(x, y)
            if obj is not None and obj.type in OBJECTS and (cells is None or (x, y) in cells):
                out.add(_name(obj))
    return out


def _shown_before(harness_id: str, seed: int, actions: list[int]) -> tuple[set[str], set[str], Any]:
    """Replays an episode's actions: the objects the view had shown (or the agent had carried) by
    then, the objects on the true grid then, and the harness (for its full symbolic state)."""
    h = MiniGridHarness(harness_id.split(":", 1)[1], odometry=True)
    h.reset(seed=seed)
    env = h.env.unwrapped
    shown = _objects(env, _visible(env))
    for a in actions:
        h.step(a)
        shown |= _objects(env, _visible(env))
        if env.carrying is not None:
            shown.add(_name(env.carrying))
    return shown, _objects(env), h


def test_memory_mode_dataset_shows_only_what_the_view_has_shown(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(LOOP), "--out", str(out), "--stages", "teacher,dataset",
                        "--observation", "memory", "--teacher-suite", str(_teacher_suite(tmp_path))],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    ledger = json.loads((out / "results.json").read_text())["ledger"]
    assert ledger["teacher"]["episodes"] == 6 and ledger["teacher"]["success"] == 1.0
    info = json.loads((out / "dataset" / "dataset.json").read_text())
    assert info["student"] == "student-memory" and info["per_skill"].get("explore", 0) > 0

    records = {}
    for f in (out / "teacher" / "cells").rglob("seed-*.json"):
        for e in json.loads(f.read_text())["episodes"]:
            records[e["episode_id"]] = e
    examples = [json.loads(line) for split in ("train", "validation")
                for line in (out / "dataset" / f"{split}.jsonl").read_text().splitlines()]
    assert len(examples) >= 10
    hidden_checked = 0
    for ex in examples:
        prompt = ex["messages"][-1]["content"]
        # memory mode: the memory skills are offered, and the facts are the memory's predicates
        assert "explore(color,object)" in prompt, prompt
        facts = re.search(r"^Facts: (.*)$", prompt, re.M).group(1)
        rec = records[ex["episode_id"]]
        before = sum(d["env_steps"] for d in rec["decisions"][:ex["decision_index"]])
        actions = rec["extra"]["trace"]["actions"][:before]
        assert len(actions) == before
        shown, on_grid, h = _shown_before(ex["harness_id"], rec["seed"], actions)
        for name in on_grid - shown:  # on the grid, never in view: the prompt must not know of it
            assert not re.search(rf"\b{name}\b", facts), (name, facts)
            hidden_checked += 1
        if ex["decision_index"] == 0 and on_grid - shown:
            # the simulator's own predicates do name what the view has not shown: the check above
            # would catch a prompt rendered from the full state
            full = " ".join(h.symbolic_state().predicates)
            assert any(re.search(rf"\b{n}\b", full) for n in on_grid - shown), full
    assert hidden_checked > 0  # some prompts were made while objects were still out of view
    assert any("frontier" in ex["messages"][-1]["content"] for ex in examples)


def test_memory_mode_rounds_sample_with_the_memory_skills_on_odometry_harnesses() -> None:
    bench = _bench()
    cfg = bench.improve_config(bench.parse_args(["--observation", "memory"]))
    assert (cfg.profile, cfg.observation, cfg.skills) == ("student-memory", "memory", "skills_memory")
    suite = Suite.model_validate(student_suite(cfg, "sample-1", {"observation": "memory"}, cfg.tasks, [1], 3,
                                               200_000))
    assert suite.agents[0].skills == "skills_memory"
    assert suite.harnesses and all(h.kwargs == {"odometry": True} for h in suite.harnesses)
    assert all(t.kwargs == {"odometry": True} for t in cfg.eval_tasks)
    assert bench.parse_args(["--observation", "memory"]).teacher_suite.name == "planner_teacher_memory.yaml"


def test_the_predicates_run_is_unchanged() -> None:
    bench = _bench()
    args = bench.parse_args([])
    assert args.student == "student" and args.teacher_suite.name == "planner_teacher.yaml"
    cfg = bench.improve_config(args)
    assert (cfg.profile, cfg.observation, cfg.skills) == ("student", "predicates", None)
    assert all(not t.kwargs for t in cfg.tasks + cfg.eval_tasks)
    assert "skills" not in student_suite(cfg, "x", {}, cfg.tasks, [0], 1, 0)["agents"][0]
    # a round's resume key does not see the new fields (skills, the serving engine, DAgger's) while they are unset
    from polar.evals.improve import _key
    dumped = cfg.model_dump(mode="json", exclude={"skills", "engine", "parallel", "targets", "teacher", "aggregate",
                                                  "teacher_per_task", "skills_shown"})
    import hashlib
    blob = json.dumps({"config": dumped, "round": 1, "model": "m"}, sort_keys=True)
    assert _key(cfg, 1, "m") == hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_stage_dagger_labels_the_three_missions_with_the_memory_teacher(tmp_path: Path) -> None:
    bench = _bench()
    args = bench.parse_args(["--observation", "memory", "--out", str(tmp_path), "--dagger-token-budget", "9000",
                             "--dagger-epochs", "2", "--dagger-teacher-per-task", "7"])
    cfg = bench.dagger_config(args, "start@1")
    assert (cfg.model, cfg.targets, cfg.teacher, cfg.teacher_per_task) == ("start@1", "teacher", "symbolic-memory", 7)
    assert [t.id for t in cfg.tasks] == bench.TRAIN and all(t.kwargs == {"odometry": True} and not t.task
                                                            for t in cfg.tasks)
    assert cfg.aggregate == [str(tmp_path.resolve() / "dataset")] and cfg.skills == "skills_memory"
    assert (cfg.finetune["token_budget"], cfg.finetune["epochs"]) == (9000, 2.0)
    assert cfg.eval_tasks == []  # the rounds' models are evaluated elsewhere unless asked
    in_round = bench.dagger_config(bench.parse_args(["--observation", "memory", "--out", str(tmp_path),
                                                     "--dagger-eval-episodes", "20"]), "start@1")
    # inside the round: the training tasks on seed 0's held-out episodes, as stage eval-dagger plays them
    assert (in_round.eval_tasks, in_round.eval_seeds, in_round.eval_episodes) == (in_round.tasks, 1, 20)


def test_the_shipping_rule_keeps_dagger_rounds_until_one_lowers_held_out_success() -> None:
    bench = _bench()

    def rows(**arms: tuple[int, int]) -> list[dict]:
        return [{"arm": a.replace("_", "-"), "successes": k, "episodes": n} for a, (k, n) in arms.items()]

    rounds = [{"round": 1, "model": "m1"}, {"round": 2, "model": "m2"}]
    assert bench.dagger_kept(rows(dagger_start=(40, 60), dagger_1=(50, 60), dagger_2=(50, 60)), rounds) == 2
    assert bench.dagger_kept(rows(dagger_start=(40, 60), dagger_1=(50, 60), dagger_2=(45, 60)), rounds) == 1
    assert bench.dagger_kept(rows(dagger_start=(40, 60), dagger_1=(39, 60), dagger_2=(60, 60)), rounds) == 0
    assert bench.dagger_kept(rows(dagger_start=(40, 60), dagger_1=(50, 60)), rounds) == 1  # round 2 not evaluated
    assert bench.dagger_kept(rows(dagger_1=(50, 60)), rounds) == 0  # the start not evaluated: nothing counts
