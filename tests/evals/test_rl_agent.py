"""The pure-RL agent through the real RL engine: training per cell, curve, reuse, checkpoints."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.evals.cells import CellResult, cell_key
from polar.evals.rl_agent import CURVE_FILE
from polar.evals.runner import cell_path, run_cells, run_suite
from polar.evals.suite import load_suite

PPO = {"name": "ppo", "kind": "pure_rl", "train_steps": 2048, "eval_every": 1024, "curve_episodes": 2,
       "overrides": {"ppo": {"num_envs": 4, "num_steps": 128}, "network": {"hidden": [16]}}}
SUITE = {"name": "rl", "agents": [PPO], "seeds": [0], "episodes": 2,
         "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 50}]}


def test_train_curve_charges_and_reuse(tmp_path: Path) -> None:
    res = run_suite(SUITE, tmp_path, progress=False)
    [row] = res.rows
    assert row.train_env_steps == 2048 and row.episodes == 2
    [curve] = res.curves
    assert curve.env_steps == [0, 1024, 2048] and curve.episodes == [2, 2, 2]
    run_dir = tmp_path / "work" / "ppo" / "Empty-5x5" / "seed-0" / "train"
    assert (run_dir / "policy").is_dir() and (run_dir / "eval.json").is_file()

    # The cell is lost but its training finished: re-running the cell reuses the trained policy.
    suite = load_suite(SUITE)
    [cell] = suite.cells()
    first = cell_path(tmp_path, cell).read_text()
    curve_text = (run_dir / CURVE_FILE).read_text()
    cell_path(tmp_path, cell).unlink()
    again = run_cells(suite, tmp_path, progress=False)
    assert [c.slug for c in again.ran] == [cell.slug]
    [res2] = again.results
    assert res2.prep.train_wall_s < 5.0 and (run_dir / CURVE_FILE).read_text() == curve_text
    old = [(e.seed, e.success, e.env_steps) for e in
           type(res2).model_validate_json(first).episodes]
    assert [(e.seed, e.success, e.env_steps) for e in res2.episodes] == old  # same policy, same seeds

    # A checkpoint agent evaluates that run; the run is charged once across seeds.
    ck = {"name": "ckpt", "kind": "pure_rl", "checkpoint": str(run_dir)}
    res3 = run_suite({**SUITE, "agents": [ck], "seeds": [0, 1]}, tmp_path / "ck", progress=False)
    [row3] = res3.rows
    assert row3.train_env_steps == 2048 and row3.seeds == 2
    assert res3.curves[0].env_steps == [0, 1024, 2048]


def test_a_changed_training_budget_retrains(tmp_path: Path) -> None:
    run_suite({**SUITE, "agents": [{**PPO, "train_steps": 512, "eval_every": 0}]}, tmp_path, progress=False)
    res = run_suite({**SUITE, "agents": [{**PPO, "train_steps": 1024, "eval_every": 0}]}, tmp_path,
                    progress=False)
    assert res.ran and res.rows[0].train_env_steps == 1024
    assert res.curves[0].env_steps == [1024]  # only the final point; the 512-step run is gone


def test_train_seed_trains_once_per_harness_for_all_cell_seeds(tmp_path: Path) -> None:
    agent = {**PPO, "train_steps": 512, "eval_every": 0, "train_seed": 3}
    res = run_suite({**SUITE, "agents": [agent], "seeds": [0, 1]}, tmp_path, progress=False)
    [row] = res.rows
    assert row.seeds == 2 and row.train_env_steps == 512  # one run, charged once
    harness_dir = tmp_path / "work" / "ppo" / "Empty-5x5"
    assert (harness_dir / "train-seed-3" / "eval.json").is_file()
    assert not list(harness_dir.glob("seed-*/train"))
    with pytest.raises(ConfigError, match="train_seed"):
        load_suite({**SUITE, "agents": [{"name": "c", "kind": "pure_rl", "checkpoint": "x", "train_seed": 0}]})


def test_goal_conditioned_sac_her_on_a_maze(tmp_path: Path) -> None:
    """The maze suite's baseline: the sac_her_maze recipe (HER over the package's dict
    observation) trains through the suite on a maze harness and plays its episodes."""
    sac = {"name": "sac", "kind": "pure_rl", "algo": "sac", "recipe": "sac_her_maze", "train_steps": 400,
           "deterministic": True, "overrides": {"network": {"hidden": [16]},
                                                "sac": {"learning_starts": 200, "batch_size": 32}}}
    suite = {"name": "m", "agents": [sac], "seeds": [0], "episodes": 2,
             "harnesses": [{"id": "maze:PointMaze_UMaze-v3", "max_steps": 30}]}
    res = run_suite(suite, tmp_path, progress=False)
    [row] = res.rows
    assert row.train_env_steps == 400 and row.episodes == 2
    done = json.loads((tmp_path / "work" / "sac" / "PointMaze_UMaze-v3" / "seed-0" / "train" / "eval.json").read_text())
    assert done["updates"] > 0  # it did learn from the HER buffer


def test_a_finished_run_is_reused_whatever_its_folder_is_called(tmp_path: Path) -> None:
    """A Ray worker names the training folder by absolute path, an in-process run as given:
    the same config under either name is the same run, not one to delete and retrain."""
    from polar.evals.rl_agent import train_config
    from polar.evals.training import same_config

    suite = load_suite({**SUITE, "agents": [{**PPO, "train_steps": 512}]})
    agent, entry = suite.agents[0], suite.harnesses[0]
    run = tmp_path / "train"
    run.mkdir()
    (run / "config.yaml").write_text(json.dumps(train_config(agent, entry, 0, run.resolve()).model_dump(mode="json")))
    assert same_config(run, train_config(agent, entry, 0, Path(os.path.relpath(run))))
    assert not same_config(run, train_config(agent, entry, 1, run))  # another seed is another run
    # a run saved before a config field existed (here network.lstm) is the same run at its default
    saved = train_config(agent, entry, 0, run).model_dump(mode="json")
    del saved["network"]["lstm"]
    (run / "config.yaml").write_text(json.dumps(saved))
    assert same_config(run, train_config(agent, entry, 0, run))


def test_multitask_trains_one_policy_per_seed_for_all_harnesses(tmp_path: Path) -> None:
    multi = {**PPO, "name": "multi", "multitask": True}
    harnesses = [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 50},
                 {"id": "minigrid:MiniGrid-Empty-6x6-v0", "max_steps": 50}]
    res = run_suite({**SUITE, "agents": [multi], "harnesses": harnesses}, tmp_path, progress=False)
    run_dir = tmp_path / "work" / "multi" / "@all-tasks" / "seed-0" / "train"
    assert (run_dir / "policy").is_dir()
    assert not (tmp_path / "work" / "multi" / "Empty-5x5" / "seed-0" / "train").exists()
    # one run, on both tasks (a task per reset), charged once: rows and the agent total agree
    assert [r.train_env_steps for r in res.rows] == [2048, 2048]
    [total] = res.totals
    assert total.train_env_steps == 2048 and total.ledger.task_train_env_steps == 2048
    assert "one policy over every task" in total.role
    # the second cell reused the first's run; each harness has its own learning curve
    assert sorted(p.name for p in run_dir.glob("eval_curve.*.jsonl")) == [
        "eval_curve.Empty-5x5.jsonl", "eval_curve.Empty-6x6.jsonl"]
    assert {c.harness: c.env_steps for c in res.curves} == {"Empty-5x5": [0, 1024, 2048],
                                                            "Empty-6x6": [0, 1024, 2048]}
    suite = load_suite({**SUITE, "agents": [multi], "harnesses": harnesses})
    cells = [CellResult.model_validate_json(cell_path(tmp_path, c).read_text()) for c in suite.cells()]
    assert {c.prep.info["run_dir"] for c in cells} == {str(run_dir)}
    # another task changes the shared policy: every cell of the agent is stale, not only the new one
    bigger = load_suite({**SUITE, "agents": [multi], "harnesses": [*harnesses, {"id": "minigrid:MiniGrid-Empty-8x8-v0"}]})
    assert all(cell_key(bigger, c) != cell_key(suite, c) for c in suite.cells())
    assert cell_key(load_suite({**SUITE, "agents": [multi], "harnesses": harnesses}), suite.cells()[0]) == \
        cell_key(suite, suite.cells()[0])


def test_multitask_tasks_hold_a_harness_out(tmp_path: Path) -> None:
    """`tasks:` trains on the listed harnesses only; the other evaluates that policy (no curve),
    and the trained harnesses' cells keep the keys of a suite without the held-out one."""
    two = [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 50},
           {"id": "minigrid:MiniGrid-Empty-6x6-v0", "max_steps": 50}]
    held = {"id": "minigrid:MiniGrid-Empty-8x8-v0", "max_steps": 50}
    multi = {**PPO, "name": "multi", "multitask": True}
    before = load_suite({**SUITE, "agents": [multi], "harnesses": two})
    spec = {**SUITE, "agents": [{**multi, "tasks": ["Empty-5x5", "Empty-6x6"]}], "harnesses": [*two, held]}
    after = load_suite(spec)
    assert [cell_key(after, c) for c in before.cells()] == [cell_key(before, c) for c in before.cells()]
    res = run_suite(spec, tmp_path, progress=False)
    run_dir = tmp_path / "work" / "multi" / "@all-tasks" / "seed-0" / "train"
    assert sorted(p.name for p in run_dir.glob("eval_curve.*.jsonl")) == [
        "eval_curve.Empty-5x5.jsonl", "eval_curve.Empty-6x6.jsonl"]
    from polar.config import read_yaml

    trained = [t["label"] for t in read_yaml(run_dir / "config.yaml")["harness_kwargs"]["tasks"]]
    assert trained == ["Empty-5x5", "Empty-6x6"]
    rows = {r.harness: r for r in res.rows}
    assert rows["Empty-8x8"].episodes == 2 and rows["Empty-8x8"].train_env_steps == 2048
    assert {c.harness for c in res.curves} == {"Empty-5x5", "Empty-6x6"}
    assert "one policy over 2 tasks" in res.totals[0].role
    with pytest.raises(ConfigError, match=r"agents\.multi\.tasks: \['Empty-9x9'\]"):
        load_suite({**spec, "agents": [{**multi, "tasks": ["Empty-9x9"]}]})
    with pytest.raises(ConfigError, match="tasks: .*multitask: true"):
        load_suite({**spec, "agents": [{**PPO, "tasks": ["Empty-5x5"]}]})


