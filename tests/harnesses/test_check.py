"""`polar harness check` plays whole episodes and says what it checked, one fact per line
(piped, as a script or CI reads it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from polar.harnesses.check import check_harness, check_summary

ROOT = Path(__file__).resolve().parents[2]


def _piped_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(ROOT)}


def test_the_readme_check_reaches_episode_ends_and_says_what_it_checked(tmp_path: Path) -> None:
    # DoorKey-8x8's step limit is 640: the old 500-step check never saw an episode end
    p = subprocess.run([sys.executable, "-m", "polar", "harness", "check", "minigrid:MiniGrid-DoorKey-8x8-v0"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_piped_env())
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert "env checker: passed (gymnasium's check_env on the adapter)" in lines
    episodes = next(x for x in lines if x.startswith("random episodes: "))
    assert "3 played to the end in 1920 steps on seeds 0, 1, 2: 0 terminated, 3 truncated (step limit 640)" in episodes
    assert "determinism: a second run on the same seeds matched at every step (1920 steps)" in lines
    assert lines[-1] == "PASS minigrid:MiniGrid-DoorKey-8x8-v0"


def test_a_cap_below_the_episodes_is_said() -> None:
    # random play never opens DoorKey-16x16's door: the first episode is cut at 2560 steps
    r = check_harness("minigrid:MiniGrid-DoorKey-16x16-v0", episodes=2, steps=2600)
    assert (r.step_limit, r.episodes, r.steps, r.truncated, r.seeds) == (2560, 1, 2600, 1, [0, 1])
    text = "\n".join(check_summary(r))
    assert "only 1 of 2 ended within the 2600-step cap; raise --steps" in text
    r = check_harness("gym:CartPole-v1", episodes=4)
    assert r.passed and r.episodes == 4 == r.terminated + r.truncated and r.seeds == [0, 1, 2, 3]
    assert r.step_cap == 4 * 500 and r.steps < r.step_cap and r.deterministic


def test_check_and_describe_take_the_harness_keyword_arguments() -> None:
    import json

    from typer.testing import CliRunner

    from polar.commands.app import app

    runner = CliRunner()
    kw = ["--harness-kwarg", "odometry=true"]
    r = runner.invoke(app, ["harness", "describe", "minigrid:MiniGrid-DoorKey-5x5-v0", "--json", *kw])
    assert r.exit_code == 0, r.output
    assert {"agent_pos", "agent_dir"} <= set(json.loads(r.output)["spec"]["observation_space"]["spaces"])
    r = runner.invoke(app, ["harness", "check", "minigrid:MiniGrid-DoorKey-5x5-v0", "--episodes", "1", *kw])
    assert r.exit_code == 0 and "PASS minigrid:MiniGrid-DoorKey-5x5-v0" in r.output, r.output
    r = runner.invoke(app, ["harness", "check", "minigrid:MiniGrid-DoorKey-5x5-v0", "--harness-kwarg", "odometry"])
    assert r.exit_code != 0 and "--harness-kwarg 'odometry': expected KEY=VALUE" in str(r.output) + str(r.exception)
