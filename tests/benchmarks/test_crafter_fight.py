"""benchmarks/crafter_fight.py: the pick rule over training runs, and one fight counted from
Crafter's own defeat count and the player's health, through the skill runner on `crafter:`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("crafter")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import crafter_fight  # noqa: E402

from polar.skills.store import SkillLibrary  # noqa: E402


def _cell(run: str, beaten: int, died: int) -> dict:
    return {"run": run, "beaten": beaten, "died": died}


def test_pick_takes_most_foes_beaten_over_both_foes_then_fewer_deaths():
    validation = {"a:z": _cell("a", 60, 30), "a:s": _cell("a", 10, 5),
                  "b:z": _cell("b", 50, 10), "b:s": _cell("b", 25, 5),
                  "c:z": _cell("c", 70, 20), "c:s": _cell("c", 5, 2)}
    assert crafter_fight.pick(validation) == "b"  # 75 beaten against 70 and 75: b has fewer deaths than c
    validation["c:s"] = _cell("c", 6, 2)
    assert crafter_fight.pick(validation) == "c"  # 76 beaten


def test_fights_count_defeats_and_deaths_of_the_scripted_skill():
    skill = SkillLibrary(ROOT / "skills_crafter").get("fight_zombie")
    d = crafter_fight.fights(skill, "zombie", 4, crafter_fight.VALIDATION)
    assert d["episodes"] + d["skipped"] == 4 and d["episodes"] >= 3
    assert 0 <= d["died"] <= d["episodes"] and d["beaten"] >= 1, d  # the scripted skill beats 9 in 10
    assert d["beaten_rate"] == d["beaten"] / d["episodes"] and d["mean_steps"] > 0


def test_the_committed_learnt_skills_carry_their_held_out_measurement_and_fight():
    import json

    result = json.loads((ROOT / "benchmarks/results/crafter_fight.json").read_text())["details"]
    lib = SkillLibrary(ROOT / "skills_crafter_fight")
    for foe in ("zombie", "skeleton"):
        skill = lib.get(f"fight_{foe}")
        assert skill.provenance.env_steps == 600_064 and "crafter_fight2-seed2" in (skill.provenance.source or "")
        (m,) = skill.evaluations
        held = result["held_out"][f"learnt:fight_{foe}"]
        assert (m.successes, m.episodes) == (held["beaten"], held["episodes"])
    d = crafter_fight.fights(lib.get("fight_zombie"), "zombie", 3, crafter_fight.HELD_OUT)
    assert d["episodes"] == 3 and d["beaten"] >= 1, d
