"""`polar task --harness-kwarg KEY=VALUE`: the harness's keyword arguments from the command line
(docs/memory.md: the memory planner needs MiniGrid's `odometry: true`), through the real CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polar.commands.kwargs import parse_kwargs
from polar.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
TASK = "use the key to open the door and then get to the goal"


def polar_task(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "polar", "task", TASK, "--harness", "minigrid:MiniGrid-DoorKey-8x8-v0",
         "--planner", "symbolic-memory", "--skills", str(REPO / "skills_memory"), "--seed", "0",
         "--out", str(tmp_path / "run"), "--record-context", *extra],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


def test_odometry_reaches_the_harness_and_the_memory_planner_solves_doorkey(tmp_path):
    r = polar_task(tmp_path, "--harness-kwarg", "odometry=true")
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((tmp_path / "run" / "episode.json").read_text())
    assert rec["success"] is True
    # the planner saw the memory's predicates: the explore skill and the frontier are in play
    skills = [d["decision"].get("skill") for d in rec["decisions"]]
    assert "explore" in skills or any("frontier" in p for d in rec["decisions"]
                                      for p in d["context"]["symbolic"]["predicates"])


def test_without_the_kwarg_the_memory_planner_is_refused(tmp_path):
    r = polar_task(tmp_path)
    assert r.returncode != 0
    assert "odometry: true" in r.stdout + r.stderr


def test_values_are_yaml_scalars():
    assert parse_kwargs(["odometry=true", "size=8", "rate=0.5", "name=red box", "empty="], "--x") == {
        "odometry": True, "size": 8, "rate": 0.5, "name": "red box", "empty": ""}
    assert parse_kwargs(None, "--x") == {}


@pytest.mark.parametrize(("item", "says"), [
    ("odometry", "expected KEY=VALUE"), ("=true", "expected KEY=VALUE"), ("a-b=1", "expected KEY=VALUE"),
    ("xs=[1, 2]", "must be a scalar"), ("v=: :", "not a YAML scalar")])
def test_bad_items_name_the_option_and_the_item(item, says):
    with pytest.raises(ConfigError, match=says) as err:
        parse_kwargs([item], "--harness-kwarg")
    assert "--harness-kwarg" in str(err.value)


def test_a_key_given_twice_is_an_error():
    with pytest.raises(ConfigError, match="'odometry' is given twice"):
        parse_kwargs(["odometry=true", "odometry=false"], "--harness-kwarg")
