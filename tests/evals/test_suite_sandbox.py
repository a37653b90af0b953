"""A suite's planner agent `sandbox:` names a profile, resolved when the suite loads."""

from __future__ import annotations

import pytest

from polar.errors import ConfigError
from polar.evals.suite import load_suite


def suite(**agent: object) -> dict:
    return {"name": "s", "agents": [{"name": "p", "kind": "planner", "planner": "symbolic", **agent}],
            "harnesses": [{"id": "gym:CartPole-v1"}], "seeds": [0]}


def test_default_strict_none_and_a_path(tmp_path) -> None:
    assert load_suite(suite()).agents[0].sandbox.backend == "process"
    strict = load_suite(suite(sandbox="strict")).agents[0].sandbox
    assert strict.backend == "restricted" and strict.limits.max_env_steps == 2000
    assert load_suite(suite(sandbox="none")).agents[0].sandbox is None
    assert load_suite(suite(sandbox=None)).agents[0].sandbox is None
    path = tmp_path / "mine.yaml"
    path.write_text("backend: restricted\nlimits:\n  timeout_s: 0.1\n")
    resolved = load_suite(suite(sandbox=str(path)))
    assert resolved.agents[0].sandbox.limits.timeout_s == 0.1
    # the resolved profile travels with the suite (suite.json, Ray workers, cell keys)
    again = load_suite(resolved.model_dump(mode="json"))
    assert again.agents[0].sandbox == resolved.agents[0].sandbox


def test_an_unknown_profile_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"suite.*agents.*sandbox.*sandbox profile 'vm' not found"):
        load_suite(suite(sandbox="vm"))
