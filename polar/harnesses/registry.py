"""Resolve harness ids: `gym:<EnvId>`, `minigrid:<EnvId>`, `maze:<PointMazeId>`, a YAML spec
name under `harnesses/` (e.g. `keydoor`), or a path to a YAML spec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
from pydantic import model_validator

from polar.config import StrictModel, load_yaml
from polar.errors import ConfigError, HarnessError
from polar.harnesses.base import Harness, HarnessEnv, SuccessRule
from polar.workspace import asset_dirs

_FAMILIES = ("gym:", "minigrid:", "maze:")


class HarnessFile(StrictModel):
    """A harness spec file: either an alias of a gym/minigrid/maze id with kwargs (`base`), or an
    out-of-process game (`connector`)."""

    id: str
    description: str | None = None
    base: str | None = None
    kwargs: dict[str, Any] = {}
    connector: dict[str, Any] | None = None
    success: SuccessRule | None = None  # how to tell success when the game does not report it

    @model_validator(mode="after")
    def _one_source(self) -> HarnessFile:
        if (self.base is None) == (self.connector is None):
            raise ValueError("give exactly one of `base` (a gym:/minigrid:/maze: id) or `connector`")
        if self.base is not None and not self.base.startswith(_FAMILIES):
            raise ValueError(f"base must start with one of {', '.join(_FAMILIES)}, got {self.base!r}")
        return self


@dataclass(frozen=True)
class HarnessListing:
    id: str
    kind: str  # "yaml" | "gym" | "minigrid" | "maze"
    source: str


def _yaml_specs() -> dict[str, Path]:
    """Harness YAML files by id: `harnesses/<id>.yaml` or `harnesses/<id>/<id>.yaml`."""
    found: dict[str, Path] = {}
    for d in reversed(asset_dirs("harnesses")):  # higher-priority folders override
        for p in [*d.glob("*.yaml"), *d.glob("*/*.yaml")]:
            if p.parent != d and p.stem != p.parent.name:
                continue
            found[p.stem] = p
    return found


def list_harnesses(include_registered: bool = False) -> list[HarnessListing]:
    entries = [HarnessListing(name, "yaml", str(p)) for name, p in sorted(_yaml_specs().items())]
    if include_registered:
        import minigrid  # noqa: F401 - registers MiniGrid/BabyAI ids

        from polar.harnesses.maze import point_maze_ids

        mazes = set(point_maze_ids())  # registers Gymnasium-Robotics' ids
        entries.append(HarnessListing("maze:custom", "maze", "PointMaze over kwargs maze_map"))
        for env_id, spec in sorted(gym.registry.items()):
            ep = str(spec.entry_point)
            if ep.startswith("gymnasium_robotics") and env_id not in mazes:
                continue  # only PointMaze is a harness family; the rest need their own adapter
            kind = "maze" if env_id in mazes else "minigrid" if "minigrid" in ep else "gym"
            entries.append(HarnessListing(f"{kind}:{env_id}", kind, ep))
    return entries


def load_harness_file(path: str | Path) -> HarnessFile:
    return load_yaml(path, HarnessFile)


def _from_file(path: Path, kwargs: dict[str, Any]) -> Harness:
    spec = load_harness_file(path)
    merged = {**spec.kwargs, **kwargs}
    if spec.base is not None:
        h = make_harness(spec.base, **merged)
        h.spec = h.spec.model_copy(update={"id": spec.id, "description": spec.description or h.spec.description})
    else:
        from polar.config import validate
        from polar.harnesses.connector import ConnectorConfig, ConnectorHarness

        cfg = validate(ConnectorConfig, spec.connector, f"{path}: connector")
        h = ConnectorHarness(cfg, spec.id, path.parent, merged, spec.description)
    if spec.success is not None:
        h.spec = h.spec.model_copy(update={"success": spec.success})
    return h


def make_harness(harness_id: str, **kwargs: Any) -> Harness:
    """Create a harness from its id. Raises HarnessError/ConfigError with a clear message."""
    if harness_id.startswith("gym:"):
        from polar.harnesses.gym import GymHarness

        return GymHarness(harness_id[4:], **kwargs)
    if harness_id.startswith("maze:"):
        from polar.harnesses.maze import MazeHarness

        return MazeHarness(harness_id[5:], **kwargs)
    if harness_id.startswith("minigrid:"):
        from polar.harnesses.minigrid import MiniGridHarness

        try:
            return MiniGridHarness(harness_id[9:], **kwargs)
        except TypeError as err:
            raise HarnessError(f"{harness_id}: {err}") from None
    p = Path(harness_id)
    if p.suffix in (".yaml", ".yml"):
        if not p.exists():
            raise ConfigError(f"{p}: file not found")
        return _from_file(p, kwargs)
    specs = _yaml_specs()
    if harness_id in specs:
        return _from_file(specs[harness_id], kwargs)
    known = ", ".join(sorted(specs)) or "none"
    raise HarnessError(
        f"unknown harness {harness_id!r}: use gym:<EnvId>, minigrid:<EnvId>, maze:<PointMazeId>, a YAML path, "
        f"or one of the specs under harnesses/ ({known})"
    )


def make_harness_env(harness_id: str, **kwargs: Any) -> gym.Env:
    """A gymnasium.Env view of a harness (for vector envs and RL)."""
    return HarnessEnv(make_harness(harness_id, **kwargs))
