"""Sandbox profiles: a backend plus its limits, in YAML under `sandboxes/profiles/`.

Wherever policy code can run (`polar task --sandbox`, a suite's planner agent `sandbox:`),
the user names a profile: a name under `sandboxes/profiles/` (`default`, `strict`, `docker`
ship), a YAML path, or `none` to refuse policy code. `resolve_sandbox` turns that into a
`SandboxProfile` (or None) once, at the edge, and the profile is passed down to `run_policy`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polar.config import StrictModel, load_yaml
from polar.sandboxes.base import Backend, Sandbox, SandboxLimits, make_sandbox
from polar.workspace import asset_dirs, resolve_asset

DISABLED = "none"  # the profile name that turns policy code off


class SandboxProfile(StrictModel):
    """Which backend runs policy code, and the limits it enforces."""

    backend: Backend = "process"
    limits: SandboxLimits = SandboxLimits()

    def make(self, **kwargs: Any) -> Sandbox:
        """A sandbox of this profile's backend and limits (not started until `load`)."""
        return make_sandbox(self.backend, self.limits, **kwargs)


def profile_names() -> list[str]:
    return sorted({f.stem for d in asset_dirs("sandboxes") for f in d.glob("profiles/*.yaml")})


def load_sandbox_profile(name_or_path: str | Path = "default") -> SandboxProfile:
    """A profile by name (`sandboxes/profiles/<name>.yaml` in the workspace) or by path."""
    return load_yaml(resolve_asset("sandboxes", name_or_path, folder="profiles",
                                   what="sandbox profile", hint=f"or '{DISABLED}' for no policy code"),
                     SandboxProfile)


def resolve_sandbox(spec: str | Path | SandboxProfile | dict | None) -> SandboxProfile | None:
    """None or 'none' -> None (policy code is refused); a profile (or its dict) -> itself;
    a name or YAML path -> the loaded profile. Raises ConfigError naming what is wrong."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == DISABLED):
        return None
    if isinstance(spec, SandboxProfile):
        return spec
    if isinstance(spec, dict):
        return SandboxProfile.model_validate(spec)
    return load_sandbox_profile(spec)
