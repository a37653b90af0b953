"""What a skill is: its manifest, its arguments, its measured success, and its hooks.

A manifest is plain data (`manifest.json` in the skill's version folder): a planner reads the
description, parameters, preconditions and effects; the runner reads the termination, the
step budget and, for policy skills, the feature hook and the policy config; provenance says
where the weights came from and how well they measurably work.

Predicate templates use `{param}` placeholders (`facing({object},{color})`). An optional
parameter left unset becomes `any`, which matches every value, and trailing `any` arguments
match a predicate with fewer arguments (`facing(goal,any)` matches `facing(goal)`), the
rule of `polar.predicates`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import importlib.util
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

import polar
from polar.errors import PolarError
from polar.files import leaves, sha256_of
from polar.harnesses.base import HarnessSpec
from polar.harnesses.spaces import SpaceSpec, space_mismatch
from polar.predicates import ANY, parse, placeholders
from polar.statistics import wilson_interval

NAME_RE = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")


class SkillError(PolarError):
    """A skill could not be found, registered or run as asked."""


class SkillNotFound(SkillError):
    """No skill (or no such version) in the library."""


class SkillLoadError(SkillError):
    """A skill's files are missing, corrupt or do not match its manifest."""


class SkillArgumentError(SkillError):
    """Arguments that do not fit the skill's parameter schema."""


class SkillSpaceMismatch(SkillError):
    """A skill whose policy cannot read the harness's observations or act in its action space."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamSpec(_Model):
    """One parameter: a closed set of choices (what planners pick from) or a free type."""

    choices: list[str] | None = None
    type: Literal["str", "int", "float", "bool"] = "str"
    default: Any = None
    required: bool = False  # a parameter without default and not required becomes `any`
    description: str = ""


class Termination(_Model):
    """When a skill is done: all (or any) of the predicate templates hold, and/or a
    code-defined check `module:function(state, args, obs, info) -> bool` is true (see
    `resolve_hook` for where the module may live, and polar.skills.runner)."""

    predicates: list[str] = Field(default_factory=list)
    mode: Literal["all", "any"] = "all"
    check: str | None = None

    @model_validator(mode="after")
    def _nonempty(self) -> Termination:
        if not self.predicates and not self.check:
            raise ValueError("termination: give predicates or a check")
        return self


class Hook(_Model):
    """An import path `module:attr` (see `resolve_hook`) plus keyword arguments for it."""

    fn: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class Measurement(_Model):
    """A measured success rate with its 95% Wilson interval and what it rests on."""

    successes: int = Field(ge=0)
    episodes: int = Field(ge=0)
    rate: float
    ci_low: float
    ci_high: float
    harness: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    measured_at: str = Field(default_factory=lambda: now_iso())

    @classmethod
    def from_counts(cls, successes: int, episodes: int, **kw: Any) -> Measurement:
        lo, hi = wilson_interval(successes, episodes)
        rate = successes / episodes if episodes else 0.0
        return cls(successes=successes, episodes=episodes, rate=rate, ci_low=lo, ci_high=hi, **kw)

    def describe(self) -> str:
        return (f"{self.rate:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] "
                f"({self.successes}/{self.episodes})")


class Provenance(_Model):
    training_config_hash: str | None = None  # sha256 of the run's config file
    trained_on: list[str] = Field(default_factory=list)  # harness ids
    env_steps: int | None = None
    success: Measurement | None = None  # measured at registration (training-time eval)
    source: str | None = None  # e.g. the run dir it was registered from
    created_at: str = Field(default_factory=lambda: now_iso())
    polar_version: str = polar.__version__


class PolicySpec(_Model):
    """Policy skills: how to rebuild the network, `loader.from_state(tensors, config)`.
    Python skills: `loader` names a function `act(obs, args, **config) -> action` in the
    library's hooks (`hooks.<name>:<fn>`), called once per step."""

    loader: str = "polar.rl.policy:Policy"
    config: dict[str, Any]


