"""The pure-RL agent through the real RL engine: training per cell, curve, reuse, checkpoints."""

from __future__ import annotations

from pathlib import Path

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
