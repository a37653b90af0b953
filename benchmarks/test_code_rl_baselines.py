"""`make bench`: today's recipes reach issue 47's code-mode bars within their budgets (seed 0)."""

import json

import pytest
from bench_results import RESULTS
from code_rl_baselines import main

pytestmark = pytest.mark.bench


def test_every_recipe_reaches_its_bar_within_its_budget(tmp_path):
    assert main(["--task", "all", "--seed", "0", "--out", str(tmp_path)]) == 0
    runs = json.loads((RESULTS / "code_rl_baselines.json").read_text())["details"]["runs"]
    assert {name: run["reached"] for name, run in runs.items()} == dict.fromkeys(runs, True)
