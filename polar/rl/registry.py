"""The RL algorithms `polar train` knows: `algo:` name -> the package that defines its `SPEC`
(`polar.rl.common.algorithm.AlgorithmSpec`). A new algorithm is one package and one line here."""

from __future__ import annotations

import importlib
from functools import cache

from polar.errors import ConfigError
from polar.rl.common.algorithm import AlgorithmSpec

ALGORITHMS: dict[str, str] = {
    "ppo": "polar.rl.ppo",
    "sac": "polar.rl.sac",
    "dqn": "polar.rl.dqn",
}


def known_algo(name: str) -> str:
    """`name` when it is a registered algorithm (a pydantic validator's check), else ValueError."""
    if name not in ALGORITHMS:
        raise ValueError(f"{name!r} is not one of {', '.join(ALGORITHMS)}")
    return name


@cache
def algorithm_spec(name: str) -> AlgorithmSpec:
    if name not in ALGORITHMS:
        raise ConfigError(f"algo: {name!r} is not one of {', '.join(ALGORITHMS)}")
    spec = importlib.import_module(ALGORITHMS[name]).SPEC
    assert spec.name == name, f"{ALGORITHMS[name]}.SPEC is named {spec.name!r}, registered as {name!r}"
    return spec


def algorithm_specs() -> list[AlgorithmSpec]:
    return [algorithm_spec(name) for name in ALGORITHMS]
