"""Where Polar finds the assets a user edits (harness specs, skills, prompts, ...).

Search order for a folder such as `prompts`: `./prompts` under the current directory,
`$POLAR_HOME/prompts`, the source checkout Polar runs from, then the defaults shipped
inside the wheel (`polar/_defaults/prompts`). The first two are the user's workspace; the
last two are *shipped*: Polar reads them and never writes into them (`is_shipped`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

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


# --- paths inside config files ----------------------------------------------------------------

# "path": always a path; "ref": an asset name, or a path when it holds '/' or starts with '.'/'~';
# "harness": a harness id, or a path when it ends in .yaml/.yml; "template": a name, or a path when
# it holds '/' or ends in .j2; "model": a model name, or a path when it holds '/' or ends in .gguf
PathKind = Literal["path", "ref", "harness", "template", "model"]


def names_a_path(value: str, kind: PathKind) -> bool:
    """Whether a config value is a path (not an asset name or a harness id), by the same rule
    the lookups use (`resolve_asset`: a name holding '/' or starting with '.' or '~' is a path)."""
    if kind == "path":
        return True
    if kind == "harness":
        return value.endswith((".yaml", ".yml"))
    if kind == "template":
        return "/" in value or value.endswith(".j2")
    if kind == "model":
        return "/" in value or value.endswith(".gguf")
    return "/" in value or value.startswith((".", "~"))


def against_file(value: str, source: Path, field: str, kind: PathKind = "ref", *, contained: bool = False) -> str:
    """A path that a config file names, resolved against the folder of that file (not the
    current directory), so the file means the same from anywhere. Names, absolute paths and
    `~` paths are returned as they are. `contained`: a relative path may not leave the file's
    folder (`..`, or a symlink pointing out): a ConfigError naming the file and the field."""
    if not isinstance(value, str) or not value or not names_a_path(value, kind) or value.startswith("~") \
            or os.path.isabs(value):
        return value
    base = source.resolve().parent
    joined = base / os.path.normpath(value)
    if contained and not joined.resolve().is_relative_to(base):
        raise ConfigError(f"{source}: {field}: {value!r} leaves the folder of {source.name} ({base}); a relative "
                          "path must stay beside the file (give an absolute path, or an asset name)")
    return os.path.normpath(joined)


def recipe_paths(data: dict, path: Path) -> dict:
    """A training recipe's harness spec paths (`harness: my/game.yaml`, one or a list) resolved
    against the recipe's folder; its `out` is where the run writes, under the current directory."""
    h = data.get("harness")
    if isinstance(h, str):
        data["harness"] = against_file(h, path, "harness", "harness")
    elif isinstance(h, list):
        data["harness"] = [against_file(v, path, f"harness.{i}", "harness") for i, v in enumerate(h)]
    return data
