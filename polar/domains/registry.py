"""The domains Polar knows, found by folder: each package under `polar/domains/` declares one
`DOMAIN = Domain(...)` in its `__init__.py`, and the generic layers ask this registry instead of
naming a world.

A domain names its parts by `"module:attribute"` strings, resolved only when used, so reading
the registry imports no simulator (MiniGrid, MuJoCo) and no generic layer imports a domain
module. A new world is one new folder with a `DOMAIN`.

Planner hints (`Domain.planner_hints`, role -> reference):
- `missions`: the module that reads tasks as goal atoms (`parse_mission`, `unparsed_words`),
  for the symbolic planner and the planner choice (MiniGrid registers it);
- `choose_planner`: `(task, spec) -> (profile, why) | (None, why) | None`, asked first by
  polar.planners.choose (PointMaze: the maze planner on a maze harness).

Scores of its own (`Domain.episode_metrics`): a world whose harness records per-episode
stats (`Harness.episode_stats()`, kept in `EpisodeRecord.extra["episode_stats"]`) names the
function that turns them into the report's figures (Crafter: its score, BALROG progression,
each achievement's success rate).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Domain:
    """What one world registers. Harness ids of the world are `<name>:<EnvId>`."""

    name: str  # the harness id prefix without its colon: "minigrid"
    harness: str  # "module:Class" of the adapter, built as Class(env_id, **kwargs)
    packages: tuple[str, ...]  # distributions a registry id's behaviour depends on (its fingerprint)
    check_id: str  # "module:function": raises ValueError naming the problem when env_id is unknown
    registered_ids: str  # "module:function" -> the gymnasium ids this domain claims (registers them)
    id_help: str  # how an id of this family is spelled, for errors: "minigrid:<EnvId>"
    extra_listings: tuple[tuple[str, str], ...] = ()  # (env id, source) listed beside the registered ids
    hidden_entry_points: tuple[str, ...] = ()  # gym entry points of the package this domain does not adapt
    full_observation: dict[str, Any] | None = None  # harness kwargs of its full-observation variant
    planner_hints: dict[str, str] = field(default_factory=dict)  # role -> "module[:attribute]" (below)
    planners: dict[str, str] = field(default_factory=dict)  # profile backend -> "module:Class"
    # profile backend -> its `options:` (name -> (type, what it does)), checked when a profile loads
    planner_options: dict[str, dict[str, tuple[type, str]]] = field(default_factory=dict)
    bare_id: bool = False  # whether the bare prefix (`crafter:`) names a harness: the world's one
    # "module:function" (seeds' episode stats -> list[polar.evals.metrics.DomainMetric]): the
    # figures this world is scored by, from what its harness's `episode_stats()` recorded
    episode_metrics: str | None = None

    @property
    def prefix(self) -> str:
        return f"{self.name}:"

    def resolve(self, ref: str) -> Any:
        """The object a `"module:attribute"` reference of this domain names (a bare module path:
        the module)."""
        module, _, attr = ref.partition(":")
        loaded = importlib.import_module(module)
        return getattr(loaded, attr) if attr else loaded

    def hint(self, role: str) -> Callable[..., Any] | None:
        """The planner hint this domain gives for `role`, or None."""
        ref = self.planner_hints.get(role)
        return None if ref is None else self.resolve(ref)


@cache
def domains() -> tuple[Domain, ...]:
    """Every domain, in folder-name order (each folder's `DOMAIN`)."""
    found = []
    for folder in sorted(p for p in _HERE.iterdir() if (p / "__init__.py").is_file()):
        module = importlib.import_module(f"polar.domains.{folder.name}")
        domain = getattr(module, "DOMAIN", None)
        if not isinstance(domain, Domain):
            raise TypeError(f"polar/domains/{folder.name}/__init__.py: declare DOMAIN = Domain(...)")
        found.append(domain)
    return tuple(found)


def domain_of(harness_id: str) -> Domain | None:
    """The domain whose prefix `harness_id` carries, or None (gym ids, YAML specs)."""
    return next((d for d in domains() if harness_id.startswith(d.prefix)), None)


def prefixes() -> tuple[str, ...]:
    """The harness id prefixes of every domain: ("maze:", "minigrid:")."""
    return tuple(d.prefix for d in domains())


def mission_language() -> Any:
    """The module that reads a task as goal atoms (`parse_mission`, `unparsed_words`): the one a
    domain registers as its `missions` planner hint (MiniGrid's words: keys, doors, goals)."""
    for d in domains():
        if "missions" in d.planner_hints:
            return d.hint("missions")
    raise LookupError("no domain registers a mission language (planner_hints['missions'])")


def domain_choices() -> list[Callable[[str, Any], tuple[str | None, str] | None]]:
    """Each domain's `choose_planner(task, spec)` hint: (profile, why) where the domain picks
    the planner for its harness, (None, why) where a language model must plan, None elsewhere."""
    return [d.hint("choose_planner") for d in domains() if "choose_planner" in d.planner_hints]


def episode_metrics(harness_id: str) -> Callable[..., Any] | None:
    """The episode-metrics function of the domain `harness_id` belongs to, or None."""
    d = domain_of(harness_id)
    return None if d is None or d.episode_metrics is None else d.resolve(d.episode_metrics)


def domain_planner(backend: str) -> Callable[[Any], Any] | None:
    """The planner class a domain registers for a profile's `backend` (`maze`), or None."""
    return next((d.resolve(d.planners[backend]) for d in domains() if backend in d.planners), None)


def domain_backends() -> tuple[str, ...]:
    """The planner profile backends the domains register (`maze`), in folder order."""
    return tuple(b for d in domains() for b in d.planners)


def domain_planner_options(backend: str) -> dict[str, tuple[type, str]] | None:
    """The options a domain's planner backend takes, or None where no domain registers it."""
    return next((d.planner_options.get(backend, {}) for d in domains() if backend in d.planners), None)
