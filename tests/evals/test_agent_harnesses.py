"""An agent limited to some of a suite's harnesses (`harnesses:`): its other cells are not
planned, its keys do not move, an unknown name is refused, and the report marks the rest '-'."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.evals.comparison import compare
from polar.evals.suite import Cell, load_suite

SUITE = {
    "name": "some", "seeds": [0], "episodes": 2, "trace": 0, "workers": 0,
    "agents": [{"name": "all", "kind": "random"}, {"name": "one", "kind": "random", "harnesses": ["cartpole"]}],
    "harnesses": [{"id": "gym:CartPole-v1", "name": "cartpole"}, {"id": "gym:Acrobot-v1", "name": "acrobot"}],
}


def _suite(**agent_two: object) -> dict:
    agents = [SUITE["agents"][0], {**SUITE["agents"][1], **agent_two}]
    return {**SUITE, "agents": agents}


def test_only_the_listed_harnesses_are_planned_by_label_or_id() -> None:
    s = load_suite(_suite())
    assert s.cells() == [Cell(agent="all", harness="cartpole", seed=0), Cell(agent="all", harness="acrobot", seed=0),
                         Cell(agent="one", harness="cartpole", seed=0)]
    by_id = load_suite(_suite(harnesses=["gym:Acrobot-v1"]))
    assert [c.harness for c in by_id.cells() if c.agent == "one"] == ["acrobot"]


def test_an_unknown_harness_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"agents\.one\.harnesses: \['pendulum'\] name no harness of this suite "
                                          r"\(labels: \['cartpole', 'acrobot'\]\)"):
        load_suite(_suite(harnesses=["cartpole", "pendulum"]))
    with pytest.raises(ConfigError, match="harnesses"):
        load_suite(_suite(harnesses=[]))


def test_the_list_picks_cells_and_leaves_their_keys_alone() -> None:
    limited, everywhere = load_suite(_suite()), load_suite(_suite(harnesses=None))
    cell = Cell(agent="one", harness="cartpole", seed=0)
    assert limited.cell_key(cell) == everywhere.cell_key(cell)


def test_compare_runs_the_planned_cells_only_and_the_report_marks_the_rest(tmp_path: Path) -> None:
    results, paths = compare(_suite(), tmp_path / "out", progress=False, quiet=True)
    assert sorted((r.agent, r.harness) for r in results.rows) == [("all", "acrobot"), ("all", "cartpole"),
                                                                   ("one", "cartpole")]
    assert results.missing_cells == [] and results.agent_harnesses == {"one": ["cartpole"]}
    assert not (tmp_path / "out" / "cells" / "one" / "acrobot").exists()
    md = paths["markdown"].read_text()
    assert "| agent | cartpole | acrobot |" in md and "| one | played | - |" in md
