"""Strict pydantic configs and the one loader for every file Polar reads.

Harness specs, planner profiles, sandbox profiles, eval suites, training recipes, skill
manifests and prompt templates all go through `read_text` (size limit, UTF-8, no binary
data) and, for YAML/JSON, `parse_yaml` (duplicate keys refused, nesting depth and alias
expansion capped). Every problem raises `ConfigError` whose message names the file, the
field path and what is wrong; unknown keys are errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from polar.errors import ConfigError

MAX_CONFIG_BYTES = 1 << 20  # a config file larger than this is almost surely the wrong file
MAX_DEPTH = 64  # nesting levels of one document
MAX_VALUES = 100_000  # values of one document once its aliases are expanded


class StrictModel(BaseModel):
    """Base for every config: unknown keys are rejected, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def at_default(self, *names: str) -> set[str]:
        """Those of `names` whose value is the field's default. A field added to a config whose
        dump is part of a key (a cell's, a run folder's) is left out of the dump at its default,
        so that what was made before the field existed keeps its key."""
        fields = type(self).model_fields
        return {n for n in names if getattr(self, n) == fields[n].get_default(call_default_factory=True)}


M = TypeVar("M", bound=BaseModel)

# A name that ends up in a file path or an asset lookup: no separators, no leading dot.
SAFE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
_SAFE_NAME_RE = re.compile(SAFE_NAME)


def check_safe_name(value: str) -> str:
    """Refuse a name that would act as a path (`..`, `a/b`, `.hidden`); return it unchanged."""
    if not _SAFE_NAME_RE.match(value) or ".." in value:
        raise ValueError(f"{value!r}: use letters, digits, '_', '.' or '-' (no '/' or '..'), "
                         "starting with a letter or digit")
    return value


def format_validation_error(err: ValidationError, source: str) -> str:
    """One line per problem: `source: field.path: message`."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key (check its spelling)"
        elif e["type"] != "missing" and type(e.get("input")) in (str, int, float, bool) \
                and len(repr(e["input"])) <= 60:
            msg += f", got {e['input']!r}"
        # a whole-model check names its fields in the message itself
        lines.append(f"{source}: {loc}: {msg}" if loc else f"{source}: {msg}")
    return "\n".join(lines)


def validate(model: type[M], data: Any, source: str) -> M:
    """Validate `data` against `model`, raising ConfigError that names `source` and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source)) from None


# --- reading bytes -------------------------------------------------------------------------


def read_text(path: str | Path, limit: int = MAX_CONFIG_BYTES) -> str:
    """A config file's text. Missing, unreadable, oversized, binary or non-UTF-8 files raise
    ConfigError naming the file."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)  # never more: /dev/zero or a 10 GB file stay cheap
    except FileNotFoundError:
        raise ConfigError(f"{p}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a folder, not a file") from None
    except OSError as err:
        raise ConfigError(f"{p}: cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise ConfigError(f"{p}: larger than the {limit // 1024} KiB limit for this kind of file "
                          "(is this the right file?)")
    if b"\0" in data:
        raise ConfigError(f"{p}: holds binary data (NUL bytes), not text")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{p}: not UTF-8 text (byte 0x{data[err.start]:02x} on line {line}); "
                          "save the file as UTF-8") from None


# --- parsing YAML (and JSON, which YAML reads too) -----------------------------------------


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that Polar refuses (too deep, alias bomb, duplicate key)."""


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, documents nested more than MAX_DEPTH levels,
    and aliases that expand to more than MAX_VALUES values (a 600-byte "billion laughs"
    document otherwise becomes hundreds of megabytes once serialised)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> values below it, aliases expanded
        self._aliases = False

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise _Refused(None, None, f"alias *{event.anchor} refers to a collection that contains it",
                               event.start_mark)
            self._aliases = True
            return super().compose_node(parent, index)
        mark = self.peek_event().start_mark
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(None, None, f"nested more than {MAX_DEPTH} levels deep", mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = 1
        if isinstance(node, SequenceNode):
            size += sum(self._sizes[id(c)] for c in node.value)
        elif isinstance(node, MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        if size > MAX_VALUES:
            why = "aliases expand it to" if self._aliases else "it holds"
            raise _Refused(None, None, f"{why} more than {MAX_VALUES} values"
                           + (" (an alias bomb?)" if self._aliases else ""), mark)
        self._sizes[id(node)] = size
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *base` then explicit keys: overriding merged keys is the point
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # unhashable: the base class reports it
                if first is not None:
                    raise _Refused(None, None, f"duplicate key {key!r} (first on line {first.line + 1})",
                                   key_node.start_mark)
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep)


_BRACKETS = re.compile(r"[\[\]{}]")


def _check_flow_depth(text: str, source: str) -> None:
    """Refuse flow collections (`[[[...`, `{{{...`) nested beyond MAX_DEPTH before parsing:
    PyYAML's scanner looks ahead over the whole nest, which takes quadratic time. Brackets
    inside quoted strings count too; only a string with more than MAX_DEPTH unclosed
    brackets could be refused wrongly."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        if m.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, m.start()) + 1
                raise ConfigError(f"{source}: line {line}: nested more than {MAX_DEPTH} levels deep")
        elif depth:
            depth -= 1


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML or JSON text with StrictLoader; errors name `source` and the line."""
    _check_flow_depth(text, source)
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader
    except _Refused as err:
        mark = err.problem_mark
        raise ConfigError(f"{source}: line {mark.line + 1}, column {mark.column + 1}: {err.problem}") from None
    except (ComposerError, ConstructorError, yaml.YAMLError) as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{source}: invalid YAML{where}: {problem}") from None
    except RecursionError:  # belt and braces: MAX_DEPTH stops this first
        raise ConfigError(f"{source}: nested too deeply") from None


def read_yaml(path: str | Path) -> Any:
    """Read and parse a YAML/JSON file; any problem becomes a ConfigError naming it."""
    return parse_yaml(read_text(path), str(path))


def read_mapping(path: str | Path, *, allow_empty: bool = False) -> dict[str, Any]:
    """A YAML/JSON file that must hold a mapping of keys to values (the top of every config)."""
    data = read_yaml(path)
    if data is None:
        if allow_empty:
            return {}
        raise ConfigError(f"{path}: the file is empty (expected a mapping of keys to values)")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys to values at the top, "
                          f"got a {_kind(data)}")
    return data


def _kind(data: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(data), type(data).__name__)


def load_yaml(path: str | Path, model: type[M]) -> M:
    """Load a YAML file into a strict model. An empty file is accepted only when every field
    of the model has a default."""
    required = any(f.is_required() for f in model.model_fields.values())
    return validate(model, read_mapping(path, allow_empty=not required), str(path))