def test_full_observation_trains_on_the_whole_grid(tmp_path: Path) -> None:
    full = {**PPO, "name": "full", "observes": "full", "train_steps": 512, "eval_every": 0}
    res = run_suite({**SUITE, "agents": [full]}, tmp_path, progress=False)
    [row] = res.rows
    assert (row.observes, row.decides_from, row.train_env_steps) == ("full", "full", 512)
    from polar.rl.policy import load_policy

    policy = load_policy(tmp_path / "work" / "full" / "Empty-5x5" / "seed-0" / "train")
    assert policy.observation_space["image"].shape == (5, 5, 3)  # the whole 5x5 grid, not the 7x7 view


def test_a_sweep_picks_its_best_point_trains_every_cell_with_it_and_is_charged_once(tmp_path: Path) -> None:
    # lr 1e-9 cannot learn Empty-5x5 in 4096 steps; 3e-3 does: the sweep must pick 3e-3.
    sweep = {"grid": {"ppo.learning_rate": [1e-9, 3e-3]}, "steps": 4096, "episodes": 10,
             "harness": "minigrid:MiniGrid-Empty-5x5-v0"}
    tuned = {**PPO, "name": "tuned", "eval_every": 0, "sweep": sweep}
    suite = {**SUITE, "agents": [tuned], "seeds": [0, 1], "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0",
                                                                         "max_steps": 20}]}
    res = run_suite(suite, tmp_path, progress=False)
    folder = tmp_path / "work" / "tuned" / "@sweep" / "Empty-5x5"
    record = json.loads((folder / "best.json").read_text())
    scores = [t["successes"] for t in record["trials"]]
    assert scores[1] > scores[0] + 3, record
    assert record["best"]["overrides"] == {"ppo": {"learning_rate": 3e-3}}
    from polar.config import read_yaml

    for seed in (0, 1):
        cfg = read_yaml(tmp_path / "work" / "tuned" / "Empty-5x5" / f"seed-{seed}" / "train" / "config.yaml")
        assert cfg["ppo"]["learning_rate"] == 3e-3 and cfg["ppo"]["num_envs"] == 4  # over the agent's overrides
    trial = read_yaml(folder / "trial-0" / "config.yaml")
    assert (trial["seed"], trial["steps"]) == (900_000, 4096)  # the sweep's own seed, not a cell's
    # the row (two seeds) and the agent's total charge both runs, and the sweep once
    assert [r.train_env_steps for r in res.rows] == [2 * 2048 + 2 * 4096]
    [total] = res.totals
    assert total.ledger.tuning_env_steps == 2 * 4096 and total.ledger.task_train_env_steps == 2 * 2048
    # a lost cell re-runs without training the sweep again
    mtime = (folder / "trial-1" / "eval.json").stat().st_mtime_ns
    loaded = load_suite(suite)
    cell_path(tmp_path, loaded.cells()[0]).unlink()
    run_cells(loaded, tmp_path, progress=False)
    assert (folder / "trial-1" / "eval.json").stat().st_mtime_ns == mtime
    # the grid is part of the agent: another grid is another cell
    other = load_suite({**suite, "agents": [{**tuned, "sweep": {**sweep, "steps": 2048}}]})
    assert cell_key(other, other.cells()[0]) != cell_key(loaded, loaded.cells()[0])


def test_sweep_config_errors_name_the_field() -> None:
    bad = [({"grid": {}, "steps": 10}, "grid"), ({"grid": {"ppo.ent_coef": []}, "steps": 10}, "grid.ppo.ent_coef"),
           ({"grid": {"steps": [1, 2]}, "steps": 10}, "grid.steps")]
    for sweep, field in bad:
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            load_suite({**SUITE, "agents": [{**PPO, "sweep": sweep}]})
    with pytest.raises(ConfigError, match="sweep.harness"):
        load_suite({**SUITE, "agents": [{**PPO, "multitask": True, "sweep": {"grid": {"ppo.ent_coef": [0.0]},
                                                                              "steps": 10}}]})


def test_a_bad_grid_point_is_reported_before_anything_trains(tmp_path: Path) -> None:
    sweep = {"grid": {"ppo.learning_rate": [1e-3, -1.0]}, "steps": 64}
    with pytest.raises(ConfigError, match=r"agents\.0\.sweep\.grid \(point 1: .*learning_rate"):
        run_suite({**SUITE, "agents": [{**PPO, "sweep": sweep}]}, tmp_path, progress=False)
    assert not (tmp_path / "work").exists()
