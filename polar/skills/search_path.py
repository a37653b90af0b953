"""The skill library search path: which libraries a lookup sees, in which order, and where a
new registration goes.

- A library named explicitly (`--library DIR`, a suite agent's `skills: DIR`, or
  `$POLAR_SKILLS`) is used alone: lookups and registrations both use that one folder. A bare
  folder name (`skills_memory`) is looked up like an asset: the workspace, then the installation.
- Otherwise the search path is the workspace's library (`./skills`, else
  `$POLAR_HOME/skills`), then the shipped library (the source checkout's `skills/`, else the
  copy inside the wheel). A name found in the workspace hides the shipped skill of that name;
  an empty (or missing) workspace library hides nothing. Registrations, evaluations and
  removals go to the workspace library, created on first use. The shipped library is
  read-only: when the workspace *is* the checkout, writes are refused with a message saying
  how to get a workspace of one's own (`polar init DIR`) or to name the library on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from polar.skills.model import Measurement, Skill, SkillError, SkillNotFound
from polar.skills.store import SkillLibrary, parse_ref, shipped_library


class LayeredLibrary:
    """Several libraries searched in order; writes go to the first (`top`)."""

    def __init__(self, top: SkillLibrary, below: list[SkillLibrary]) -> None:
        self.top = top
        self.below = below

    # the single-library attributes callers print: the top library's
    @property
    def root(self) -> Path:
        return self.top.root

    @property
    def index(self) -> Path:
        return self.top.index

    @property
    def layers(self) -> list[SkillLibrary]:
        return [self.top, *self.below]

    def describe(self) -> str:
        """The search path in words, highest precedence first."""
        return " > ".join(f"{lib.root}{' (read-only)' if lib.read_only else ''}" for lib in self.layers)

    # --- reading ------------------------------------------------------------------------

    def _names(self, lib: SkillLibrary) -> set[str]:
        return {s.name for s in lib.list()}

    def get(self, ref: str) -> Skill:
        name, _ = parse_ref(ref)
        for lib in self.layers:
            if name in self._names(lib):
                return lib.get(ref)
        known = sorted({n for lib in self.layers for n in self._names(lib)})
        raise SkillNotFound(f"no skill {name!r} in {self.describe()} (skills here: {', '.join(known) or 'none'})")

    def list(self, all_versions: bool = False) -> list[Skill]:
        """Each name once, from the first library holding it; sorted by name."""
        seen: dict[str, list[Skill]] = {}
        for lib in self.layers:
            for s in lib.list(all_versions=all_versions):
                if s.name not in seen or seen[s.name][0].library_root == s.library_root:
                    seen.setdefault(s.name, []).append(s)
        return [s for name in sorted(seen) for s in seen[name]]

    def versions(self, name: str) -> list[int]:
        for lib in self.layers:
            if name in self._names(lib):
                return lib.versions(name)
        return []

    def search(self, text: str, harness: Any = None, limit: int | None = None,
               include_incompatible: bool = False) -> list[Skill]:
        from polar.skills.search import rank

        return [s for s, _ in rank(self.list(), text, harness, include_incompatible)][:limit]

    def fingerprint(self) -> str:
        import hashlib

        return hashlib.sha256("|".join(lib.fingerprint() for lib in self.layers).encode()).hexdigest()[:16]

    # --- writing: the top library only --------------------------------------------------

    def register(self, skill: Skill, tensors: dict[str, Any] | None = None) -> Skill:
        return self.top.register(skill, tensors=tensors)

    def register_policy(self, policy: Any, **manifest: Any) -> Skill:
        return self.top.register_policy(policy, **manifest)

    def record_evaluation(self, skill: Skill, measurement: Measurement) -> None:
        owner = next((lib for lib in self.layers if lib.root.resolve() == (skill.library_root or Path()).resolve()),
                     None)
        if owner is None:
            raise SkillNotFound(f"{skill.ref} is not from {self.describe()}")
        owner.record_evaluation(skill, measurement)

    def remove(self, ref: str) -> list[str]:
        name, _ = parse_ref(ref)
        if name not in self._names(self.top) and any(name in self._names(lib) for lib in self.below):
            raise SkillError(f"skill {name!r} is in {self.below[0].root}, not in {self.top.root}; "
                             + (self.below[0].read_only or "it is read-only"))
        return self.top.remove(ref)

    def cleanup(self) -> list[Path]:
        return self.top.cleanup()

    def clean_staging(self) -> list[Path]:
        return self.top.clean_staging()

    def rebuild_index(self) -> tuple[list[str], list[str], Path | None]:
        return self.top.rebuild_index()


Library = SkillLibrary | LayeredLibrary


def _named_library(name: str) -> SkillLibrary | None:
    """A library given by its folder's bare name (`skills_memory`), found like any asset: in
    the workspace, then the installation (a suite means the same from any folder)."""
    from polar.workspace import search_roots, shipped_roots

    if "/" in name or name.startswith((".", "~")) or Path(name).is_absolute():
        return None
    for r in search_roots():
        d = r / name
        if (d / "library.sqlite").is_file():
            return shipped_library(d) if r in shipped_roots() else SkillLibrary(d)
    return None


def open_library(root: str | Path | None = None) -> Library:
    """The library a command or an agent uses: `root` (or `$POLAR_SKILLS`) alone when given,
    else the workspace library over the shipped one (see the module docstring)."""
    if root is not None:
        return _named_library(str(root)) or SkillLibrary(Path(root).expanduser())
    if env := os.environ.get("POLAR_SKILLS"):
        return SkillLibrary(Path(env).expanduser())
    from polar.workspace import is_shipped, shipped_roots, user_dir

    top_dir = user_dir("skills")
    top = shipped_library(top_dir) if is_shipped(top_dir) else SkillLibrary(top_dir)
    below: list[SkillLibrary] = []
    for r in shipped_roots():
        d = r / "skills"
        if d.is_dir() and d.resolve() != top_dir.resolve() and (d / "library.sqlite").is_file():
            below.append(shipped_library(d))
            break  # the checkout's library, else the wheel's copy: one shipped library
    return LayeredLibrary(top, below) if below else top
