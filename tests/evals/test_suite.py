from __future__ import annotations

from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.evals.suite import Cell, load_suite

BASE = """
name: t
agents:
  - {name: rnd, kind: random}
harnesses:
  - id: minigrid:MiniGrid-Empty-5x5-v0
seeds: 3
episodes: 2
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "suite.yaml"
    p.write_text(text)
    return p


def test_seed_count_shorthand_and_cells(tmp_path: Path) -> None:
    s = load_suite(_write(tmp_path, BASE))
    assert s.seeds == [0, 1, 2]
    assert s.cells() == [Cell(agent="rnd", harness="Empty-5x5", seed=i) for i in range(3)]
    assert s.episode_seed(2, 1) == s.eval_seed + 2001


def test_unknown_key_names_the_path(tmp_path: Path) -> None:
    p = _write(tmp_path, BASE.replace("kind: random}", "kind: random, temprature: 1}"))
    with pytest.raises(ConfigError, match=r"suite.yaml: agents\.0\.random\.temprature: unknown key"):
        load_suite(p)


def test_pure_rl_needs_exactly_one_source(tmp_path: Path) -> None:
    text = BASE.replace("{name: rnd, kind: random}", "{name: ppo, kind: pure_rl}")
    with pytest.raises(ConfigError, match="exactly one of train_steps"):
        load_suite(_write(tmp_path, text))


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    text = BASE.replace("  - {name: rnd, kind: random}", "  - {name: rnd, kind: random}\n  - {name: rnd, kind: random}")
    with pytest.raises(ConfigError, match=r"duplicate agent name\(s\) \['rnd'\]"):
        load_suite(_write(tmp_path, text))


def test_cell_key_changes_with_what_decides_the_result(tmp_path: Path) -> None:
    s = load_suite(_write(tmp_path, BASE))
    c = s.cells()[0]
    s2 = load_suite(_write(tmp_path, BASE.replace("episodes: 2", "episodes: 3")))
    s3 = load_suite(_write(tmp_path, BASE.replace("name: t", "name: other\ndescription: x")))
    assert s.cell_key(c) != s2.cell_key(c)
    assert s.cell_key(c) == s3.cell_key(c)  # the suite's name does not change a cell


def test_missing_suite_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no-such-suite"):
        load_suite("no-such-suite")


def test_shipped_suites_validate() -> None:
    root = Path(__file__).resolve().parents[2] / "evals"
    for p in sorted(root.glob("*.yaml")):
        load_suite(p)


def test_with_planner_swaps_every_planner_profile(tmp_path: Path) -> None:
    text = BASE.replace("  - {name: rnd, kind: random}",
                        "  - {name: rnd, kind: random}\n  - {name: p, kind: planner, planner: symbolic}")
    s = load_suite(_write(tmp_path, text)).with_planner("planners/openai.yaml")
    assert s.agent("p").planner == "planners/openai.yaml" and s.agent("rnd").kind == "random"
    assert s.cell_key(s.cells()[-1]) != load_suite(_write(tmp_path, text)).cell_key(s.cells()[-1])


def test_per_agent_seed_subset(tmp_path: Path) -> None:
    text = BASE.replace("  - {name: rnd, kind: random}",
                        "  - {name: rnd, kind: random}\n  - {name: few, kind: random, seeds: [0, 2]}")
    s = load_suite(_write(tmp_path, text))
    assert [c.seed for c in s.cells() if c.agent == "few"] == [0, 2]
    assert [c.seed for c in s.cells() if c.agent == "rnd"] == [0, 1, 2]
    bad = BASE.replace("  - {name: rnd, kind: random}", "  - {name: rnd, kind: random, seeds: [7]}")
    with pytest.raises(ConfigError, match="agents.rnd.seeds"):
        load_suite(_write(tmp_path, bad))


def test_the_demo_runs_the_trained_planner_beside_its_base_model_the_reference_ppo_and_random() -> None:
    demo = load_suite("demo")
    arms = {a.name: (a.kind, getattr(a, "planner", None) or getattr(a, "algo", None)) for a in demo.agents}
    assert set(arms.values()) == {("planner", "symbolic"), ("planner", "polar-planner"), ("planner", "local"),
                                  ("pure_rl", "ppo"), ("random", None)}
    assert demo.eval_seed >= 100_000  # held out from the trained planner's training seeds
