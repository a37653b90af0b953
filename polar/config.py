"""Strict pydantic configs and one YAML loader with clear errors.

Every YAML file Polar reads goes through `load_yaml`: unknown keys are errors, and a bad
file raises `ConfigError` whose message names the file, the field path and what is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from polar.errors import ConfigError


class StrictModel(BaseModel):
    """Base for every config: unknown keys are rejected, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=BaseModel)


def format_validation_error(err: ValidationError, source: str) -> str:
    """One line per problem: `source: field.path: message`."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (check its spelling)"
        lines.append(f"{source}: {loc}: {msg}")
    return "\n".join(lines)


def validate(model: type[M], data: Any, source: str) -> M:
    """Validate `data` against `model`, raising ConfigError that names `source` and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source)) from None


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file; a missing file or a syntax error becomes a ConfigError naming it."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{p}: file not found") from None
    except OSError as err:
        raise ConfigError(f"{p}: cannot read: {err.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{p}: invalid YAML{where}: {problem}") from None


def load_yaml(path: str | Path, model: type[M]) -> M:
    """Load a YAML file into a strict model."""
    data = read_yaml(path)
    if data is None:
        data = {}
    return validate(model, data, str(path))
