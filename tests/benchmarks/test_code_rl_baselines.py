"""benchmarks/code_rl_baselines.py (issue 47): a recipe trains until its first evaluation over
the bar, or to its budget. Tiny real CartPole PPO runs, a bar met at once and one never met."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "code_rl_baselines.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("code_rl_baselines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["code_rl_baselines"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = _bench()
    short = dataclasses.replace(module.TASKS["cartpole"], budget=1536, eval_every=512)
    monkeypatch.setitem(module.TASKS, "easy", dataclasses.replace(short, bar=1.0))  # every episode returns >= 8
    monkeypatch.setitem(module.TASKS, "never", dataclasses.replace(short, bar=501.0))  # CartPole-v1 stops at 500
    return module


def test_stops_at_the_first_evaluation_over_the_bar(bench: Any, tmp_path: Path) -> None:
    run = bench.run_task("easy", 0, tmp_path)
    assert run["reached"] is True
    assert [p["env_steps"] for p in run["curve"]] == [run["env_steps"]]  # no evaluation after the bar
    assert 512 <= run["env_steps"] < 1536
    assert run["curve"][0]["mean_return"] >= 1.0


def test_not_reached_reports_the_budget_and_the_whole_curve(bench: Any, tmp_path: Path) -> None:
    run = bench.run_task("never", 0, tmp_path)
    assert run["reached"] is False and run["env_steps"] == 1536
    steps = [p["env_steps"] for p in run["curve"]]
    assert steps == sorted(steps) and len(steps) >= 3 and steps[-1] >= 1536  # hook evaluations + the final one
    fig = bench.figures({"seed": 0, "runs": {"never": run}})[0]
    assert "not reached within 1,536" in fig.what and fig.value == 1536 and fig.goal is None


class _Pump:
    """MountainCar's textbook controller: push along the velocity (reaches the flag)."""

    def act(self, obs: Any, deterministic: bool = True) -> int:
        return 2 if obs[1] >= 0 else 0


class _Idle:
    def act(self, obs: Any, deterministic: bool = True) -> int:
        return 1  # no push: the car never leaves the valley


def test_flag_rate_counts_episodes_that_reach_the_flag() -> None:
    bench = _bench()
    assert bench.flag_rate(_Pump(), "MountainCar-v0", 5, 1_000_000) == 1.0
    assert bench.flag_rate(_Idle(), "MountainCar-v0", 3, 1_000_000) == 0.0


def test_a_seed_sweep_reports_the_median_and_resumes_from_its_finished_runs(
        bench: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[tuple[str, str, list[Any], dict[str, Any]]] = []
    monkeypatch.setattr(bench, "write_result", lambda *a: written.append(a))
    assert bench.main(["--task", "never", "--seeds", "0-1", "--out", str(tmp_path)]) == 0
    name, command, figs, details = written[0]
    assert name == "code_rl_baselines_seeds_never" and command.endswith("--task never --seeds 0-1")
    assert details["seeds"] == [0, 1] and set(details["runs"]["never"]) == {"0", "1"}
    fig, = figs
    assert fig.value == 1536 and "2 seeds, 0 reached it" in fig.what and "1: 1,536 (not reached)" in fig.what
    assert [f.to_json() for f in bench.figures(details)] == [fig.to_json()]  # recomputable from the details
    # a rerun reuses each finished (task, seed) run instead of training again
    monkeypatch.setattr(bench, "run_task", lambda *a: pytest.fail("retrained a finished run"))
    assert bench.main(["--task", "never", "--seeds", "0,1", "--out", str(tmp_path)]) == 0
    assert written[1][3]["runs"] == details["runs"]
    with pytest.raises(SystemExit, match="repeats a seed"):
        bench.parse_seeds("0,0")
