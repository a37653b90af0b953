"""`KEY=VALUE` command-line options into keyword arguments (`polar task`, `polar harness describe|check`: `--harness-kwarg`).

A value is read as one YAML scalar, as a suite's `kwargs:` mapping reads it (`true` is a bool,
`8` an int, `0.5` a float, anything else a string), so `--harness-kwarg odometry=true` makes the
harness a suite entry `{id: ..., kwargs: {odometry: true}}` makes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from polar.errors import ConfigError

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


KWARG_HELP = ("KEY=VALUE keyword argument of the harness, repeatable; the value is a YAML scalar, as in a "
              "suite's `kwargs:` (e.g. --harness-kwarg odometry=true: the pose in each observation, docs/memory.md).")


def parse_kwargs(items: list[str] | None, option: str) -> dict[str, Any]:
    """`["odometry=true", "size=8"]` -> `{"odometry": True, "size": 8}`; a bad item is a
    ConfigError naming the option and the item."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not _KEY.match(key):
            raise ConfigError(f"{option} {item!r}: expected KEY=VALUE with KEY a Python identifier "
                              "(e.g. odometry=true)")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"{option} {item!r}: the value is not a YAML scalar ({err})") from None
        if isinstance(value, (dict, list)):
            raise ConfigError(f"{option} {item!r}: the value must be a scalar (bool, number or string), "
                              f"not a {type(value).__name__}")
        if key in out:
            raise ConfigError(f"{option}: {key!r} is given twice")
        out[key] = value
    return out
