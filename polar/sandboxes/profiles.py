"""Sandbox profiles: a backend plus its limits, in YAML under `sandboxes/profiles/`."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field

from polar.config import SAFE_NAME, StrictModel, load_yaml
from polar.errors import ConfigError
from polar.sandboxes.base import Backend, SandboxLimits
from polar.workspace import asset_dirs, find_asset


class SandboxProfile(StrictModel):
    backend: Backend = "process"
    pool_size: int = Field(2, ge=1)
    limits: SandboxLimits = SandboxLimits()


def load_profile(name_or_path: str = "default") -> SandboxProfile:
    """A profile by name (`sandboxes/profiles/<name>.yaml` in the workspace) or by path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.exists():
        return load_yaml(p, SandboxProfile)
    if not re.match(SAFE_NAME, name_or_path) or ".." in name_or_path:
        raise ConfigError(f"sandbox profile {name_or_path!r}: not a profile name, and no such .yaml file")
    found = find_asset("sandboxes", f"profiles/{name_or_path}.yaml")
    if found is None:
        names = sorted({f.stem for d in asset_dirs("sandboxes") for f in d.glob("profiles/*.yaml")})
        raise ConfigError(f"no sandbox profile named {name_or_path!r} "
                          f"(known: {', '.join(names) or 'none'})")
    return load_yaml(found, SandboxProfile)
