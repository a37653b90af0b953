"""`SkillCatalog`: what the agent, its executors and the evals read from a skill library.

Two libraries satisfy it: `SkillLibrary` (one folder: the SQLite index and the weights) and
`LayeredLibrary` (the search path: the workspace's library over the shipped one). A caller
that only finds, lists and runs skills takes a `SkillCatalog`, so a test, a remote library or
an in-memory one can stand in; registering, revising and removing skills stay on the concrete
classes (`polar.skills.search_path.Library`), which the commands and the domains' installers use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from polar.skills.model import Skill

# The methods and properties below, by name: a test checks that the callers use exactly these.
CATALOG_MEMBERS = ("root", "get", "list", "search", "fingerprint")


@runtime_checkable
class SkillCatalog(Protocol):
    """A skill library as its readers see it."""

    @property
    def root(self) -> Path:
        """The folder where it is (a layered library: its top, writable one), for messages."""
        ...

    def get(self, ref: str) -> Skill:
        """`name` (the latest version) or `name@version`; raises SkillNotFound naming the skills."""
        ...

    def list(self, all_versions: bool = False) -> list[Skill]:
        """Every skill, each name once (its latest version) unless `all_versions`; sorted by name."""
        ...

    def search(self, text: str, harness: Any = None, limit: int | None = None,
               include_incompatible: bool = False) -> list[Skill]:
        """The skills ranked for a task (`polar.skills.search.rank`); with a harness (or its
        spec), only those usable on it unless `include_incompatible`."""
        ...

    def fingerprint(self) -> str:
        """A digest of the contents (manifests, weights, evaluations, hooks): part of cell keys."""
        ...
