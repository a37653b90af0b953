"""`SkillCatalog`: both libraries satisfy it, its members are exactly what the generic callers
use of a library, and an object that is only a catalog runs an episode as the library does."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from polar.agent import run_episode
from polar.harnesses import make_harness
from polar.planners.symbolic import SymbolicPlanner
from polar.skills import LayeredLibrary, SkillCatalog, SkillLibrary, open_library
from polar.skills.catalog import CATALOG_MEMBERS
from polar.skills.model import Skill, SkillNotFound
from polar.skills.search import rank

ROOT = Path(__file__).resolve().parents[2]
# The generic modules that read a library (the agent, its executors, the evals' agents, options).
CALLERS = ["polar/agent/loop.py", "polar/agent/executors.py", "polar/agent/context.py",
           "polar/evals/planner_agent.py", "polar/evals/hrl_agent.py", "polar/evals/preflight.py",
           "polar/evals/prompts.py", "polar/skills/options.py"]
LIBRARY_NAMES = {"library", "lib"}


def _used_members() -> set[str]:
    """Attributes read off a library in the callers: `library.x`, `lib.x`, `self.library.x`,
    `open_library(...).x`, `skill_library(...).x`, `opened[0].x` (preflight's opened library)."""
    used: set[str] = set()
    for path in CALLERS:
        for node in ast.walk(ast.parse((ROOT / path).read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            v = node.value
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id == "opened":
                v = ast.Name(id="library")
            if (isinstance(v, ast.Name) and v.id in LIBRARY_NAMES) or \
                    (isinstance(v, ast.Attribute) and v.attr in LIBRARY_NAMES) or \
                    (isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                     and v.func.id in {"open_library", "skill_library"}):
                used.add(node.attr)
    return used


def test_the_protocol_names_exactly_what_callers_use() -> None:
    declared = {n for n in vars(SkillCatalog) if not n.startswith("_")}
    assert declared == set(CATALOG_MEMBERS)
    assert _used_members() == set(CATALOG_MEMBERS)


def test_both_libraries_are_catalogs(tmp_path: Path) -> None:
    single = SkillLibrary(tmp_path / "lib")
    layered = LayeredLibrary(SkillLibrary(tmp_path / "top"), [SkillLibrary()])
    for lib in (single, layered, open_library()):
        assert isinstance(lib, SkillCatalog)
    assert not isinstance(object(), SkillCatalog)
    for cls in (SkillLibrary, LayeredLibrary):  # the members are there with the protocol's parameters
        for name in CATALOG_MEMBERS:
            assert hasattr(cls, name) or name == "root", (cls, name)


class ListCatalog:
    """A catalog over a list of skills, no folder behind it (what a test or a remote library is)."""

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = {s.name: s for s in skills}
        self.calls: list[str] = []

    @property
    def root(self) -> Path:
        return Path("<memory>")

    def get(self, ref: str) -> Skill:
        self.calls.append(f"get:{ref}")
        if ref.partition("@")[0] not in self.skills:
            raise SkillNotFound(ref)
        return self.skills[ref.partition("@")[0]]

    def list(self, all_versions: bool = False) -> list[Skill]:
        return [self.skills[n] for n in sorted(self.skills)]

    def search(self, text: str, harness: Any = None, limit: int | None = None,
               include_incompatible: bool = False) -> list[Skill]:
        self.calls.append("search")
        return [s for s, _ in rank(self.list(), text, harness, include_incompatible)][:limit]

    def fingerprint(self) -> str:
        return "memory"


def test_a_catalog_that_is_not_a_library_runs_the_same_episode() -> None:
    task, harness = "use the key to open the door and then get to the goal", "minigrid:MiniGrid-DoorKey-8x8-v0"
    library = SkillLibrary()
    catalog = ListCatalog(library.list())
    assert isinstance(catalog, SkillCatalog)
    with make_harness(harness) as h:
        real = run_episode(task, h, SymbolicPlanner(), library, seed=0)
    with make_harness(harness) as h:
        mine = run_episode(task, h, SymbolicPlanner(), catalog, seed=0)
    assert mine.success and real.success
    assert [s.action for s in mine.steps] == [s.action for s in real.steps]
    assert [d.decision for d in mine.decisions] == [d.decision for d in real.decisions]
    assert catalog.calls[0] == "search" and sum(c.startswith("get:") for c in catalog.calls) == 5
