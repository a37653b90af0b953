"""Which harnesses a trained skill accepts, settled when it is registered.

A skill accepts the harnesses named for it (`--harness`, or `harnesses:` in its manifest),
else the harnesses its training run trained on (the run's `config.yaml`, `harness:`),
and every harness only when told so (`--any-harness`). A skill registered with none of
these is refused: a policy offered on a game it never saw is fed observations it cannot
read. Each concrete harness it accepts is made once and its spaces checked against the
skill's (`Skill.spaces_mismatch`); patterns (`minigrid:*`) are checked when the skill is
offered and called.
"""

from __future__ import annotations

from typing import Any

from polar.errors import ConfigError, PolarError
from polar.harnesses.base import HarnessSpec
from polar.skills.model import Skill

WILDCARDS = "*?["


def no_harness_message(source: str) -> str:
    return (f"{source}: harnesses: say which harnesses the skill accepts: --harness ID (repeatable; a pattern "
            "such as 'minigrid:*' works), or register it from the `polar train --out DIR` folder, whose "
            "config.yaml names the harness it trained on (or give --trained-on ID); --any-harness accepts "
            "every harness")


def harness_spec(harness_id: str, kwargs: dict[str, Any], source: str, field: str) -> HarnessSpec:
    """The spec of a harness, made (and closed) to read it; an error names the field it came from."""
    from polar.harnesses.registry import make_harness

    try:
        with make_harness(harness_id, **kwargs) as h:
            return h.spec
    except PolarError as err:
        raise ConfigError(f"{source}: {field}: cannot make harness {harness_id!r} to check the skill's spaces "
                          f"against it: {err}") from None


def accepted_harnesses(given: list[str] | None, any_harness: bool, trained_on: list[str],
                       harness_kwargs: dict[str, Any], source: str) -> tuple[list[str], dict[str, HarnessSpec]]:
    """The harness patterns a skill accepts, and the specs of the training harnesses made to
    find their ids (a training harness may be a YAML path; the id is what the file names)."""
    if any_harness and given:
        raise ConfigError(f"{source}: harnesses: --any-harness and the harnesses {given} both given; "
                          "give one of them")
    if any_harness:
        return ["*"], {}
    if given:
        return list(given), {}
    if not trained_on:
        raise ConfigError(no_harness_message(source))
    specs: dict[str, HarnessSpec] = {}
    for entry in trained_on:
        spec = harness_spec(entry, harness_kwargs, source, "provenance.trained_on (the run's harness)")
        specs[spec.id] = spec
    return list(specs), specs


def check_spaces(skill: Skill, specs: dict[str, HarnessSpec], harness_kwargs: dict[str, Any], source: str) -> None:
    """Every concrete harness the skill accepts fits its observation and action spaces: the
    training harnesses already made (`specs`), each concrete id of `skill.harnesses`, and each
    concrete training harness its patterns cover."""
    todo: dict[str, tuple[dict[str, Any], str]] = {}
    for pattern in skill.harnesses:
        if not any(ch in pattern for ch in WILDCARDS) and pattern not in specs:
            todo[pattern] = ({}, "harnesses")
    for entry in skill.provenance.trained_on:
        if not any(ch in entry for ch in WILDCARDS) and entry not in specs and skill.compatible(entry):
            todo.setdefault(entry, (harness_kwargs, "provenance.trained_on"))
    checks = [(spec, "provenance.trained_on") for spec in specs.values()]
    checks += [(harness_spec(hid, kw, source, field), field) for hid, (kw, field) in todo.items()]
    for spec, field in checks:
        if (why := skill.spaces_mismatch(spec)) is not None:
            raise ConfigError(f"{source}: {field}: {why}; register the skill for harnesses whose spaces fit "
                              "(--harness ID) or map the observation with a feature hook (--features)")
