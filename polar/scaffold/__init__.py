"""`polar init DIR`: lay out a workspace with one example of each asset (see workspace/README.md).

The files come from `polar/scaffold/workspace/`, shipped inside the package. Nothing that
exists is overwritten, and Polar's own checkout is refused as a target: a workspace is the
user's folder, and Polar never writes into the checkout or the package it runs from.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from polar.errors import ConfigError

SOURCE = Path(__file__).resolve().parent / "workspace"
_POLAR_ROOT = Path(__file__).resolve().parents[2]  # the checkout (or site-packages) holding polar/


def scaffold_files() -> list[Path]:
    """The example files, relative to the workspace root."""
    return sorted(p.relative_to(SOURCE) for p in SOURCE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def init_workspace(target: str | Path) -> list[Path]:
    """Copy the example workspace into `target` (created if missing); returns the files written.
    Refuses, before writing anything, a target inside Polar's own checkout or package, and one
    where any of the files already exists."""
    dest = Path(target).expanduser().resolve()
    if dest == _POLAR_ROOT or _POLAR_ROOT in dest.parents:
        raise ConfigError(f"{dest}: inside Polar's own checkout ({_POLAR_ROOT}); a workspace is a folder of "
                          "your own, e.g. polar init ~/my-polar")
    files = scaffold_files()
    clash = [f for f in files if (dest / f).exists()]
    if clash:
        raise ConfigError(f"{dest}: already holds {', '.join(str(f) for f in clash[:5])}"
                          f"{' ...' if len(clash) > 5 else ''}; nothing was written (choose an empty folder)")
    written = []
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCE / f, dest / f)
        written.append(dest / f)
    return written
