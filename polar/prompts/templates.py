"""Prompt templates: Jinja2 with StrictUndefined, YAML front matter, version = content hash.

A template file `prompts/NAME.j2` starts with front matter between `---` lines:

    ---
    name: planner_skill
    mode: skill            # plan | skill | code | auto | any
    description: one line
    inputs: [task, spec_text, observation]
    ---
    Task: {{ task }}

Every variable the body reads must be listed in `inputs` (checked at load), and every input
must be given at render time (a missing one is an error naming it). Templates are found via
`polar.workspace.asset_dirs("prompts")`: the workspace's copy wins over the shipped default.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jinja2
import jinja2.meta
from pydantic import Field, field_validator

from polar.config import StrictModel, check_safe_name, parse_yaml, read_text, validate
from polar.errors import ConfigError, PolarError
from polar.prompts.compact import applicable, compact_facts
from polar.workspace import asset_dirs

Mode = Literal["plan", "skill", "code", "auto", "any"]


class TemplateError(PolarError):
    """A template could not be found, loaded or rendered. The message names it."""

    exit_code = 2


class FrontMatter(StrictModel):
    name: str
    mode: Mode = "any"
    description: str = ""
    inputs: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        return check_safe_name(v)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, indent=indent, ensure_ascii=False)
    env.filters["compact_facts"] = compact_facts  # small students' prompts (polar.prompts.compact)
    env.filters["applicable"] = applicable
    return env


_ENV = _environment()


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    mode: str
    description: str
    inputs: tuple[str, ...]
    body: str
    path: Path | None
    version: str  # sha256 of the whole file (front matter included), first 12 hex digits
    _compiled: jinja2.Template = field(repr=False, compare=False)

    def render(self, variables: dict[str, Any]) -> str:
        missing = [n for n in self.inputs if n not in variables]
        if missing:
            raise TemplateError(f"template {self.name!r}: missing input(s): {', '.join(missing)}")
        try:
            return self._compiled.render(**variables)
        except jinja2.UndefinedError as err:
            raise TemplateError(f"template {self.name!r}: undefined variable: {err.message}") from None
        except jinja2.TemplateError as err:
            raise TemplateError(f"template {self.name!r}: {type(err).__name__}: {err}") from None


def parse_template(text: str, source: str, path: Path | None = None) -> PromptTemplate:
    """Build a template from file text; `source` names it in errors."""
    if not text.strip():
        raise TemplateError(f"{source}: the file is empty (a template starts with '---' front matter)")
    if not text.startswith("---"):
        raise TemplateError(f"{source}: no front matter: the file must start with a '---' line")
    try:
        _, fm_text, body = text.split("---", 2)
    except ValueError:
        raise TemplateError(f"{source}: front matter is not closed by a second '---' line") from None
    body = body.removeprefix("\n")
    where = f"{source} (front matter)"
    try:
        fm_data = parse_yaml(fm_text, where)
        if fm_data is not None and not isinstance(fm_data, dict):
            raise ConfigError(f"{where}: expected a mapping of keys to values (name, mode, inputs)")
        fm = validate(FrontMatter, fm_data or {}, where)
    except ConfigError as err:
        raise TemplateError(str(err)) from None
    try:
        ast = _ENV.parse(body)
        compiled = _ENV.from_string(body)
    except jinja2.TemplateSyntaxError as err:
        raise TemplateError(f"{source}: line {err.lineno}: Jinja syntax error: {err.message}") from None
    referenced = [t for t in jinja2.meta.find_referenced_templates(ast)]
    if referenced:
        names = ", ".join(repr(t) if t else "(computed)" for t in referenced)
        raise TemplateError(f"{source}: include/extends/import of {names}: a template is one "
                            "self-contained file (no template loader)")
    undeclared = sorted(jinja2.meta.find_undeclared_variables(ast) - set(fm.inputs))
    if undeclared:
        raise TemplateError(f"{source}: variable(s) used but not listed in front matter inputs: {', '.join(undeclared)}")
    version = hashlib.sha256(text.encode()).hexdigest()[:12]
    return PromptTemplate(fm.name, fm.mode, fm.description, tuple(fm.inputs), body, path, version, compiled)


def load_template_file(path: str | Path) -> PromptTemplate:
    """Load a template from an explicit path (e.g. a variant under comparison)."""
    p = Path(path)
    try:
        text = read_text(p)
    except ConfigError as err:
        raise TemplateError(str(err)) from None
    return parse_template(text, str(p), p)


def template_paths() -> dict[str, Path]:
    """name (file stem) -> path, highest-priority folder first wins."""
    found: dict[str, Path] = {}
    for d in asset_dirs("prompts"):
        for p in sorted(d.glob("*.j2")):
            found.setdefault(p.stem, p)
    return found


def load_template(name_or_path: str) -> PromptTemplate:
    """A template by name (`planner_skill`) from the prompt folders, or by path (`x/y.j2`)."""
    if name_or_path.endswith(".j2") or "/" in name_or_path:
        return load_template_file(name_or_path)
    paths = template_paths()
    if name_or_path not in paths:
        known = ", ".join(sorted(paths)) or "none"
        raise TemplateError(f"no prompt template named {name_or_path!r} (known: {known})")
    return load_template_file(paths[name_or_path])


def list_templates() -> list[PromptTemplate]:
    return [load_template_file(p) for p in template_paths().values()]
