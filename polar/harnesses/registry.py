"""Resolve harness ids: `gym:<EnvId>`, a domain's `<prefix>:<EnvId>` (`minigrid:<EnvId>`,
`maze:<PointMazeId>`: see polar.domains.registry), a YAML spec name under `harnesses/` (e.g.
`keydoor`), or a path to a YAML spec."""

from __future__ import annotations

import importlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
from pydantic import field_validator, model_validator

from polar.config import StrictModel, check_safe_name, load_yaml
from polar.domains.registry import domain_of, domains, prefixes
from polar.errors import ConfigError, HarnessError
from polar.harnesses.base import Harness, HarnessEnv, SuccessRule
from polar.harnesses.connector.config import ConnectorConfig
from polar.workspace import asset_dirs

STEP_LIMIT_KWARGS = ("max_episode_steps", "max_steps")


def families() -> tuple[str, ...]:
    """Every harness id prefix: `gym:` and each domain's."""
    return ("gym:", *prefixes())


class UnknownHarness(ConfigError, HarnessError):
    """A harness id that names nothing this machine can make (bad input: exit code 2)."""


def check_step_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Step limits among harness kwargs must be positive integers (gymnasium asserts, or
    silently treats a negative limit as none)."""
    for key in STEP_LIMIT_KWARGS:
        v = kwargs.get(key)
        if v is not None and (type(v) is not int or v < 1):
            raise ValueError(f"{key}: must be an integer >= 1, got {v!r}")
    return kwargs


class HarnessFile(StrictModel):
    """A harness spec file: either an alias of a gym/minigrid id with kwargs (`base`), or an
    out-of-process game (`connector`)."""

    id: str
    description: str | None = None
    base: str | None = None
    kwargs: dict[str, Any] = {}
    connector: ConnectorConfig | None = None
    success: SuccessRule | None = None  # how to tell success when the game does not report it

    @field_validator("id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        return check_safe_name(v)

    @field_validator("kwargs")
    @classmethod
    def _step_limits(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_step_kwargs(v)

    @model_validator(mode="after")
    def _one_source(self) -> HarnessFile:
        if (self.base is None) == (self.connector is None):
            raise ValueError("give exactly one of `base` (a gym:/minigrid:/maze: id) or `connector`")
        if self.base is not None and not self.base.startswith(families()):
            raise ValueError(f"base must start with one of {', '.join(families())}, got {self.base!r}")
        return self


@dataclass(frozen=True)
class HarnessListing:
    id: str
    kind: str  # "yaml" | "gym" | a domain's name ("minigrid", "maze")
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
        claimed: dict[str, str] = {}  # gymnasium id -> the domain that adapts it
        hidden: list[str] = []
        for d in domains():
            claimed.update({env_id: d.name for env_id in d.resolve(d.registered_ids)()})
            hidden += d.hidden_entry_points
            entries += [HarnessListing(f"{d.prefix}{env_id}", d.name, source) for env_id, source in d.extra_listings]
        for env_id, spec in sorted(gym.registry.items()):
            ep = str(spec.entry_point)
            kind = claimed.get(env_id, "gym")
            if kind == "gym" and ep.startswith(tuple(hidden)):
                continue  # a package's env a domain does not adapt (e.g. Gymnasium-Robotics beyond PointMaze)
            entries.append(HarnessListing(f"{kind}:{env_id}", kind, ep))
    return entries


def load_harness_file(path: str | Path) -> HarnessFile:
    """Load a spec and check what it refers to (the base id, the game's program) without
    starting anything; errors name the file and the field."""
    spec = load_yaml(path, HarnessFile)
    if spec.base is not None:
        try:
            check_harness_id(spec.base)
        except UnknownHarness as err:
            raise ConfigError(f"{path}: base: {err}") from None
    if spec.connector is not None and (missing := _missing_program(spec.connector.command, Path(path).parent)):
        raise ConfigError(f"{path}: connector.command: {missing}")
    return spec


def _missing_program(command: list[str], base_dir: Path) -> str | None:
    """What is missing to run `command` from `base_dir` (the program or the python script)."""
    from polar.harnesses.connector.process import resolve_command

    cmd = resolve_command(command, base_dir)
    if command[0] == "python":
        script = next((a for a in cmd[1:] if not a.startswith("-")), None)
        if script is not None and cmd[1] not in ("-c", "-m") and not (base_dir / script).is_file():
            return f"python script {script!r} not found in {base_dir.resolve()}"
        return None
    if "/" in command[0]:
        return None if Path(cmd[0]).is_file() else f"program {command[0]!r} not found in {base_dir.resolve()}"
    return None if shutil.which(cmd[0]) else f"program {cmd[0]!r} not found on PATH"


def check_harness_id(harness_id: str) -> None:
    """Raise UnknownHarness unless `harness_id` names a harness this machine can make.
    Starts nothing: gym ids are looked up in the registry, specs are loaded and checked."""
    kind, _, env_id = harness_id.partition(":")
    if (domain := domain_of(harness_id)) is not None and (env_id or domain.bare_id):
        domain.resolve(domain.check_id)(harness_id, env_id)
        return
    if kind == "gym" and env_id:
        check_gym_id(harness_id, env_id)
        return
    p = Path(harness_id)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            raise UnknownHarness(f"{p}: file not found")
        load_harness_file(p)
        return
    specs = _yaml_specs()
    if harness_id in specs:
        load_harness_file(specs[harness_id])
        return
    known = ", ".join(sorted(specs)) or "none"
    raise UnknownHarness(
        f"unknown harness {harness_id!r}: use gym:<EnvId>, {', '.join(d.id_help for d in domains())}, a YAML path, "
        f"or one of the specs under harnesses/ ({known})"
    )


def check_gym_id(harness_id: str, env_id: str) -> None:
    """Raise UnknownHarness unless `env_id` is a registered gymnasium id or an importable entry
    point (`pkg.module:EnvClass`); a domain over gymnasium ids registers them first."""
    module, _, name = env_id.rpartition(":")
    try:
        if module and callable(getattr(importlib.import_module(module), name, None)):
            return  # an entry point (`gym:pkg.module:EnvClass`): built without registration
        gym.spec(name)
    except ImportError as err:
        raise UnknownHarness(f"{harness_id}: cannot import {module!r}: {err}") from None
    except gym.error.Error as err:
        raise UnknownHarness(f"{harness_id}: {err}") from None


def _from_file(path: Path, kwargs: dict[str, Any]) -> Harness:
    spec = load_harness_file(path)
    merged = {**spec.kwargs, **kwargs}
    if spec.base is not None:
        h = make_harness(spec.base, **merged)
        h.spec = h.spec.model_copy(update={"id": spec.id, "description": spec.description or h.spec.description})
    else:
        from polar.harnesses.connector import ConnectorHarness

        assert spec.connector is not None
        h = ConnectorHarness(spec.connector, spec.id, path.parent, merged, spec.description)
    if spec.success is not None:
        h.spec = h.spec.model_copy(update={"success": spec.success})
    return h


def make_harness(harness_id: str, **kwargs: Any) -> Harness:
    """Create a harness from its id. Raises HarnessError/ConfigError with a clear message;
    an id that names nothing raises UnknownHarness (a ConfigError)."""
    if harness_id.startswith(families()):
        check_harness_id(harness_id)
    if harness_id.startswith("gym:"):
        from polar.harnesses.gym import GymHarness

        return GymHarness(harness_id[4:], **kwargs)
    if (domain := domain_of(harness_id)) is not None:
        try:
            return domain.resolve(domain.harness)(harness_id[len(domain.prefix):], **kwargs)
        except TypeError as err:  # a keyword argument the adapter does not take
            raise HarnessError(f"{harness_id}: {err}") from None
    p = Path(harness_id)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            raise UnknownHarness(f"{p}: file not found")
        return _from_file(p, kwargs)
    specs = _yaml_specs()
    if harness_id in specs:
        return _from_file(specs[harness_id], kwargs)
    check_harness_id(harness_id)  # raises UnknownHarness naming the known specs
    raise AssertionError(harness_id)


def make_harness_env(harness_id: str, **kwargs: Any) -> gym.Env:
    """A gymnasium.Env view of a harness (for vector envs and RL)."""
    return HarnessEnv(make_harness(harness_id, **kwargs))
