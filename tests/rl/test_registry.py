"""The algorithm seam: every registered algorithm resolves to a config section, a policy and
an `Algorithm`; the trainer and the shared code hold no per-algorithm branch; `common/`
imports no algorithm and no algorithm imports another; old checkpoints' pickles still load."""

from __future__ import annotations

import ast
import io
import pickle
import re
from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.rl.common.batches import EpisodeStats
from polar.rl.common.checkpoint import _Unpickler
from polar.rl.config import TrainConfig
from polar.rl.policy import policy_class
from polar.rl.registry import ALGORITHMS, algorithm_spec, algorithm_specs

RL = Path(__file__).resolve().parents[2] / "polar" / "rl"


def test_every_registered_algorithm_resolves() -> None:
    for spec in algorithm_specs():
        assert spec.name in TrainConfig.model_fields, spec.name
        assert isinstance(TrainConfig(harness="gym:CartPole-v1", algo=spec.name).section(), spec.config)
        assert policy_class(spec.name).algo == spec.name
        cls = spec.algorithm_class()
        for method in ("collect", "update", "lr", "state_dict", "load_state_dict", "buffer_state", "load_buffer_state"):
            assert callable(getattr(cls, method)), f"{spec.algorithm}.{method}"


def test_unknown_algorithm_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="algo") as err:
        TrainConfig(harness="gym:CartPole-v1", algo="a2c")
    assert all(name in str(err.value) for name in ALGORITHMS)
    with pytest.raises(ConfigError, match="a2c"):
        algorithm_spec("a2c")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_branch_on_the_algorithm_outside_the_registry() -> None:
    pattern = re.compile(r"algo\s*[!=]=|\.algo\s+in\s|algo\s*==")
    hits = [f"{p.relative_to(RL)}:{i}" for p in RL.rglob("*.py") if p.name != "registry.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_common_imports_no_algorithm_and_algorithms_not_each_other() -> None:
    packages = {f"polar.rl.{name}" for name in ALGORITHMS}
    for path in (RL / "common").rglob("*.py"):
        bad = {m for m in _imports(path) if any(m == p or m.startswith(p + ".") for p in packages)}
        assert not bad, f"{path.name} imports {bad}"
    for name in ALGORITHMS:
        others = packages - {f"polar.rl.{name}"}
        for path in (RL / name).rglob("*.py"):
            bad = {m for m in _imports(path) if any(m == p or m.startswith(p + ".") for p in others)}
            assert not bad, f"{name}/{path.name} imports {bad}"


def test_pickles_naming_the_flat_modules_of_old_checkpoints_load() -> None:
    stats = EpisodeStats(returns=[1.5], lengths=[3])
    old = pickle.dumps(stats, protocol=0).replace(b"polar.rl.common.batches", b"polar.rl.batches")
    assert b"polar.rl.batches" in old
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(old)
    assert _Unpickler(io.BytesIO(old)).load() == stats
