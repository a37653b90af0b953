"""The committed suite results stay reusable: a code change that re-keys finished cells would
make `polar compare` re-run hours of training and LLM episodes, so it must be deliberate."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.evals.cells import cell_key, load_cell
from polar.evals.runner import cell_path
from polar.evals.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]


# Every suite whose results are committed (evals/<name>.yaml with evals/results/<name>/).
COMMITTED = sorted(p.stem for p in (ROOT / "evals").glob("*.yaml") if (ROOT / "evals" / "results" / p.stem).is_dir())


@pytest.mark.parametrize("name", COMMITTED)
def test_every_committed_cell_matches_its_suite_under_the_current_code(name: str) -> None:
    suite = load_suite(ROOT / "evals" / f"{name}.yaml")
    out = ROOT / "evals" / "results" / name
    cache: dict[str, str] = {}
    stale = [c.slug for c in suite.cells()
             if cell_path(out, c).is_file() and load_cell(out, suite, c, cell_key(suite, c, cache)) is None]
    assert stale == [], f"{len(stale)} committed cells of {name} would re-run: {stale[:5]}"


def test_a_trained_models_key_does_not_depend_on_where_the_cache_lives(tmp_path: Path, monkeypatch) -> None:
    """The shipped planner's weights live in Polar's cache; a test run's own cache or another
    user's home must not re-key the committed cells that played it."""
    from polar.evals.planner_agent import _weights_fingerprint

    keys = []
    for folder in ("a", "b"):
        monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / folder))
        keys.append(_weights_fingerprint("polar-planner"))
    assert keys[0] == keys[1] and keys[0][0].startswith("model:<cache>/models/polar-planner-")