class Skill(_Model):
    """A skill manifest. `version` is 0 until the library allocates one at registration."""

    name: str
    version: int = Field(0, ge=0)
    description: str = Field(min_length=1)
    kind: Literal["policy", "primitive", "python"]
    harnesses: list[str] = Field(default_factory=lambda: ["*"])  # fnmatch patterns of ids
    observation_space: SpaceSpec | None = None
    action_space: SpaceSpec | None = None
    parameters: dict[str, ParamSpec] = Field(default_factory=dict)
    preconditions: list[str] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    # What a call uses up, as counted atoms whose last argument is a count (`has(wood,2)`: two
    # wood fewer after it), so a planner keeps enough for a precondition it relies on. Left out
    # of the manifest when empty, so libraries without it keep their fingerprints.
    uses: list[str] = Field(default_factory=list)
    termination: Termination | None = None
    step_budget: int = Field(64, ge=1)
    deterministic: bool = True
    features: Hook | None = None  # policy skills: obs -> the policy's observation
    policy: PolicySpec | None = None  # policy skills
    action: str | None = None  # primitive skills: an entry of the harness's action_meanings
    weights_sha256: str | None = None
    provenance: Provenance = Field(default_factory=Provenance)

    _dir: Path | None = PrivateAttr(default=None)
    _evaluations: list[Measurement] = PrivateAttr(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{v!r}: use lowercase letters, digits, '_' or '-', starting with a letter")
        return v

    @model_validator(mode="before")
    @classmethod
    def _no_code_skills(cls, data: Any) -> Any:
        # Manifests written before code skills were dropped carry `code_file: null`.
        if isinstance(data, dict) and "code_file" in data:
            if data["code_file"] is not None or data.get("kind") == "code":
                raise ValueError("code skills are not supported: submit policy code through a planner "
                                 "(it runs in a sandbox) or register a policy or primitive skill")
            data = {k: v for k, v in data.items() if k != "code_file"}
        return data

    @field_validator("parameters", mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        # `{"color": ["red", "green"]}` is shorthand for a choices parameter.
        if isinstance(v, dict):
            return {k: {"choices": p} if isinstance(p, list) else p for k, p in v.items()}
        return v

    @model_validator(mode="after")
    def _by_kind(self) -> Skill:
        if self.kind in ("policy", "python") and self.policy is None:
            raise ValueError(f"policy: a {self.kind} skill needs its policy "
                             + ("config" if self.kind == "policy" else "(loader: hooks.<file>:<function>)"))
        if self.kind == "primitive" and not self.action:
            raise ValueError("action: a primitive skill names one harness action")
        if self.kind in ("policy", "python") and self.termination is None:
            raise ValueError(f"termination: a {self.kind} skill needs a termination condition")
        for t in self.uses:
            if not parse(t).args or not re.fullmatch(r"\d+", parse(t).args[-1]) or parse(t).negated:
                raise ValueError(f"uses: {t!r}: a counted atom whose last argument is a count, e.g. has(wood,2)")
        templates = {"preconditions": self.preconditions, "effects": self.effects, "uses": self.uses,
                     "termination.predicates": self.termination.predicates if self.termination else []}
        for field, items in templates.items():
            for t in items:
                try:
                    parse(t)  # raises on malformed templates
                except ValueError as err:
                    raise ValueError(f"{field}: {err}") from None
                for ph in placeholders(t):
                    if ph not in self.parameters:
                        raise ValueError(f"{field}: predicate {t!r}: placeholder {{{ph}}} is not a parameter")
        return self

    # --- identity -------------------------------------------------------------------------

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def path(self) -> Path | None:
        """The version folder this manifest was loaded from (None before registration)."""
        return self._dir

    @property
    def library_root(self) -> Path | None:
        """The library this version was loaded from (where its `hooks.` modules live)."""
        return self._dir.parent.parent if self._dir is not None else None

    @property
    def evaluations(self) -> list[Measurement]:
        """Measurements recorded by `polar skills eval`, oldest first."""
        return list(self._evaluations)

    def manifest_json(self) -> str:
        # an unset `uses` is left out: manifests written before it existed keep their hash
        return json.dumps(self.model_dump(mode="json", exclude=None if self.uses else {"uses"}), indent=1,
                          sort_keys=True)

    # --- arguments and predicates ---------------------------------------------------------

    def bind(self, args: dict[str, Any] | None) -> dict[str, Any]:
        """Validate `args` against the parameters, fill defaults; unset optionals become `any`."""
        args = dict(args or {})
        unknown = sorted(set(args) - set(self.parameters))
        if unknown:
            raise SkillArgumentError(
                f"{self.name}: unknown argument(s) {unknown}; parameters are {sorted(self.parameters)}")
        out: dict[str, Any] = {}
        for pname, p in self.parameters.items():
            v = args.get(pname, p.default)
            if v is None or v == ANY:
                if p.required:
                    raise SkillArgumentError(f"{self.name}: argument {pname!r} is required")
                out[pname] = ANY
                continue
            if p.choices is not None and str(v) not in p.choices:
                raise SkillArgumentError(
                    f"{self.name}: argument {pname}={v!r} is not one of {p.choices}")
            try:
                out[pname] = {"str": str, "int": int, "float": float, "bool": bool}[p.type](v)
            except (TypeError, ValueError):
                raise SkillArgumentError(f"{self.name}: argument {pname}={v!r} is not a {p.type}") from None
        return out

    def compatible(self, harness_id: str) -> bool:
        """Whether the harness id matches one of the patterns the skill accepts (its spaces
        are `spaces_mismatch`'s question)."""
        return any(fnmatch.fnmatchcase(harness_id, pat) for pat in self.harnesses)

    def required_spaces(self) -> tuple[SpaceSpec | None, SpaceSpec | None]:
        """The (observation, action) spaces the skill needs of a harness, None where it needs
        nothing checkable: declared in the manifest, else a policy skill's own. The policy's
        observation space counts only without a feature hook: a hook maps the harness's
        observation to the policy's, and what it reads is known only when it runs."""
        obs, act = self.observation_space, self.action_space
        config = self.policy.config if self.kind == "policy" and self.policy is not None else {}
        if obs is None and self.features is None and config.get("observation_space"):
            obs = SpaceSpec.model_validate(config["observation_space"])
        if act is None and config.get("action_space"):
            act = SpaceSpec.model_validate(config["action_space"])
        return obs, act

    def spaces_mismatch(self, spec: HarnessSpec) -> str | None:
        """Why the skill cannot read this harness's observations or act in its action space,
        or None: a policy fed the wrong observation shape raises inside torch, mid-episode."""
        obs, act = self.required_spaces()
        who = self.ref if self.version else self.name  # version 0: not registered yet
        if obs is not None and (why := space_mismatch(spec.observation_space, obs)) is not None:
            return f"observation space: {spec.id!r} gives {why} by {who}"
        if act is not None and (why := space_mismatch(act, spec.action_space)) is not None:
            return f"action space: {who} acts in {why} by {spec.id!r}"
        return None

    def usable_on(self, spec: HarnessSpec) -> bool:
        """Whether a planner may be offered this skill on the harness: its id and its spaces."""
        return self.compatible(spec.id) and self.spaces_mismatch(spec) is None

    # --- measured success -----------------------------------------------------------------

    def success_for(self, harness: str | None = None) -> Measurement | None:
        """The best-supported measurement: the latest eval on this harness, else the latest
        eval anywhere, else the one recorded at registration."""
        evals = self.evaluations
        if harness is not None:
            same = [m for m in evals if m.harness == harness]
            if same:
                return same[-1]
        if evals:
            return evals[-1]
        return self.provenance.success


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def sha256_file(path: Path) -> str:
    return sha256_of(path)


ALLOWED_MODULE_PREFIXES = ("polar.",)
HOOKS_PACKAGE = "hooks"  # `hooks.<name>:<attr>` -> `<library root>/hooks/<name>.py`


def resolve_hook(path: str, what: str, library_root: Path | None = None) -> Any:
    """`module:attr` -> the object. A manifest is data, and data from a shared library must
    not make the runner import arbitrary code, so the module is either a `polar.` module or
    one of the skill library's own hook files: `hooks.<name>` is `<library root>/hooks/<name>.py`
    (e.g. your workspace's `skills/hooks/my_game.py`), nothing else."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise SkillLoadError(f"{what}: {path!r} is not of the form 'module:attribute'")
    try:
        if module.startswith(ALLOWED_MODULE_PREFIXES):
            obj: Any = importlib.import_module(module)
        elif module.startswith(HOOKS_PACKAGE + ".") and library_root is not None:
            obj = _load_hook_file(library_root, module.removeprefix(HOOKS_PACKAGE + "."), what)
        else:
            where = "the library's hooks/ folder (hooks.<name>)" if library_root is not None else "no library"
            raise SkillLoadError(f"{what}: {path!r} is outside the allowed modules "
                                 f"{ALLOWED_MODULE_PREFIXES} and {where}")
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, SyntaxError) as err:
        raise SkillLoadError(f"{what}: cannot import {path!r}: {type(err).__name__}: {err}") from None
    return obj


def _load_hook_file(root: Path, name: str, what: str) -> ModuleType:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SkillLoadError(f"{what}: hook module {name!r} must be a plain module name (hooks.<name>)")
    path = (root / HOOKS_PACKAGE / f"{name}.py").resolve()
    if not path.is_file():
        raise SkillLoadError(f"{what}: no hook file {path}")
    if leaves(root, path):  # a library from elsewhere runs no code from outside its folder
        raise SkillLoadError(f"{what}: {root / HOOKS_PACKAGE / f'{name}.py'} is a symlink pointing out of the "
                             f"skill library ({path})")
    key = f"polar_skill_hooks.{hashlib.sha256(str(path).encode()).hexdigest()[:12]}.{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    return module


def check_hooks(skill: Skill, library_root: Path | None) -> None:
    """Resolve every hook a manifest names, so a skill with a bad hook is refused when it is
    registered, not when a planner first calls it."""
    hooks = [(skill.features.fn if skill.features else None, "features.fn"),
             (skill.termination.check if skill.termination else None, "termination.check"),
             (skill.policy.loader if skill.policy else None, "policy.loader")]
    for path, field in hooks:
        if path is not None and not callable(resolve_hook(path, field, library_root)):
            raise SkillLoadError(f"{field}: {path!r} is not callable")
