"""`polar init` and the layered workspace: the user's assets first, then the shipped ones; an
empty ./skills hides nothing; registrations go to the workspace and never into the checkout."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.scaffold import init_workspace, scaffold_files
from polar.skills.model import SkillError
from polar.skills.search_path import LayeredLibrary, open_library

ROOT = Path(__file__).resolve().parents[1]


def _tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


def polar_in(cwd: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    for k in ("POLAR_SKILLS", "POLAR_HOME"):
        env.pop(k, None)
    return subprocess.run([sys.executable, "-m", "polar", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_init_lays_out_one_example_of_each_and_never_overwrites(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    r = polar_in(tmp_path, "init", str(ws))
    assert r.returncode == 0, r.stderr
    for folder in ("harnesses", "skills", "planners", "prompts", "evals"):
        assert any((ws / folder).iterdir()), folder
    assert (ws / "README.md").is_file() and len(list(ws.rglob("*.*"))) == len(scaffold_files())
    again = polar_in(tmp_path, "init", str(ws))
    assert again.returncode == 2 and "nothing was written" in again.stderr
    with pytest.raises(ConfigError, match="Polar's own checkout"):
        init_workspace(ROOT / "scratch-workspace")
    assert not (ROOT / "scratch-workspace").exists()


def test_workspace_assets_first_then_the_shipped_ones(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    init_workspace(ws)
    r = polar_in(ws, "harness", "describe", "corridor")  # the workspace's game
    assert r.returncode == 0 and "A corridor of 7 cells" in r.stdout, r.stderr
    r = polar_in(ws, "harness", "describe", "keydoor")  # a shipped one, still found
    assert r.returncode == 0 and "Harness: keydoor" in r.stdout
    r = polar_in(ws, "prompts", "list")
    assert "my_skill" in r.stdout and "planner_skill" in r.stdout
    listed = json.loads(polar_in(ws, "skills", "list", "--json").stdout)
    assert {"goto", "pickup"} <= {s["name"] for s in listed}  # an empty ./skills hides nothing


def test_registrations_go_to_the_workspace_never_the_checkout(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    init_workspace(ws)
    shipped = _tree_hash(ROOT / "skills")
    r = polar_in(ws, "skills", "add", "skills/press.skill.yaml")
    assert r.returncode == 0 and "registered press@1" in r.stdout, r.stderr
    r = polar_in(ws, "skills", "add", "skills/walk_scripted.skill.yaml")
    assert r.returncode == 0 and "registered walk_scripted@1 (python)" in r.stdout, r.stderr
    assert (ws / "skills" / "library.sqlite").is_file() and (ws / "skills" / "press" / "1").is_dir()
    r = polar_in(ws, "skills", "eval", "walk_scripted", "--harness", "corridor_walk", "--episodes", "4", "--json")
    ev = json.loads(r.stdout)
    assert ev["measurement"]["successes"] == 4 and ev["recorded"] is True, r.stderr
    r = polar_in(ws, "skills", "eval", "right", "--harness", "minigrid:MiniGrid-Empty-5x5-v0", "--episodes", "2")
    assert r.returncode == 0 and "not recorded" in r.stdout and "shipped" in r.stdout, r.stdout + r.stderr
    r = polar_in(ws, "skills", "remove", "goto")
    assert r.returncode == 1 and "shipped" in r.stderr
    assert _tree_hash(ROOT / "skills") == shipped  # the shipped library did not change


def test_a_workspace_skill_hides_the_shipped_one_of_that_name(tmp_path: Path, monkeypatch) -> None:
    ws = tmp_path / "ws"
    init_workspace(ws)
    monkeypatch.chdir(ws)
    monkeypatch.delenv("POLAR_SKILLS", raising=False)
    lib = open_library()
    assert isinstance(lib, LayeredLibrary) and lib.root == ws / "skills"
    assert lib.get("goto").library_root == ROOT / "skills"
    from polar.config import read_mapping
    from polar.skills.model import Skill

    data = read_mapping(ws / "skills" / "walk_scripted.skill.yaml") | {"name": "goto"}
    mine = lib.register(Skill.model_validate(data))
    assert mine.ref == "goto@1" and lib.get("goto").library_root == ws / "skills"
    assert [s.ref for s in lib.list() if s.name == "goto"] == ["goto@1"]


def test_from_the_checkout_the_shipped_library_is_read_only(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("POLAR_SKILLS", raising=False)
    monkeypatch.delenv("POLAR_HOME", raising=False)
    lib = open_library()
    assert lib.root == ROOT / "skills" and lib.get("goto").name == "goto"
    from polar.domains.minigrid.primitives import primitive_skills

    with pytest.raises(SkillError, match="never writes into.*polar init"):
        lib.register(primitive_skills()[0].model_copy(update={"name": "another_pickup"}))


def test_the_walkthrough_in_a_scratch_workspace(tmp_path: Path) -> None:
    """docs/walkthrough.md's commands that need no model and no training, outside the checkout."""
    ws = tmp_path / "my-polar"
    assert polar_in(tmp_path, "init", str(ws)).returncode == 0
    r = polar_in(ws, "skills", "add-primitive", "press", "--action", "press", "--harness", "corridor",
                 "--precondition", "at(button)", "--effect", "lit(lamp)", "--description", "Press the button.")
    assert r.returncode == 0 and "registered press@1" in r.stdout, r.stderr
    assert polar_in(ws, "skills", "add", "skills/walk_scripted.skill.yaml").returncode == 0
    r = polar_in(ws, "prompts", "render", "my_skill", "--harness", "corridor", "--seed", "0", "--planner", "my_local")
    assert r.returncode == 0, r.stderr
    assert "- press: Press the button. Needs at(button). Gives lit(lamp)." in r.stdout
    assert "Goal: lit(lamp)" in r.stdout and "walk_scripted" in r.stdout
    # the symbolic planner chains the user's skills (one with the user's own hooks) on the user's game
    r = polar_in(ws, "task", "turn on the lamp", "--harness", "corridor", "--planner", "symbolic", "--out", "t")
    assert r.returncode == 0, r.stdout + r.stderr
    record = json.loads((ws / "t" / "episode.json").read_text())
    assert record["success"] is True and record["extra"]["success_source"] == "harness"
    assert [d["decision"]["skill"] for d in record["decisions"]] == ["walk_scripted", "press"]

    suite = (ws / "evals" / "corridor.yaml").read_text()
    (ws / "evals" / "corridor.yaml").write_text(suite.replace("  - {name: ppo,", "  # - {name: ppo,"))
    first = polar_in(ws, "compare", "corridor", "--workers", "0")
    assert first.returncode == 0 and "ran 2 cell(s), reused 0" in first.stdout, first.stderr
    assert "ran 0 cell(s), reused 2" in polar_in(ws, "compare", "corridor", "--workers", "0").stdout
    game = ws / "harnesses" / "corridor" / "corridor_game.py"
    game.write_text(game.read_text() + "\n# new rules\n")
    assert "ran 2 cell(s), reused 0" in polar_in(ws, "compare", "corridor", "--workers", "0").stdout
    assert "ran 2 cell(s)" in polar_in(ws, "compare", "corridor", "--workers", "0", "--fresh").stdout
    assert (ws / "runs" / "evals" / "corridor" / "report.html").is_file()  # in the workspace, not the checkout
    assert not (ROOT / "runs" / "evals" / "corridor").exists()
