"""What a harness's behaviour depends on, as one hash: the key part that makes a cached eval
cell run again when the game changes.

- a YAML spec: the spec file, and for a connector game the files its command names plus the
  other source files beside them (a game split over modules: `keydoor_connector.py` imports
  `keydoor_game.py`); an alias (`base:`) adds the fingerprint of its base id;
- `gym:pkg.module:EnvClass` (an entry point): the source file of `pkg.module`;
- `gym:` and domain (`minigrid:`, `maze:`) registry ids: the versions of the packages that
  implement them (a domain names its own, polar.domains.registry).

A file that cannot be read counts as its absence ("missing"), so the key still changes when it
appears.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from importlib import metadata
from pathlib import Path

from polar.config import read_mapping

SOURCE_SUFFIXES = {".py", ".js", ".ts", ".lua", ".json", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini"}
MAX_FILES = 200  # per folder: a game's sources, not a data set
GYM_PACKAGES = ("gymnasium",)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _file(path: Path) -> str:
    try:
        return _sha(path.read_bytes())
    except OSError:
        return "missing"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def _sources_beside(script: Path) -> list[Path]:
    """The script and the source files of its folder (non-recursive, hidden files skipped)."""
    folder = script.parent
    if not folder.is_dir():
        return [script]
    found = sorted(p for p in folder.iterdir()
                   if p.is_file() and not p.name.startswith(".") and p.suffix in SOURCE_SUFFIXES)
    return sorted({script, *found[:MAX_FILES]})


def _spec_files(spec_path: Path) -> list[Path]:
    """The spec and, for a connector, every existing file its command names (with its siblings)."""
    files = [spec_path]
    try:
        data = read_mapping(spec_path)
    except Exception:  # an unreadable spec still has its own bytes in the key
        return files
    connector = data.get("connector")
    command = connector.get("command") if isinstance(connector, dict) else None
    for arg in command if isinstance(command, list) else []:
        p = spec_path.parent / str(arg)
        if isinstance(arg, str) and p.is_file():
            files += _sources_beside(p)
    return list(dict.fromkeys(files))


def harness_fingerprint(harness_id: str, _depth: int = 0) -> str:
    """A hash of what `harness_id`'s behaviour depends on (see the module docstring)."""
    from polar.domains.registry import domain_of
    from polar.harnesses.registry import _yaml_specs, families

    if _depth > 4:  # an alias chain that loops: the files seen so far decide
        return "alias-loop"
    _, _, env_id = harness_id.partition(":")
    if harness_id.startswith(families()):
        module, _, name = env_id.rpartition(":")
        domain = domain_of(harness_id)
        parts = [f"{p}={_version(p)}" for p in (domain.packages if domain else GYM_PACKAGES)]
        if module:
            spec = importlib.util.find_spec(module) if _importable(module) else None
            origin = Path(spec.origin) if spec is not None and spec.origin else None
            parts.append(f"{module}={_file(origin) if origin else 'missing'}")
        return _sha("|".join([harness_id, *parts]).encode())
    path = Path(harness_id)
    if path.suffix not in (".yaml", ".yml"):
        path = _yaml_specs().get(harness_id, path)
    parts = [f"{os.path.relpath(p, path.parent)}={_file(p)}" for p in _spec_files(path)]
    try:
        base = read_mapping(path).get("base")
    except Exception:
        base = None
    if isinstance(base, str):
        parts.append(f"base={harness_fingerprint(base, _depth + 1)}")
    return _sha("|".join([harness_id, *parts]).encode())


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
