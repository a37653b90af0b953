"""The layering of polar/, checked on the source: a module imports only from its own area, the
areas its area may use, or lower layers. Imports inside functions count too (a lazy import is
still a dependency), except in the few factory functions listed below; the import graph has
no cycles outside them either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "polar"

# Lowest first. The command line (`polar.commands`) is the top layer: nothing imports it.
LAYERS: list[set[str]] = [
    {"polar", "polar.wire", "polar.config", "polar.errors", "polar.episode", "polar.workspace",
     "polar.statistics", "polar.predicates", "polar.files", "polar.console", "polar.ownership",
     "polar.devices", "polar.domains.registry"},  # the registry: what each domain offers, by name
    {"polar.harnesses", "polar.llm", "polar.prompts"},
    {"polar.rl", "polar.sandboxes", "polar.skills", "polar.planners"},
    {"polar.agent", "polar.domains"},  # domains: one folder per world (MiniGrid, PointMaze)
    {"polar.evals", "polar.scaffold"},  # scaffold: `polar init` lays out the example workspace
    {"polar.commands"},
]
# Areas of one layer are independent of each other, except where listed (user -> used).
SAME_LAYER: dict[str, set[str]] = {
    "polar.config": {"polar.errors"},
    "polar.wire": {"polar.errors"},
    "polar.workspace": {"polar.errors"},
    "polar.episode": {"polar.files"},
    "polar.devices": {"polar.errors"},
}
# The domain registry finds each domain by folder (importlib, a run-time choice, see
# polar.domains.registry.domains); generic layers reach a domain only through it.
# Functions that build an object chosen at run time (a factory) may import it lazily from anywhere.
FACTORY_FUNCTIONS: set[tuple[str, str]] = {
    ("polar.sandboxes.base", "make_sandbox"),  # the backend a profile names
    ("polar.planners.profile", "load_planner"),  # the planner a profile names
    ("polar.llm.models", "weights_path"),  # the weights an entry names: a shipped adapter is merged
}

# The only generic modules that import a domain: the module paths committed skill manifests name
# (`polar.skills.minigrid.goto:hook_features`), each an alias of the domain module itself.
DOMAIN_IMPORTS: set[str] = {
    "polar.skills.minigrid.goto", "polar.skills.minigrid.memory", "polar.skills.maze.reach",
}
GENERIC_AREAS = {"polar.harnesses", "polar.skills", "polar.planners", "polar.agent", "polar.evals", "polar.rl",
                 "polar.llm", "polar.prompts", "polar.sandboxes", "polar.scaffold"}


def _area(module: str) -> str:
    """The layer table's entry a module belongs to: its longest listed prefix."""
    if module == "polar.__main__":  # `python -m polar` is the command line
        return "polar.commands"
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if any(prefix in layer for layer in LAYERS):
            return prefix
    raise AssertionError(f"{module}: not in the layer table; add its area to LAYERS")


