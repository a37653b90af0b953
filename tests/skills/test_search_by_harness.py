"""`polar skills search` finds a skill by the harness it was trained on (its provenance) or
accepts; the planner's retrieval still ranks on what a skill does only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from polar.skills.search import rank
from polar.skills.store import SkillLibrary
from tests.skills.conftest import manifest, tiny_policy

ROOT = Path(__file__).resolve().parents[2]
DOORKEY8 = "minigrid:MiniGrid-DoorKey-8x8-v0"


def _library(root: Path) -> SkillLibrary:
    lib = SkillLibrary(root)
    lib.register_policy(tiny_policy(), **manifest("opener", description="Open what is in front.",
                                                  provenance={"trained_on": [DOORKEY8]}))
    lib.register_policy(tiny_policy(1), **manifest("walker", description="Walk the corridor.",
                                                   provenance={"trained_on": ["minigrid:MiniGrid-KeyCorridorS3R3-v0"]}))
    lib.register_policy(tiny_policy(2), **manifest("balancer", description="Balance the pole.",
                                                   harnesses=["gym:CartPole-*"]))
    return lib


def test_the_cli_finds_a_skill_by_its_training_harness(tmp_path: Path) -> None:
    _library(tmp_path / "skills")

    def search(query: str) -> list[str]:
        p = subprocess.run([sys.executable, "-m", "polar", "skills", "search", query, "-L",
                            str(tmp_path / "skills"), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        return [row["ref"] for row in json.loads(p.stdout)]

    assert search("DoorKey-8x8") == ["opener@1"]
    assert search(DOORKEY8)[0] == "opener@1"
    assert search("KeyCorridorS3R3") == ["walker@1"]
    assert search("cartpole") == ["balancer@1"]  # the ids it accepts count too


def test_planner_retrieval_does_not_match_training_harnesses(tmp_path: Path) -> None:
    skills = _library(tmp_path / "skills").list()
    assert [s.name for s, sc in rank(skills, "DoorKey-8x8") if sc > 0] == []
    assert [s.name for s, sc in rank(skills, "DoorKey-8x8", by_harness=True) if sc > 0] == ["opener"]
