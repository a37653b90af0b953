"""What a skill is (its manifest) and what running it returns (`SkillOutcome`).

A manifest is plain data (`manifest.json` in the skill's version folder): a planner reads the
description, parameters, preconditions and effects; the runner reads the termination, the
step budget and, for policy skills, the feature hook and the policy config; provenance says
where the weights came from and how well they measurably work.

Predicate templates use `{param}` placeholders (`facing({object},{color})`). An optional
parameter left unset becomes `any`, which matches every value, and trailing `any` arguments
match a predicate with fewer arguments (`facing(goal,any)` matches `facing(goal)`), the
same convention as `polar.harnesses.missions`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

import polar
from polar.errors import PolarError
from polar.harnesses.spaces import SpaceSpec

ANY = "any"
NAME_RE = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")
_PRED_RE = re.compile(r"^\s*(not\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$")


class SkillError(PolarError):
    """A skill could not be found, registered or run as asked."""


class SkillNotFound(SkillError):
    """No skill (or no such version) in the library."""


class SkillLoadError(SkillError):
    """A skill's files are missing, corrupt or do not match its manifest."""


class SkillArgumentError(SkillError):
    """Arguments that do not fit the skill's parameter schema."""


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
    code-defined check `polar.<module>:<function>(state, args, obs, info) -> bool`
    is true (see polar.skills.runner)."""

    predicates: list[str] = Field(default_factory=list)
    mode: Literal["all", "any"] = "all"
    check: str | None = None

    @model_validator(mode="after")
    def _nonempty(self) -> Termination:
        if not self.predicates and not self.check:
            raise ValueError("termination: give predicates or a check")
        return self


class Hook(_Model):
    """An import path `polar.<module>:<attr>` plus keyword arguments for it."""

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
        from polar.evals.stats import wilson_interval

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
    """How to rebuild the network: `loader.from_state(tensors, config)`."""

    loader: str = "polar.rl.policy:Policy"
    config: dict[str, Any]


class Skill(_Model):
    """A skill manifest. `version` is 0 until the library allocates one at registration."""

    name: str
    version: int = Field(0, ge=0)
    description: str = Field(min_length=1)
    kind: Literal["policy", "code", "primitive"]
    harnesses: list[str] = Field(default_factory=lambda: ["*"])  # fnmatch patterns of ids
    observation_space: SpaceSpec | None = None
    action_space: SpaceSpec | None = None
    parameters: dict[str, ParamSpec] = Field(default_factory=dict)
    preconditions: list[str] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    termination: Termination | None = None
    step_budget: int = Field(64, ge=1)
    deterministic: bool = True
    features: Hook | None = None  # policy skills: obs -> the policy's observation
    policy: PolicySpec | None = None  # policy skills
    action: str | None = None  # primitive skills: an entry of the harness's action_meanings
    code_file: str | None = None  # code skills: source file in the version folder
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

    @field_validator("code_file")
    @classmethod
    def _plain_file_name(cls, v: str | None) -> str | None:
        # the file lives in the skill's version folder: a path would point outside it
        if v is not None and (Path(v).name != v or v.startswith(".")):
            raise ValueError(f"{v!r}: give a file name inside the skill's folder, not a path")
        return v

    @field_validator("parameters", mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        # `{"color": ["red", "green"]}` is shorthand for a choices parameter.
        if isinstance(v, dict):
            return {k: {"choices": p} if isinstance(p, list) else p for k, p in v.items()}
        return v

    @model_validator(mode="after")
    def _by_kind(self) -> Skill:
        if self.kind == "policy" and self.policy is None:
            raise ValueError("policy: a policy skill needs its policy config")
        if self.kind == "primitive" and not self.action:
            raise ValueError("action: a primitive skill names one harness action")
        if self.kind == "code" and not self.code_file:
            raise ValueError("code_file: a code skill needs its source file")
        if self.kind != "primitive" and self.termination is None:
            raise ValueError("termination: policy and code skills need a termination condition")
        templates = {"preconditions": self.preconditions, "effects": self.effects,
                     "termination.predicates": self.termination.predicates if self.termination else []}
        for field, items in templates.items():
            for t in items:
                try:
                    parse_predicate(t)  # raises on malformed templates
                except ValueError as err:
                    raise ValueError(f"{field}: {err}") from None
                for ph in re.findall(r"\{(\w+)\}", t):
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
    def evaluations(self) -> list[Measurement]:
        """Measurements recorded by `polar skills eval`, oldest first."""
        return list(self._evaluations)

    def manifest_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True)

    def check_hooks(self) -> None:
        """Import every hook the manifest names (feature function, termination check, policy
        loader), so that a bad one is refused at registration rather than at first use."""
        hooks = {"features.fn": self.features.fn if self.features else None,
                 "termination.check": self.termination.check if self.termination else None,
                 "policy.loader": self.policy.loader if self.policy else None}
        for field, path in hooks.items():
            if path is not None and not callable(resolve_import(path, field)):
                raise SkillLoadError(f"{field}: {path!r} is not callable")

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
        return any(fnmatch.fnmatchcase(harness_id, pat) for pat in self.harnesses)

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

    def to_info(self, harness: str | None = None, affordance: float | None = None):
        """The planner's view (`polar.planners.base.SkillInfo`)."""
        from polar.planners.base import SkillInfo

        m = self.success_for(harness)
        return SkillInfo(
            name=self.name,
            version=self.version,
            kind=self.kind,
            description=self.description,
            parameters={k: (p.choices if p.choices is not None else p.type) for k, p in self.parameters.items()},
            preconditions=self.preconditions,
            effects=self.effects,
            success_rate=m.rate if m and m.episodes else None,
            success_ci=(m.ci_low, m.ci_high) if m and m.episodes else None,
            affordance=affordance,
        )


