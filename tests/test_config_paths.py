"""Every path in a suite, a training recipe or a planner profile resolves against the file that
names it, not the current directory: each file is used here from another working folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of files that name each other by relative paths, and an unrelated cwd."""
    p = tmp_path / "project"
    shutil.copytree(ROOT / "harnesses" / "keydoor", p / "evals" / "games" / "keydoor",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (p / "evals" / "sweeps").mkdir(parents=True)
    (p / "evals" / "sweeps" / "best.json").write_text(json.dumps({"trials": [{"env_steps": 300}, {"env_steps": 200}]}))
    (p / "evals" / "recipes").mkdir()
    (p / "evals" / "recipes" / "tiny.yaml").write_text("algo: ppo\nharness: ../games/keydoor/keydoor.yaml\n"
                                                       "ppo: {num_envs: 1, num_steps: 32}\n")
    (p / "evals" / "suite.yaml").write_text("""\
name: paths
agents:
  - {name: rnd, kind: random}
  - name: ppo
    kind: pure_rl
    train_steps: 64
    recipe: recipes/tiny.yaml
    tuned_by: {sweeps/best.json: [game]}
harnesses:
  - {id: games/keydoor/keydoor.yaml, name: game, max_steps: 5}
seeds: [0]
episodes: 1
""")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # restored after the test: later tests open `SkillLibrary()` from the cwd
    return p


def test_a_suites_paths_resolve_against_the_suite_file(project: Path) -> None:
    from polar.evals.metrics import external_tuning
    from polar.evals.preflight import check_suite
    from polar.evals.suite import load_suite

    suite = load_suite(project / "evals" / "suite.yaml")
    check_suite(suite)  # every reference found from the other folder
    assert Path(suite.harnesses[0].id) == project / "evals" / "games" / "keydoor" / "keydoor.yaml"
    assert Path(suite.agent("ppo").recipe) == project / "evals" / "recipes" / "tiny.yaml"
    # the score file is found beside the suite; the ledger's label stays as the suite wrote it
    assert external_tuning(suite, "ppo") == {"tune:sweeps/best.json": 500}


def test_compare_from_another_folder_runs_the_suite(project: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "polar", "compare", str(project / "evals" / "suite.yaml"),
                        "--out", str(tmp_path / "out"), "--agents", "rnd"],
                       cwd=tmp_path / "elsewhere", env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert (tmp_path / "out" / "cells" / "rnd" / "game" / "seed-0.json").is_file()


def test_a_recipes_harness_path_resolves_against_the_recipe(project: Path) -> None:
    from polar.evals.training import load_recipe

    cfg = load_recipe(str(project / "evals" / "recipes" / "tiny.yaml"), "ppo")
    assert Path(cfg.harness) == project / "evals" / "games" / "keydoor" / "keydoor.yaml"


def test_polar_train_reads_a_recipes_relative_harness_from_another_folder(project: Path, tmp_path: Path) -> None:
    from polar.config import read_mapping
    from polar.rl.config import TrainConfig
    from polar.workspace import recipe_paths

    recipe = project / "evals" / "recipes" / "tiny.yaml"
    cfg = TrainConfig.model_validate(recipe_paths(read_mapping(recipe), recipe))
    assert Path(cfg.harness).is_file()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "polar", "train", str(recipe), "--steps", "32",
                        "--out", str(tmp_path / "run"), "--no-progress"],
                       cwd=tmp_path / "elsewhere", env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_a_profiles_template_and_model_paths_resolve_against_the_profile(project: Path) -> None:
    from polar.planners.profile import load_planner_profile, resolve_templates

    folder = project / "planners"
    (folder / "tpl").mkdir(parents=True)
    shutil.copy(ROOT / "prompts" / "student_skill.j2", folder / "tpl" / "mine.j2")
    text = (ROOT / "planners" / "student.yaml").read_text()
    text = text.replace("user: student_skill", "user: tpl/mine.j2").replace(
        "model: smollm2-135m ", "model: weights/model.gguf ")
    (folder / "mine.yaml").write_text(text)
    profile = load_planner_profile(folder / "mine.yaml")
    assert profile.templates.user == str(folder / "tpl" / "mine.j2")
    assert resolve_templates(profile)[1].name == "student_skill"
    assert profile.server is not None and profile.server.model == str(folder / "weights" / "model.gguf")
    assert profile.record_path == ".polar/llm-calls.jsonl"  # where runs write: the workspace, as before


def test_a_library_named_by_its_folder_is_found_from_any_folder(tmp_path: Path, monkeypatch) -> None:
    """`skills: skills_memory` in a suite names the shipped memory library, wherever Polar runs."""
    from polar.skills.search_path import open_library

    monkeypatch.chdir(tmp_path)
    library = open_library("skills_memory")
    assert library.root.resolve() == (Path(__file__).resolve().parents[1] / "skills_memory").resolve()
    assert {"explore", "goto"} <= {s.name for s in library.list()}
    (tmp_path / "skills_memory").mkdir()  # an empty folder of that name is no library: the shipped one stays
    assert open_library("skills_memory").root.resolve() == library.root.resolve()
