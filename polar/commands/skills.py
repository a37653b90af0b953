"""`polar skills register|list|show|search|eval|remove|doctor|install-primitives`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from polar.console import print_table

console = Console()
skills_app = typer.Typer(help="Register, find, evaluate and remove skills in the skill library.",
                         no_args_is_help=True)

LIBRARY = typer.Option(None, "--library", "-L", help="Library folder, used alone (default: $POLAR_SKILLS, else the "
                       "workspace's skills/ searched before the shipped library; new skills go to the workspace's).")
AS_JSON = typer.Option(False, "--json", help="Print JSON.")


def _lib(root: Path | None):
    from polar.skills.search_path import open_library

    return open_library(root)


def _json_arg(text: str | None, what: str) -> Any:
    from polar.errors import ConfigError

    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{what}: not valid JSON ({err.msg} at column {err.colno}): {text!r}") from None


def _skill_json(skill: Any) -> dict[str, Any]:
    d = skill.model_dump(mode="json", exclude={"policy"})
    d["ref"] = skill.ref
    d["path"] = str(skill.path) if skill.path else None
    d["evaluations"] = [m.model_dump(mode="json") for m in skill.evaluations]
    m = skill.success_for()
    d["success"] = m.model_dump(mode="json") if m else None
    return d


def _success_text(skill: Any) -> str:
    m = skill.success_for()
    return m.describe() + (f" on {m.harness}" if m.harness else "") if m else "not measured"


def _success_cell(skill: Any) -> str:
    """Measured success for a table: rate, interval and the episodes it rests on."""
    m = skill.success_for()
    if m is None or not m.episodes:
        return "not measured"
    return f"{100 * m.rate:.0f}% [{100 * m.ci_low:.0f}, {100 * m.ci_high:.0f}] n={m.episodes}"


def _short(text: str, width: int = 48) -> str:
    """A long description cut to its first sentence and `width` characters (`show` has it all)."""
    first = text.strip().split(". ")[0].rstrip(".")
    first = first if len(first) < len(text.strip()) else text.strip()
    return first if len(first) <= width else first[: width - 1].rstrip() + "…"


def _origin(lib: Any, skill: Any) -> str:
    """Which layer of the search path a skill comes from (see polar.skills.search_path)."""
    root = skill.library_root
    return "shipped" if root is not None and root.resolve() != lib.root.resolve() else "workspace"


def _title(lib: Any) -> str:
    return lib.describe() if hasattr(lib, "describe") else str(lib.root)


@skills_app.command("register")
def register_cmd(
    checkpoint_dir: Annotated[Path, typer.Argument(help="An RL run dir (polar train --out DIR) or a saved policy dir.")],
    name: str = typer.Option(None, "--name", help="Skill name (lowercase, digits, _ or -); default: the manifest's."),
    description: str = typer.Option(None, "--description", help="What the skill does, for planners."),
    manifest: Annotated[Path | None, typer.Option("--manifest", help="YAML/JSON file with manifest fields; options override it.")] = None,
    params: str = typer.Option(None, "--params", help='Parameter schema as JSON, e.g. {"color": ["red", "blue"]}.'),
    harness: Annotated[list[str] | None, typer.Option("--harness", help="Harness id pattern it accepts (repeatable), e.g. 'minigrid:*'; "
                                                      "default: the harnesses the run trained on.")] = None,
    any_harness: bool = typer.Option(False, "--any-harness", help="Accept every harness (its spaces are still checked "
                                     "before it is offered or called)."),
    termination: Annotated[list[str] | None, typer.Option("--termination", help="Termination predicate template (repeatable).")] = None,
    termination_check: str = typer.Option(None, "--termination-check", help="Termination check: polar.module:function, "
                                          "or hooks.<file>:<function> from the library's hooks/ folder."),
    precondition: Annotated[list[str] | None, typer.Option("--precondition", help="Precondition template (repeatable).")] = None,
    effect: Annotated[list[str] | None, typer.Option("--effect", help="Effect template (repeatable).")] = None,
    features: str = typer.Option(None, "--features", help="Feature hook: polar.module:function, or "
                                 "hooks.<file>:<function> from the library's hooks/ folder."),
    features_kwargs: str = typer.Option(None, "--features-kwargs", help="JSON keyword arguments of the feature hook."),
    budget: int = typer.Option(None, "--budget", help="Step budget."),
    env_steps: int = typer.Option(None, "--env-steps", help="Env steps spent training (else read from the run dir)."),
    deterministic: bool = typer.Option(None, "--deterministic/--stochastic",
                                       help="Act with the policy's most likely action (default) or sample from it "
                                            "(what PPO optimised; a greedy policy can loop where sampling succeeds)."),
    trained_on: Annotated[list[str] | None, typer.Option("--trained-on", help="Harness ids trained on (else read from the run config).")] = None,
    library: Path = LIBRARY,
    as_json: bool = AS_JSON,
) -> None:
    """Register a trained policy as a new skill version.

    It accepts the harnesses given (--harness or the manifest's `harnesses:`), else those the
    run trained on (its config.yaml), or every one with --any-harness. Everything is checked
    before the library is touched: the manifest, the options, the hooks the manifest names
    (they must import), and the policy's spaces against each concrete harness it accepts."""
    from polar.config import read_mapping, validate
    from polar.errors import ConfigError
    from polar.skills.model import Skill, SkillLoadError, check_hooks

    data: dict[str, Any] = read_mapping(manifest) if manifest else {}
    source = str(manifest) if manifest else "command line"
    if name is not None:
        data["name"] = name
    if "name" not in data:
        raise ConfigError(f"{source}: name: give the skill's name (--name or `name:` in --manifest)")
    overrides = {
        "description": description, "parameters": _json_arg(params, "--params"),
        "harnesses": harness or None, "preconditions": precondition or None, "effects": effect or None,
        "step_budget": budget,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    if deterministic is not None:
        data["deterministic"] = deterministic
    if termination or termination_check:
        data["termination"] = {"predicates": termination or [], "check": termination_check}
    if features:
        data["features"] = {"fn": features, "kwargs": _json_arg(features_kwargs, "--features-kwargs") or {}}
    prov = dict(data.get("provenance") or {})
    prov.update(_run_provenance(checkpoint_dir))
    if env_steps is not None:
        prov["env_steps"] = env_steps
    if trained_on:
        prov["trained_on"] = trained_on
    data["provenance"] = prov
    if not data.get("description"):
        raise ConfigError(f"{source}: description: a skill needs a description planners can read "
                          "(--description or `description:` in --manifest)")
    data.update(kind="policy", policy={"loader": "polar.rl.policy:Policy", "config": {}})
    skill = validate(Skill, data, source)  # the manifest first, the weights (torch) after
    lib = _lib(library)
    try:
        check_hooks(skill, lib.root)
    except SkillLoadError as err:
        raise ConfigError(f"{source}: {err}") from None
    from polar.rl.policy import load_policy
    from polar.skills.accepts import accepted_harnesses, check_spaces

    tensors, config = load_policy(checkpoint_dir).to_state()
    run_kwargs = _run_config(checkpoint_dir).get("harness_kwargs") or {}
    patterns, specs = accepted_harnesses(data.get("harnesses"), any_harness, skill.provenance.trained_on,
                                         run_kwargs, source)
    skill = skill.model_copy(update={"harnesses": patterns,
                                     "policy": skill.policy.model_copy(update={"config": config})})  # type: ignore[union-attr]
    check_spaces(skill, specs, run_kwargs, source)
    skill = lib.register(skill, tensors=tensors)
    if as_json:
        print(json.dumps(_skill_json(skill), indent=1))
    else:
        console.print(f"registered [bold]{skill.ref}[/] in {skill.path}")


def _check_and_register(data: dict[str, Any], source: str, library: Path | None, as_json: bool) -> None:
    """Validate a weightless skill (primitive or python), check its hooks and actions, register it."""
    from polar.config import validate
    from polar.errors import ConfigError
    from polar.skills.model import Skill, SkillLoadError, check_hooks

    if data.get("kind") not in ("primitive", "python"):
        raise ConfigError(f"{source}: kind: expected primitive or python, got {data.get('kind')!r} (a trained "
                          "policy is registered from its run with `polar skills register RUN_DIR`)")
    data.setdefault("provenance", {}).setdefault("source", source)
    skill = validate(Skill, data, source)
    lib = _lib(library)
    try:
        check_hooks(skill, lib.root)
    except SkillLoadError as err:
        raise ConfigError(f"{source}: {err}") from None
    _check_action(skill, source)
    skill = lib.register(skill)
    if as_json:
        print(json.dumps(_skill_json(skill), indent=1))
    else:
        console.print(f"registered [bold]{skill.ref}[/] ({skill.kind}) in {skill.path}")


def _check_action(skill: Any, source: str) -> None:
    """A primitive's action must be one of the harness's actions, for every concrete harness
    id it names (patterns with wildcards are checked when the skill runs)."""
    from polar.errors import ConfigError
    from polar.harnesses.registry import make_harness

    if skill.kind != "primitive":
        return
    for pattern in skill.harnesses:
        if any(ch in pattern for ch in "*?["):
            continue
        with make_harness(pattern) as h:
            meanings = h.spec.action_meanings or []
        if skill.action not in meanings:
            raise ConfigError(f"{source}: action: harness {pattern!r} has no action {skill.action!r} "
                              f"(its actions: {', '.join(meanings) or 'unnamed; set action_meanings'})")


@skills_app.command("add-primitive")
def add_primitive_cmd(
    name: Annotated[str, typer.Argument(help="Skill name (lowercase, digits, _ or -).")],
    action: str = typer.Option(..., "--action", help="The one harness action it takes (an entry of the harness's "
                               "action meanings, see `polar harness describe`)."),
    description: str = typer.Option(..., "--description", help="What the action does, for planners."),
    harness: list[str] = typer.Option(..., "--harness", help="Harness id or pattern it accepts (repeatable); "
                                      "concrete ids are checked for the action."),
    params: str = typer.Option(None, "--params", help='Parameter schema as JSON, e.g. {"color": ["red", "blue"]}.'),
    precondition: Annotated[list[str] | None, typer.Option("--precondition", help="Precondition template (repeatable).")] = None,
    effect: Annotated[list[str] | None, typer.Option("--effect", help="Effect template (repeatable); success means "
                                                     "every effect was achieved by the action.")] = None,
    library: Path = LIBRARY,
    as_json: bool = AS_JSON,
) -> None:
    """Register a primitive: one harness action as a skill, judged by its effect predicates."""
    data: dict[str, Any] = {"name": name, "kind": "primitive", "action": action, "description": description,
                            "harnesses": harness, "preconditions": precondition or [], "effects": effect or [],
                            "step_budget": 1}
    if params:
        data["parameters"] = _json_arg(params, "--params")
    _check_and_register(data, "command line", library, as_json)


@skills_app.command("add")
def add_cmd(
    manifest: Annotated[Path, typer.Argument(help="A skill.yaml: a primitive (kind: primitive, action: ...) or a "
                                             "plain-Python skill (kind: python, policy: {loader: hooks.<file>:<fn>}).")],
    library: Path = LIBRARY,
    as_json: bool = AS_JSON,
) -> None:
    """Register a skill that needs no weights from its YAML manifest (see docs/skills.md).

    A Python skill's function `act(obs, args, **policy.config) -> action` lives in the
    library's hooks/ folder and is checked (imported, callable) before anything is written."""
    from polar.config import read_mapping

    _check_and_register(read_mapping(manifest), str(manifest), library, as_json)


def _run_root(path: Path) -> Path:
    """The `polar train --out` folder (the one holding config.yaml) of `path`: the folder
    itself, or the run of its `policy/`, `checkpoint/` or `checkpoints/ckpt-N/` folder."""
    up = [path]
    if path.name in ("policy", "checkpoint"):
        up.append(path.parent)
    if path.parent.name == "checkpoints":
        up.append(path.parent.parent)
    return next((d for d in up if (d / "config.yaml").is_file()), path)


def _run_config(path: Path) -> dict[str, Any]:
    """The training config a run wrote (`harness:`, `harness_kwargs:`, ...); {} without one."""
    from polar.config import read_yaml

    config = _run_root(path) / "config.yaml"
    cfg = read_yaml(config) if config.is_file() else None
    return cfg if isinstance(cfg, dict) else {}


def _run_provenance(path: Path) -> dict[str, Any]:
    """What a `polar train` run dir says about itself: the hash of its config.yaml, the
    harnesses it trained on, and from eval.json its env steps and final success rate."""
    from polar.skills.model import Measurement, sha256_file

    out: dict[str, Any] = {"source": str(path)}
    run_dir = _run_root(path)
    config = run_dir / "config.yaml"
    if config.is_file():
        out["training_config_hash"] = sha256_file(config)
        h = _run_config(path).get("harness")
        if h:
            out["trained_on"] = [h] if isinstance(h, str) else list(h)
    done = run_dir / "eval.json"
    if done.is_file():
        d = json.loads(done.read_text())
        if isinstance(d.get("env_steps"), int):
            out["env_steps"] = d["env_steps"]
        rate, episodes = d.get("success_rate"), d.get("episodes")
        if isinstance(rate, (int, float)) and isinstance(episodes, int) and episodes:
            out["success"] = Measurement.from_counts(
                round(rate * episodes), episodes, harness=",".join(out.get("trained_on", [])) or None
            ).model_dump(mode="json")
    return out


@skills_app.command("list")
def list_cmd(
    all_versions: bool = typer.Option(False, "--all", help="Every version, not only the latest."),
    library: Path = LIBRARY,
    as_json: bool = AS_JSON,
) -> None:
    """List the skills in the library with their measured success."""
    lib = _lib(library)
    skills = lib.list(all_versions=all_versions)
    if as_json:
        print(json.dumps([_skill_json(s) for s in skills], indent=1))
        return
    layered = len(lib.layers) > 1
    table = Table("skill", *(["from"] if layered else []), "kind", "success [95% CI]", "description",
                  title=_title(lib))
    for s in skills:
        table.add_row(s.ref, *([_origin(lib, s)] if layered else []), s.kind, _success_cell(s),
                      _short(s.description))
    print_table(console, table)
    if skills:
        console.print("[dim]polar skills show NAME: the whole description, parameters and provenance[/]")


@skills_app.command("show")
def show_cmd(ref: str = typer.Argument(..., help="NAME or NAME@VERSION."), library: Path = LIBRARY,
             as_json: bool = AS_JSON) -> None:
    """Show one skill's manifest, provenance and evaluations."""
    s = _lib(library).get(ref)
    if as_json:
        print(json.dumps(_skill_json(s), indent=1))
        return
    console.print(f"[bold]{s.ref}[/] ({s.kind}) — {s.path}")
    console.print(s.description, markup=False)
    for pname, p in s.parameters.items():
        console.print(f"  {pname}: {'|'.join(p.choices) if p.choices else p.type}"
                      f"{'' if p.required else ' (optional)'} {p.description}", markup=False)
    console.print(f"accepts: {', '.join(s.harnesses)}; step budget {s.step_budget}", markup=False)
    for label, items in (("preconditions", s.preconditions), ("effects", s.effects)):
        if items:
            console.print(f"{label}: {', '.join(items)}", markup=False)
    if s.termination:
        t = s.termination
        preds = f"{t.mode} of [{', '.join(t.predicates)}]" if t.predicates else ""
        console.print(f"termination: {preds}{' + ' if preds and t.check else ''}{t.check or ''}", markup=False)
    p = s.provenance
    console.print(f"provenance: trained on {p.trained_on or '-'}, env steps {p.env_steps or '-'}, config "
                  f"{(p.training_config_hash or '-')[:12]}, created {p.created_at}, polar {p.polar_version}",
                  markup=False)
    if p.success:
        console.print(f"success at registration: {p.success.describe()}", markup=False)
    for m in s.evaluations:
        console.print(f"eval {m.measured_at}: {m.describe()} on {m.harness} args {json.dumps(m.args)} "
                      f"seed {m.seed}", markup=False)


@skills_app.command("search")
def search_cmd(text: str = typer.Argument(..., help="What the skill should do."),
               harness: str = typer.Option(None, "--harness", help="Only skills accepting this harness id."),
               limit: int = typer.Option(5, "--limit"), library: Path = LIBRARY, as_json: bool = AS_JSON) -> None:
    """Rank skills for a text query (BM25 + harness compatibility + measured success). The query
    matches a skill's name, description, parameters and effects, and the harnesses it was
    trained on or accepts (e.g. `DoorKey-8x8`); skills sharing no word with it are left out."""
    from polar.skills.search import rank

    lib = _lib(library)
    rows = [(s, sc) for s, sc in rank(lib.list(), text, harness, by_harness=True) if sc > 0][:limit]
    if as_json:
        print(json.dumps([{"ref": s.ref, "score": round(sc, 4), "description": s.description} for s, sc in rows], indent=1))
        return
    if not rows:
        console.print(f"no skill matches {text!r} in {_title(lib)}", markup=False)
        return
    table = Table("skill", "score", "success [95% CI]", "description")
    for s, sc in rows:
        table.add_row(s.ref, f"{sc:.3f}", _success_cell(s), _short(s.description))
    print_table(console, table)


def _parse_setup(text: str) -> tuple[str, dict[str, Any]]:
    ref, _, rest = text.strip().partition(" ")
    return ref, (_json_arg(rest, f"--setup {text!r}") if rest.strip() else {}) or {}


@skills_app.command("eval")
def eval_cmd(
    ref: str = typer.Argument(..., help="NAME or NAME@VERSION."),
    harness: str = typer.Option(..., "--harness", help="Harness id, e.g. minigrid:MiniGrid-DoorKey-8x8-v0."),
    episodes: int = typer.Option(100, "--episodes", min=1),
    args: str = typer.Option(None, "--args", help='Skill arguments as JSON, e.g. {"object": "key"}.'),
    seed: int = typer.Option(0, "--seed", help="Episode i starts from reset(seed + i)."),
    budget: int = typer.Option(None, "--budget", help="Step budget (default: the skill's)."),
    setup: Annotated[list[str] | None, typer.Option("--setup", help="Skill call run first in each episode, e.g. 'goto {\"object\": \"key\"}' (repeatable).")] = None,
    record: bool = typer.Option(True, "--record/--no-record", help="Store the measured success in the library."),
    library: Path = LIBRARY,
    as_json: bool = AS_JSON,
) -> None:
    """Measure a skill's success rate (95% Wilson interval) from a harness's start states."""
    from polar.skills.model import SkillError
    from polar.skills.runner import evaluate_skill

    lib = _lib(library)
    skill = lib.get(ref)
    call_args = _json_arg(args, "--args") or {}
    skill.bind(call_args)  # bad arguments fail before any episode runs
    setups = []
    for text in setup or []:
        sref, sargs = _parse_setup(text)
        s = lib.get(sref)
        s.bind(sargs)
        setups.append((s, sargs))
    with console.status(f"evaluating {skill.ref} on {harness}") as status:
        def progress(i: int, outs: list[Any]) -> None:
            status.update(f"evaluating {skill.ref} on {harness}: episode {i}/{episodes}, "
                          f"{sum(o.success for o in outs)}/{len(outs)} successes")
        report = evaluate_skill(skill, harness, episodes, call_args, seed, budget, setups, progress=progress)
    m = report.measurement
    if m is None:
        raise SkillError(f"{skill.ref}: no episode ran the skill ({report.skipped}); add --setup calls")
    owner = next((x for x in lib.layers if skill.library_root is not None
                  and x.root.resolve() == skill.library_root.resolve()), None)
    not_recorded = owner.read_only if record and owner is not None and owner.read_only else None
    if record and not not_recorded:
        lib.record_evaluation(skill, m)
    record = record and not_recorded is None
    steps = [o.steps for o in report.outcomes]
    reasons: dict[str, int] = {}
    for o in report.outcomes:
        reasons[o.reason] = reasons.get(o.reason, 0) + 1
    if as_json:
        print(json.dumps({"skill": skill.ref, "measurement": m.model_dump(mode="json"), "skipped": report.skipped,
                          "mean_steps": sum(steps) / len(steps), "reasons": reasons, "recorded": record}, indent=1))
        return
    console.print(f"[bold]{skill.ref}[/] on {harness} args {json.dumps(call_args)}: success {m.describe()}"
                  f", mean steps {sum(steps) / len(steps):.1f}", highlight=False)
    for reason, n in sorted(reasons.items(), key=lambda x: -x[1]):
        console.print(f"  {n:4d} x {reason}", markup=False, highlight=False)
    for why, n in report.skipped.items():
        console.print(f"  skipped {n} episodes: {why}", markup=False)
    if record:
        console.print(f"recorded in {owner.index if owner is not None else lib.index}")
    elif not_recorded:
        console.print(f"not recorded: {not_recorded}", markup=False)


@skills_app.command("remove")
def remove_cmd(ref: str = typer.Argument(..., help="NAME (every version) or NAME@VERSION."),
               library: Path = LIBRARY) -> None:
    """Remove one version of a skill, or all of its versions."""
    for r in _lib(library).remove(ref):
        console.print(f"removed {r}")


@skills_app.command("doctor")
def doctor_cmd(
    rebuild_index: bool = typer.Option(False, "--rebuild-index",
                                       help="Rebuild library.sqlite from the manifests of the version folders."),
    library: Path = LIBRARY,
) -> None:
    """Clean what killed registrations left (staging folders, uncommitted versions) and check
    the index; --rebuild-index rebuilds a corrupt or lost index from the manifests."""
    lib = _lib(library)
    if rebuild_index:
        refs, skipped, old = lib.rebuild_index()
        console.print(f"rebuilt {lib.index} from the manifests: {len(refs)} skill version(s)"
                      + (f"; the old index is now {old}" if old else ""), markup=False)
        for why in skipped:
            console.print(f"  left out {why}", markup=False)
        return
    removed = lib.cleanup()
    for p in removed:
        console.print(f"removed {p}", markup=False)
    skills = lib.list(all_versions=True)
    console.print(f"{lib.index}: {len(skills)} skill version(s), "
                  f"{len(removed)} leftover folder(s) removed", markup=False)


@skills_app.command("install-primitives")
def primitives_cmd(library: Path = LIBRARY) -> None:
    """Register the MiniGrid primitives (pickup, drop, toggle) if missing or changed."""
    from polar.domains.minigrid.primitives import install_primitives

    added = install_primitives(_lib(library))
    console.print(", ".join(s.ref for s in added) or "primitives already installed")


def register(app: typer.Typer) -> None:
    app.add_typer(skills_app, name="skills")
