"""Sandbox profiles: names, paths and 'none' resolve once, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.sandboxes.profiles import (
    SandboxProfile,
    load_sandbox_profile,
    profile_names,
    resolve_sandbox,
)


def test_shipped_profiles() -> None:
    assert {"default", "strict", "docker"} <= set(profile_names())
    assert resolve_sandbox("default").backend == "process"
    strict = resolve_sandbox("strict")
    assert strict.backend == "restricted" and strict.limits.timeout_s == 0.2
    assert resolve_sandbox("docker").backend == "docker"


@pytest.mark.parametrize("spec", [None, "none", "None", " none "])
def test_none_disables_policy_code(spec) -> None:
    assert resolve_sandbox(spec) is None


def test_a_profile_or_its_dict_passes_through() -> None:
    p = SandboxProfile(backend="restricted")
    assert resolve_sandbox(p) is p
    assert resolve_sandbox({"backend": "docker", "limits": {"memory_mb": 64}}).limits.memory_mb == 64


def test_a_path_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "mine.yaml"
    good.write_text("backend: restricted\nlimits:\n  cpu_s: 5\n")
    assert resolve_sandbox(str(good)).limits.cpu_s == 5
    with pytest.raises(ConfigError, match=r"missing\.yaml: sandbox profile file not found"):
        resolve_sandbox(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: process\npool_size: 2\n")  # pool_size is gone
    with pytest.raises(ConfigError, match=r"bad\.yaml.*pool_size"):
        load_sandbox_profile(bad)
    with pytest.raises(ConfigError, match=r"sandbox profile 'vm' not found \(known: .*default.*; or 'none'"):
        resolve_sandbox("vm")
