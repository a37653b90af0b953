"""`polar compare` reads its suite once and each planner profile once per run, and passes the
resolved objects down (preflight, cell keys, the cells, the report): counted on a real run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import polar.evals.suite as suite_module
import polar.planners.profile as profile_module
from polar.commands.app import app
from polar.evals.cells import cell_key
from polar.evals.planner_agent import PlannerAgent, PlannerProfiles, resolve_profile
from polar.evals.suite import load_suite

SUITE = {
    "name": "once",
    "agents": [{"name": "rnd", "kind": "random"}, {"name": "sym", "kind": "planner", "planner": "symbolic"}],
    "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 40}],
    "seeds": 2,
    "episodes": 2,
}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times a suite file and a planner profile file are parsed."""
    counts: Counter[str] = Counter()

    def counting(module: object, what: str) -> None:
        real = module.read_mapping  # type: ignore[attr-defined]

        def read(path: str | Path, **kw: object) -> dict:
            counts[what] += 1
            return real(path, **kw)

        monkeypatch.setattr(module, "read_mapping", read)

    counting(suite_module, "suite")
    counting(profile_module, "profile")
    return counts


def test_compare_reads_the_suite_once_and_the_profile_once(tmp_path: Path, reads: Counter[str]) -> None:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SUITE))
    out = CliRunner().invoke(app, ["compare", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"),
                                   "--workers", "0"])
    assert out.exit_code == 0, out.output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert sorted((r["agent"], r["episodes"]) for r in results["rows"]) == [("rnd", 4), ("sym", 4)]
    assert len(list((tmp_path / "out" / "cells").rglob("seed-*.json"))) == 4  # 2 agents x 2 seeds
    # before: the suite once, the profile 13 times (preflight 2, keys 6, preparing 4, the report 1)
    assert reads == {"suite": 1, "profile": 1}

    reads.clear()  # a resumed run reuses every cell: the same single reads, nothing played
    again = CliRunner().invoke(app, ["compare", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out")])
    assert again.exit_code == 0 and "ran 0 cell(s), reused 4" in again.output, again.output
    assert reads == {"suite": 1, "profile": 1}


def test_the_resolved_profile_gives_the_same_key_as_reading_it_again(tmp_path: Path) -> None:
    """Passing the profile down changes no cell key: each cell's key with the run's resolved
    profile equals the key computed from the files alone."""
    suite = load_suite({**SUITE, "agents": [*SUITE["agents"], {"name": "llm", "kind": "planner", "planner": "openai",
                                                             "template": "planner_skill", "budget": {"llm_calls": 3}}]})
    profiles = PlannerProfiles()
    for cell in suite.cells():
        assert cell_key(suite, cell, profiles=profiles) == cell_key(suite, cell)
    llm = suite.agent("llm")
    assert PlannerAgent.inputs_fingerprint(llm, profiles(llm)) == PlannerAgent.inputs_fingerprint(llm)
    assert profiles(llm).built().budgets.max_calls == 3  # the suite's overrides are in the built profile
    assert profiles(llm).as_written().budgets.max_calls != 3
    assert len(profiles.resolved) == 2  # one resolution per planner config, shared by its seeds


def test_a_broken_override_is_reported_by_the_resolution(tmp_path: Path) -> None:
    config = load_suite({**SUITE, "agents": [{"name": "sym", "kind": "planner", "planner": "symbolic",
                                              "overrides": {"options": {"max_repeats": 0}}}]}).agent("sym")
    resolved = resolve_profile(config)
    assert resolved.as_written().backend == "symbolic" and resolved.profile is None
    with pytest.raises(Exception, match="options.max_repeats: must be an integer >= 1"):
        resolved.built()
