"""The small things a user hits first, through the real `polar` command: --version, -h as
help everywhere, the README's tour names resolving from any folder, harness ids echoed as
typed (and a nonexistent one exiting 2), `harness check` on a harness whose episodes outlast
the rollout, and skill tables that stay readable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import polar
from polar.domains.minigrid.primitives import primitive_skills
from polar.skills.store import SkillLibrary

ROOT = Path(__file__).resolve().parents[1]


def polar_cli(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("POLAR_SKILLS", None)
    env.pop("POLAR_HOME", None)
    return subprocess.run([sys.executable, "-m", "polar", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_version_and_h_is_help_everywhere(tmp_path: Path) -> None:
    r = polar_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"polar {polar.__version__}"
    for cmd in (["-h"], ["task", "-h"], ["skills", "register", "-h"], ["prompts", "compare", "-h"],
                ["harness", "check", "-h"]):
        r = polar_cli(*cmd, cwd=tmp_path)
        assert r.returncode == 0 and "Usage:" in r.stdout and "Options" in r.stdout, (cmd, r.stdout + r.stderr)


def test_tour_names_resolve_from_any_folder(tmp_path: Path) -> None:
    r = polar_cli("sandbox", "run", "cartpole_policy", "--backend", "process", "--args", "[[0, 0, 0.02, 0.3]]",
                  cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() in ("0", "1"), r.stderr
    r = polar_cli("harness", "describe", "keydoor", cwd=tmp_path)
    assert r.returncode == 0 and "Harness: keydoor" in r.stdout, r.stderr
    r = polar_cli("skills", "list", cwd=tmp_path)  # an empty folder hides nothing: the shipped skills
    assert r.returncode == 0 and "goto@" in r.stdout and "shipped" in r.stdout, r.stderr
    r = polar_cli("compare", "no_such_suite", cwd=tmp_path)  # a name lookup, listing the shipped suites
    assert r.returncode == 2 and "demo" in r.stderr


def test_nonexistent_harness_exits_2_and_ids_are_echoed_as_typed(tmp_path: Path) -> None:
    for cmd in (["task", "x", "-H", "nosuch"], ["eval", "nosuch", "--episodes", "1"],
                ["harness", "check", "gym:NoSuch-v0"]):
        r = polar_cli(*cmd, cwd=tmp_path)
        assert r.returncode == 2, (cmd, r.stdout + r.stderr)
        assert ("nosuch" if "nosuch" in cmd else "gym:NoSuch-v0") in r.stderr
        assert "starting" not in r.stderr  # a bad harness is refused before any model server starts
    typed = str(ROOT / "harnesses" / "keydoor" / "keydoor.yaml")
    r = polar_cli("task", "reach the goal", "-H", typed, "--max-decisions", "1", "--out", str(tmp_path / "run"),
                  cwd=tmp_path)
    assert f"harness {typed} (spec id keydoor)" in " ".join(r.stdout.split()), r.stdout + r.stderr


def test_harness_check_says_no_episode_finished_instead_of_nan(tmp_path: Path) -> None:
    r = polar_cli("harness", "check", "minigrid:MiniGrid-DoorKey-16x16-v0", "--steps", "20", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no episode finished in 20 steps" in r.stdout and "nan" not in r.stdout


@pytest.fixture
def library(tmp_path: Path) -> Path:
    lib = SkillLibrary(tmp_path / "skills")
    for s in primitive_skills():
        lib.register(s)
    long = primitive_skills()[-1].model_copy(update={
        "name": "spin", "description": "Spin around on the spot. " + "It keeps turning and turning. " * 12
                                       + "THE-END-OF-A-LONG-TEXT"})
    lib.register(long)
    return lib.root


def test_skills_search_hides_zero_scores_and_list_truncates(tmp_path: Path, library: Path) -> None:
    r = polar_cli("skills", "search", "open the door", "-L", str(library), cwd=tmp_path)
    assert r.returncode == 0 and "toggle@1" in r.stdout
    assert "drop@1" not in r.stdout and "0.000" not in r.stdout, r.stdout
    r = polar_cli("skills", "search", "fly to the moon", "-L", str(library), cwd=tmp_path)
    assert "no skill matches" in r.stdout
    r = polar_cli("skills", "list", "-L", str(library), cwd=tmp_path)
    assert "spin@1" in r.stdout and "Spin around on the spot" in r.stdout
    assert "THE-END-OF-A-LONG-TEXT" not in r.stdout and "polar skills show" in r.stdout
    r = polar_cli("skills", "show", "spin", "-L", str(library), cwd=tmp_path)
    assert "THE-END-OF-A-LONG-TEXT" in r.stdout
