"""Where Polar finds the assets a user edits (harness specs, skills, prompts, ...).

Search order for a folder such as `prompts`: `./prompts` under the current directory,
`$POLAR_HOME/prompts`, the source checkout Polar runs from, then the defaults shipped
inside the wheel (`polar/_defaults/prompts`). The first two are the user's workspace; the
last two are *shipped*: Polar reads them and never writes into them (`is_shipped`).
"""

from __future__ import annotations

import os
from pathlib import Path

from polar.errors import ConfigError

ASSET_DIRS = ("harnesses", "skills", "planners", "prompts", "sandboxes", "evals")
_PACKAGE = Path(__file__).resolve().parent


def search_roots() -> list[Path]:
    roots = [Path.cwd()]
    if home := os.environ.get("POLAR_HOME"):
        roots.append(Path(home).expanduser())
    roots.append(_PACKAGE.parent)  # a source checkout / editable install
    roots.append(_PACKAGE / "_defaults")  # the copies shipped in the wheel
    seen: list[Path] = []
    for r in roots:
        r = r.resolve()
        if r not in seen:
            seen.append(r)
    return seen


def shipped_roots() -> list[Path]:
    """The installation's own asset roots: the source checkout, the wheel's defaults."""
    return [_PACKAGE.parent.resolve(), (_PACKAGE / "_defaults").resolve()]


def is_shipped(path: str | Path) -> bool:
    """Whether `path` lies in an asset folder of the installation (never written by Polar)."""
    p = Path(path).expanduser().resolve()
    return any(p == r / kind or (r / kind) in p.parents for r in shipped_roots() for kind in ASSET_DIRS)


def user_dir(kind: str) -> Path:
    """The workspace's folder of this kind, where new assets (e.g. registered skills) go: an
    existing `./<kind>`, else `$POLAR_HOME/<kind>` when POLAR_HOME is set, else `./<kind>`."""
    if kind not in ASSET_DIRS:
        raise ValueError(f"unknown asset folder {kind!r}; expected one of {ASSET_DIRS}")
    here = Path.cwd() / kind
    if here.is_dir():
        return here
    if home := os.environ.get("POLAR_HOME"):
        return Path(home).expanduser() / kind
    return here


def asset_dirs(kind: str) -> list[Path]:
    """Every existing folder of this kind, highest priority first."""
    if kind not in ASSET_DIRS:
        raise ValueError(f"unknown asset folder {kind!r}; expected one of {ASSET_DIRS}")
    return [r / kind for r in search_roots() if (r / kind).is_dir()]


def find_asset(kind: str, relative: str) -> Path | None:
    """The first `<root>/<kind>/<relative>` that exists, or None."""
    for d in asset_dirs(kind):
        p = d / relative
        if p.exists():
            return p
    return None


def resolve_asset(kind: str, name_or_path: str | Path, *, folder: str = "", suffix: str = ".yaml",
                  what: str = "file", hint: str = "") -> Path:
    """A file given by path, or by name in the workspace's `<kind>/<folder>/` folders
    (`<name><suffix>` or `<name>`). A name holding '/' or starting with '.' is a path only
    (never looked up inside an asset folder, so `../../x` cannot escape it), and a path must
    end in `suffix` (or .yaml/.yml). A miss raises ConfigError: a missing path says so; a
    missing name lists the names found there (and `hint`, e.g. another accepted value)."""
    p = Path(name_or_path).expanduser()
    name = str(name_or_path)
    suffixes = (suffix, ".yaml", ".yml")
    if "/" in name or name.startswith((".", "~")):
        if p.suffix in suffixes and p.is_file():
            return p
        if p.suffix in suffixes:
            raise ConfigError(f"{p}: {what} file not found")
        raise ConfigError(f"{name!r}: not a {what} name, and not a path to a {suffix} file")
    if p.suffix in suffixes and p.is_file():
        return p
    sub = f"{folder}/" if folder else ""
    for rel in (f"{sub}{name}{suffix}", f"{sub}{name}"):
        found = find_asset(kind, rel)
        if found is not None and found.is_file():
            return found
    if p.suffix in suffixes:
        raise ConfigError(f"{p}: {what} file not found")
    known = sorted({q.stem for d in asset_dirs(kind) for q in (d / folder).glob(f"*{suffix}")})
    raise ConfigError(f"{what} {name!r} not found (known: {', '.join(known) or 'none'}"
                      f"{'; ' + hint if hint else ''}; or a path to a {suffix} file)")