class SkillOutcome(_Model):
    """What running a skill did. The final observation is returned next to it, not inside."""

    skill: str  # name@version
    args: dict[str, Any] = Field(default_factory=dict)
    success: bool
    steps: int
    episode_return: float
    reason: str
    predicates_before: list[str] = Field(default_factory=list)
    predicates_after: list[str] = Field(default_factory=list)
    affordance: float | None = None  # policy skills: V(start state)
    terminated: bool = False
    truncated: bool = False
    wall_s: float = 0.0


# --- predicate templates ----------------------------------------------------------------


def parse_predicate(text: str) -> tuple[bool, str, tuple[str, ...]]:
    """`not carrying(key,any)` -> (negated, name, args)."""
    m = _PRED_RE.match(text)
    if not m:
        raise ValueError(f"predicate {text!r}: expected name(arg,...) or not name(arg,...)")
    neg, name, inner = m.groups()
    args = tuple(a.strip() for a in inner.split(",")) if inner and inner.strip() else ()
    return bool(neg), name, args


def fill(template: str, args: dict[str, Any]) -> str:
    """Substitute `{param}` placeholders; unset parameters are already `any` in bound args."""
    return re.sub(r"\{(\w+)\}", lambda m: str(args.get(m.group(1), ANY)), template)


def matches(pattern: str, predicate: str) -> bool:
    """Whether a (filled, positive) pattern matches one concrete predicate."""
    _, pname, pargs = parse_predicate(pattern)
    _, name, args = parse_predicate(predicate)
    if pname != name or len(args) > len(pargs):
        return False
    extra = pargs[len(args):]  # `facing(goal,any)` vs `facing(goal)`
    if any(a not in (ANY, "*") for a in extra):
        return False
    return all(p in (ANY, "*") or p == a for p, a in zip(pargs, args, strict=False))


def matching(pattern: str, predicates: list[str]) -> set[str]:
    return {p for p in predicates if matches(pattern, p)}


def holds(template: str, predicates: list[str]) -> bool:
    """A filled template holds: some predicate matches it (or, negated, none does)."""
    neg, name, args = parse_predicate(template)
    positive = f"{name}({','.join(args)})" if args else name
    found = bool(matching(positive, predicates))
    return not found if neg else found


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


ALLOWED_MODULE_PREFIXES = ("polar.",)


def resolve_import(path: str, what: str) -> Any:
    """`polar.<module>:<attr>` -> the object. Only `polar.` modules: a manifest is data, and
    data from a shared library must not make the runner import arbitrary code."""
    import importlib

    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise SkillLoadError(f"{what}: {path!r} is not of the form 'polar.module:attribute'")
    if not module.startswith(ALLOWED_MODULE_PREFIXES):
        raise SkillLoadError(f"{what}: {path!r} is outside the allowed modules {ALLOWED_MODULE_PREFIXES}")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise SkillLoadError(f"{what}: cannot import {path!r}: {err}") from None
    return obj