def _layer(area: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if area in layer)


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class _Imports(ast.NodeVisitor):
    """(imported module, enclosing function or None, under TYPE_CHECKING) for every import."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package
        self.found: list[tuple[str, str | None, bool]] = []
        self._function: list[str] = []
        self._type_checking = False

    def _add(self, name: str) -> None:
        if name == "polar" or name.startswith("polar."):
            self.found.append((name, self._function[0] if self._function else None, self._type_checking))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._function.append(node.name)
        self.generic_visit(node)
        self._function.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            self._type_checking = True
            for child in node.body:
                self.visit(child)
            self._type_checking = False
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            pkg = self.module.split(".")
            pkg = pkg if self.is_package else pkg[:-1]
            pkg = pkg[: len(pkg) - node.level + 1]
            base = ".".join([*pkg, base] if base else pkg)
        for alias in node.names:
            # `from polar.x import y`: y may be a submodule or a name; the submodule is the tighter edge
            sub = f"{base}.{alias.name}"
            self._add(sub if (ROOT.parent / Path(*sub.split("."))).with_suffix(".py").exists()
                      or (ROOT.parent / Path(*sub.split("."))).is_dir() else base)


def _all_imports() -> dict[str, list[tuple[str, str | None, bool]]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        visitor = _Imports(module, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(), str(path)))
        out[module] = visitor.found
    return out


IMPORTS = _all_imports()


def _allowed(src: str, dst: str) -> bool:
    a, b = _area(src), _area(dst)
    if a == b or b == "polar":
        return True
    la, lb = _layer(a), _layer(b)
    return lb < la or (la == lb and b in SAME_LAYER.get(a, set()))


def test_every_module_is_in_the_layer_table() -> None:
    for module in IMPORTS:
        _area(module)


def test_no_module_imports_from_a_higher_layer_or_a_sibling_area() -> None:
    bad = []
    for src, imports in IMPORTS.items():
        for dst, function, _ in imports:
            if (not _allowed(src, dst) and (src, function) not in FACTORY_FUNCTIONS
                    and not (src in DOMAIN_IMPORTS and _area(dst) == "polar.domains")):
                where = f" (in {function}())" if function else ""
                bad.append(f"{src}{where} imports {dst}: {_area(src)} may not use {_area(dst)}")
    assert not bad, "\n".join(bad)


def test_imports_have_no_cycle_outside_factory_functions() -> None:
    graph = {m: {d for d, function, tc in imps
                 if not tc and d in IMPORTS and d != m and (m, function) not in FACTORY_FUNCTIONS}
             for m, imps in IMPORTS.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycle = path[path.index(d):] + [d]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_check_catches_a_forbidden_direction() -> None:
    """The rule itself: the examples the issue names are refused, the layering's own are allowed."""
    assert not _allowed("polar.skills.runner", "polar.evals.metrics")
    assert not _allowed("polar.harnesses.base", "polar.agent.loop")
    assert not _allowed("polar.skills.store", "polar.planners.base")  # same layer, not listed
    assert not _allowed("polar.llm.client", "polar.planners.parse")
    assert _allowed("polar.agent.loop", "polar.skills.runner")
    assert _allowed("polar.commands.evals", "polar.evals.runner")
    assert _allowed("polar.commands.prompts", "polar.evals.prompts")
    assert not _allowed("polar.evals.runner", "polar.commands.evals")


def test_generic_layers_reach_a_domain_only_through_the_registry() -> None:
    """A generic module names no world: it asks polar.domains.registry (which finds the
    domains by folder, at run time); only the manifest-path aliases import a domain module."""
    bad = [f"{src} imports {dst}" for src, imports in IMPORTS.items() for dst, _, _ in imports
           if _area(src) in GENERIC_AREAS and dst.startswith("polar.domains.")
           and dst != "polar.domains.registry" and src not in DOMAIN_IMPORTS]
    assert not bad, "\n".join(bad)
    assert _area("polar.domains.registry") in LAYERS[0]  # below every layer that reads it


def test_domains_are_independent_of_each_other() -> None:
    """A new world is one folder: no domain imports another (shared needs go through the registry)."""
    bad = [f"{src} imports {dst}" for src, imports in IMPORTS.items() for dst, _, _ in imports
           if src.startswith("polar.domains.") and dst.startswith("polar.domains.")
           and dst != "polar.domains.registry" and src.split(".")[2] != dst.split(".")[2]]
    assert not bad, "\n".join(bad)


def test_nothing_imports_the_commands() -> None:
    bad = [f"{src} imports {dst}" for src, imports in IMPORTS.items() for dst, _, _ in imports
           if _area(dst) == "polar.commands" and _area(src) != "polar.commands"]
    assert not bad, "\n".join(bad)


def test_only_the_commands_import_typer() -> None:
    """Areas export plain functions; the command line alone knows typer (and has no `cli.py`)."""
    offenders = [str(path.relative_to(ROOT.parent)) for path in ROOT.rglob("*.py")
                 if not path.is_relative_to(ROOT / "commands")
                 and ("import typer" in path.read_text() or "from typer" in path.read_text())]
    assert not offenders, offenders
    assert not list(ROOT.rglob("cli.py"))
