"""Sandbox profiles: a backend plus its limits, in YAML under `sandboxes/profiles/`."""

from __future__ import annotations

from polar.config import StrictModel, load_yaml
from polar.sandboxes.base import Backend, SandboxLimits
from polar.workspace import resolve_asset


class SandboxProfile(StrictModel):
    backend: Backend = "process"
    limits: SandboxLimits = SandboxLimits()


def load_profile(name_or_path: str = "default") -> SandboxProfile:
    """A profile by name (`sandboxes/profiles/<name>.yaml` in the workspace) or by path."""
    return load_yaml(resolve_asset("sandboxes", name_or_path, folder="profiles", what="sandbox profile"),
                     SandboxProfile)
