"""The bad-input corpus: every malformed file of the seven kinds Polar reads, through the CLI.

Each case runs `polar ...` on one file of `tests/bad_inputs/<kind>/` from an empty working
folder and must end with exit code 2, a message naming the file and the field (no
traceback), nothing created (no `--out`, no library, no file in the working folder), within
a time limit. The cases run in this process through the CLI's `main()` (fast); a few run as
real subprocesses too. `python tests/test_bad_inputs.py` runs every case as a subprocess and
prints a table (what the issue's "before/after" counts come from).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "bad_inputs"
POLICY = ROOT / "sandboxes" / "examples" / "cartpole_policy.py"
CASE_LIMIT_S = 20.0  # per case; the first one of a kind pays for importing torch or gymnasium

# The command that reads each kind of file. {file}: the corpus file; {out}: a folder the
# command would create; {run}: a saved policy (skills register needs one).
COMMANDS: dict[str, list[str]] = {
    "harness": ["harness", "describe", "{file}"],
    "planner": ["task", "reach the goal", "--harness", "minigrid:MiniGrid-Empty-5x5-v0",
                "--planner", "{file}", "--out", "{out}", "--skills", "{out}/skills"],
    "sandbox": ["sandbox", "run", str(POLICY), "--profile", "{file}", "--args", "[[0, 0, 0, 0]]"],
    "suite": ["compare", "{file}", "--out", "{out}"],
    "recipe": ["train", "{file}", "--out", "{out}", "--no-progress"],
    "manifest": ["skills", "register", "{run}", "--name", "badskill", "--manifest", "{file}",
                 "-L", "{out}"],
    "template": ["prompts", "show", "{file}"],
    # a shipped or downloaded planner model folder (model.json + LoRA adapters), by path
    "model": ["llm", "models", "--path", "{file}"],
}

# What each error must name besides the file: the field (or the problem) per case.
EXPECT: dict[str, tuple[str, ...]] = {
    "harness/misspelled_top.yaml": ("kwrags", "unknown key"),
    "harness/misspelled_nested.yaml": ("connector.comand", "unknown key"),
    "harness/wrong_type.yaml": ("connector.timeout_s",),
    "harness/out_of_range.yaml": ("connector.max_restarts",),
    "harness/out_of_range_steps.yaml": ("kwargs.max_episode_steps",),
    "harness/missing_field.yaml": ("id", "required"),
    "harness/unknown_enum.yaml": ("connector.transport",),
    "harness/empty.yaml": ("empty",),
    "harness/binary.yaml": ("binary",),
    "harness/latin1.yaml": ("UTF-8",),
    "harness/deep.yaml": ("nested",),
    "harness/alias_bomb.yaml": ("alias",),
    "harness/duplicate_key.yaml": ("duplicate key 'id'",),
    "harness/path_traversal.yaml": ("id:",),
    "harness/dangling_base.yaml": ("base", "NoSuchEnv"),
    "harness/dangling_command.yaml": ("connector.command", "no_such_game.py"),
    "harness/not_a_mapping.yaml": ("mapping",),
    "harness/syntax_error.yaml": ("line 2",),
    "planner/misspelled_top.yaml": ("optoins", "unknown key"),
    "planner/misspelled_nested.yaml": ("budgets.max_cals", "unknown key"),
    "planner/misspelled_option.yaml": ("options.max_repeat",),
    "planner/wrong_type.yaml": ("repair_rounds",),
    "planner/out_of_range.yaml": ("history_window",),
    "planner/out_of_range_option.yaml": ("options.max_repeats",),
    "planner/missing_field.yaml": ("model", "required"),
    "planner/unknown_enum.yaml": ("mode",),
    "planner/unknown_backend.yaml": ("backend", "quantum"),
    "planner/empty.yaml": ("empty",),
    "planner/binary.yaml": ("binary",),
    "planner/latin1.yaml": ("UTF-8",),
    "planner/deep.yaml": ("nested",),
    "planner/alias_bomb.yaml": ("alias",),
    "planner/duplicate_key.yaml": ("duplicate key 'backend'",),
    "planner/path_traversal.yaml": ("name:",),
    "planner/dangling_template.yaml": ("templates.user", "no_such_template"),
    "planner/dangling_system_template.yaml": ("templates.system", "no_such_system_template"),
    "planner/not_a_mapping.yaml": ("mapping",),
    "sandbox/misspelled_top.yaml": ("limitz", "unknown key"),
    "sandbox/misspelled_nested.yaml": ("limits.timeout", "unknown key"),
    "sandbox/wrong_type.yaml": ("limits.memory_mb",),
    "sandbox/out_of_range.yaml": ("limits.max_env_steps",),
    "sandbox/out_of_range_limit.yaml": ("limits.timeout_s",),
    "sandbox/missing_field.yaml": ("limits",),
    "sandbox/unknown_enum.yaml": ("backend", "chroot"),
    "sandbox/binary.yaml": ("binary",),
    "sandbox/latin1.yaml": ("UTF-8",),
    "sandbox/deep.yaml": ("nested",),
    "sandbox/alias_bomb.yaml": ("alias",),
    "sandbox/duplicate_key.yaml": ("duplicate key 'backend'",),
    "sandbox/not_a_mapping.yaml": ("mapping",),
    "suite/misspelled_top.yaml": ("episdoes", "unknown key"),
    "suite/misspelled_nested.yaml": ("agents.0", "planer", "unknown key"),
    "suite/wrong_type.yaml": ("episodes",),
    "suite/out_of_range.yaml": ("harnesses.0.max_steps",),
    "suite/out_of_range_steps.yaml": ("harnesses.0.kwargs.max_episode_steps",),
    "suite/negative_seed.yaml": ("seeds",),
    "suite/missing_field.yaml": ("harnesses", "required"),
    "suite/unknown_enum.yaml": ("agents.0", "genius"),
    "suite/empty.yaml": ("empty",),
    "suite/binary.yaml": ("binary",),
    "suite/latin1.yaml": ("UTF-8",),
    "suite/deep.yaml": ("nested",),
    "suite/alias_bomb.yaml": ("alias",),
    "suite/duplicate_key.yaml": ("duplicate key 'episodes'",),
    "suite/path_traversal.yaml": ("harnesses.0.name",),
    "suite/path_traversal_sandbox.yaml": ("agents.0.sandbox", "../../../../etc/passwd", "leaves the folder"),
    "suite/path_leaves_folder.yaml": ("agents.0.recipe", "../../../skills/recipes", "leaves the folder"),
    "suite/symlink_out.yaml": ("agents.0.tuned_by.outside_sweep.json", "leaves the folder"),
    "suite/dangling_harness.yaml": ("harnesses.0.id", "NoSuchEnv"),
    "suite/dangling_planner.yaml": ("agents.0.planner", "no_such_profile"),
    "suite/dangling_recipe.yaml": ("agents.0.recipe", "no_such_recipe"),
    "suite/dangling_recipes_label.yaml": ("agents.0.recipes.Cartpole", "no harness of the suite is labelled",
                                          "no_such_recipe"),
    "suite/dangling_hrl_option.yaml": ("agents.0.options.1", "unicorn"),
    "suite/dangling_sandbox.yaml": ("agents.0.planner.sandbox", "no_such_sandbox"),
    "suite/dangling_template.yaml": ("agents.0.template", "no_such_template"),
    "suite/dangling_skills.yaml": ("agents.0.skills", "/nonexistent/skill/library"),
    "suite/not_a_mapping.yaml": ("mapping",),
    "recipe/misspelled_top.yaml": ("stpes", "unknown key"),
    "recipe/misspelled_nested.yaml": ("ppo.num_env", "unknown key"),
    "recipe/wrong_type.yaml": ("steps",),
    "recipe/out_of_range_hidden.yaml": ("network.hidden",),
    "recipe/out_of_range_seed.yaml": ("seed",),
    "recipe/out_of_range_steps.yaml": ("harness_kwargs.max_episode_steps",),
    "recipe/missing_field.yaml": ("harness", "required"),
    "recipe/unknown_enum.yaml": ("algo",),
    "recipe/empty.yaml": ("empty",),
    "recipe/binary.yaml": ("binary",),
    "recipe/latin1.yaml": ("UTF-8",),
    "recipe/deep.yaml": ("nested",),
    "recipe/alias_bomb.yaml": ("alias",),
    "recipe/duplicate_key.yaml": ("duplicate key 'algo'",),
    "recipe/path_traversal.yaml": ("harness", "../../etc/passwd"),
    "recipe/dangling_harness.yaml": ("harness", "NoSuchEnv"),
    "recipe/not_a_mapping.yaml": ("mapping",),
    "manifest/misspelled_top.yaml": ("step_budgett", "unknown key"),
    "manifest/misspelled_nested.yaml": ("termination.predicats", "unknown key"),
    "manifest/wrong_type.yaml": ("step_budget",),
    "manifest/out_of_range.yaml": ("step_budget",),
    "manifest/missing_field.yaml": ("description",),
    "manifest/unknown_enum.yaml": ("termination.mode",),
    "manifest/empty.json": ("empty",),
    "manifest/binary.json": ("binary",),
    "manifest/latin1.yaml": ("UTF-8",),
    "manifest/deep.json": ("nested",),
    "manifest/alias_bomb.yaml": ("alias",),
    "manifest/duplicate_key.json": ("duplicate key 'description'",),
    "manifest/path_traversal.yaml": ("features.fn", "plain module name"),
    "manifest/dangling_hook.yaml": ("features.fn", "polar.no_such_module"),
    "manifest/dangling_check.yaml": ("termination.check", "no_such_function"),
    "manifest/foreign_hook.yaml": ("features.fn", "os:system"),
    "manifest/bad_predicate.yaml": ("termination", "at(goal"),
    "manifest/not_a_mapping.json": ("mapping",),
    "template/misspelled_top.j2": ("nmae", "unknown key"),
    "template/wrong_type.j2": ("inputs",),
    "template/missing_field.j2": ("name", "required"),
    "template/unknown_enum.j2": ("mode",),
    "template/undeclared_input.j2": ("secret",),
    "template/jinja_syntax.j2": ("line",),
    "template/no_front_matter.j2": ("front matter",),
    "template/empty.j2": ("empty",),
    "template/binary.j2": ("binary",),
    "template/latin1.j2": ("UTF-8",),
    "template/deep.j2": ("nested",),
    "template/alias_bomb.j2": ("alias",),
    "template/duplicate_key.j2": ("duplicate key 'mode'",),
    "template/path_traversal.j2": ("name:",),
    "template/dangling_include.j2": ("no_such_partial.j2",),
    "template/not_a_mapping.j2": ("mapping",),
    # model folders (each case is a folder): checked before anything loads from them
    "model/altered_adapter": ("adapter-1/adapter_model.safetensors", "sha256", "altered or damaged"),
    "model/missing_adapter": ("adapter-1/adapter_model.safetensors", "missing"),
    "model/no_checksums": ("files", "records no sha256", "adapter-1/adapter_config.json"),
    "model/pickle_adapter": ("adapter_model.bin", "pickled weights are refused"),
    "model/pickle_as_safetensors": ("adapter_model.safetensors", "not a safetensors file"),
    "model/adapter_traversal": ("adapters.0", "../altered_adapter/adapter-1", "leaves the model folder"),
    "model/absolute_adapter": ("adapters.0", "'/etc'", "leaves the model folder"),
    "model/symlink_out": ("adapters.0", "adapter-1", "leaves the model folder"),
    "model/symlink_file_out": ("adapter_model.safetensors", "symlink pointing out of the model folder"),
    "model/misspelled_key": ("adpaters", "unknown key"),
    "model/bad_json": ("model.json", "unreadable"),
}

# Bad values given on the command line rather than in a file: (kind, args, what to name).
CLI_CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("recipe", ["train", "--harness", "gym:CartPole-v1", "--steps", "64", "--seed", "-1",
                "--out", "{out}", "--no-progress"], ("seed",)),
    ("recipe", ["train", "--harness", "gym:NoSuchEnv-v9", "--steps", "64", "--out", "{out}",
                "--no-progress"], ("harness", "NoSuchEnv")),
    ("harness", ["harness", "check", "gym:CartPole-v1", "--seed", "-1"], ("--seed",)),
    ("harness", ["harness", "describe", "gym:NoSuchEnv-v9"], ("NoSuchEnv",)),
    ("planner", ["task", "reach the goal", "--harness", "minigrid:MiniGrid-Empty-5x5-v0",
                 "--planner", "symbolic", "--seed", "-1", "--out", "{out}"], ("--seed",)),
    ("planner", ["task", "reach the goal", "--harness", "gym:NoSuchEnv-v9", "--planner", "symbolic",
                 "--out", "{out}"], ("NoSuchEnv",)),
    ("sandbox", ["sandbox", "run", str(POLICY), "--profile", "no_such_profile"], ("no_such_profile",)),
    ("sandbox", ["sandbox", "run", str(POLICY), "--profile", "../../../../etc/passwd"],
     ("../../../../etc/passwd", "not a sandbox profile name")),
    ("manifest", ["skills", "register", "{run}", "--manifest", str(CORPUS / "manifest" / "name_traversal.yaml"),
                  "-L", "{out}"], ("name_traversal.yaml", "name:", "../../etc/passwd")),
    ("sandbox", ["sandbox", "run", str(CORPUS / "template" / "binary.j2")], ("binary.j2", "binary")),
]


@dataclass
class Case:
    id: str
    args: list[str]
    expect: tuple[str, ...]  # substrings of the error; a file case also needs the file's name
    file: Path | None = None


def cases() -> list[Case]:
    out = []
    for rel, expect in EXPECT.items():
        kind = rel.split("/")[0]
        out.append(Case(rel, COMMANDS[kind], expect, CORPUS / rel))
    for i, (kind, args, expect) in enumerate(CLI_CASES):
        out.append(Case(f"{kind}/cli-{i}", args, expect))
    return out


FOLDER_KINDS = ("model",)  # kinds whose cases are folders, not files


def test_every_corpus_file_has_a_case() -> None:
    on_disk = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name != "README.md"
               and p.relative_to(CORPUS).parts[0] not in FOLDER_KINDS}
    on_disk |= {f"{k}/{d.name}" for k in FOLDER_KINDS for d in (CORPUS / k).iterdir()}
    # the symlink a suite case names (it points out of the corpus folder)
    assert on_disk == set(EXPECT) | {"manifest/name_traversal.yaml", "suite/outside_sweep.json"}


@dataclass
class Outcome:
    code: int | None
    output: str
    seconds: float
    created: list[str]


def _args(case: Case, cwd: Path, run_dir: Path) -> list[str]:
    subst = {"{file}": str(case.file), "{out}": str(cwd / "out"), "{run}": str(run_dir)}
    args = []
    for a in case.args:
        for k, v in subst.items():
            a = a.replace(k, v)
        args.append(a)
    return args


def _created(cwd: Path) -> list[str]:
    return sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*"))


def run_in_process(case: Case, cwd: Path, run_dir: Path) -> Outcome:
    """`polar ARGS` through the CLI's main() in this process, from `cwd`, output captured."""
    from polar.commands.app import main

    args = _args(case, cwd, run_dir)
    buf = io.StringIO()
    old_argv, old_cwd = sys.argv, os.getcwd()
    code: int | None = 0
    t0 = time.perf_counter()
    try:
        os.chdir(cwd)
        sys.argv = ["polar", *args]
        with redirect_stdout(buf), redirect_stderr(buf):
            try:
                main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException as e:  # what the user would have seen as a traceback
                import traceback

                buf.write("Traceback (most recent call last):\n" + "".join(traceback.format_exception(e)))
                code = None
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    return Outcome(code, buf.getvalue(), time.perf_counter() - t0, _created(cwd))


def run_subprocess(case: Case, cwd: Path, run_dir: Path, timeout: float = 120) -> Outcome:
    args = _args(case, cwd, run_dir)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "polar", *args], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=timeout)
        code, output = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        code, output = None, f"timed out after {timeout} s\n{e.stdout or ''}{e.stderr or ''}"
    return Outcome(code, output, time.perf_counter() - t0, _created(cwd))


def problems(case: Case, o: Outcome, limit_s: float = CASE_LIMIT_S) -> list[str]:
    """Why this outcome is not the clear error the case asks for (empty: it is)."""
    out = []
    flat = " ".join(o.output.split())  # rich wraps long lines
    if o.code != 2:
        out.append(f"exit code {o.code}, expected 2")
    if "Traceback" in o.output:
        out.append("traceback shown")
    if case.file is not None and case.file.name not in flat:
        out.append(f"the file {case.file.name} is not named")
    dotted = flat.replace(": ", ".")  # `connector: timeout_s` names `connector.timeout_s` too
    out += [f"{e!r} not in the message" for e in case.expect if e not in flat and e not in dotted]
    if o.created:
        out.append(f"created {o.created[:5]}")
    if o.seconds > limit_s:
        out.append(f"took {o.seconds:.1f} s (limit {limit_s:g} s)")
    return out


def make_run_dir(path: Path) -> Path:
    """A saved (untrained) policy for `skills register`, built with the RL engine's own API."""
    from polar.harnesses.registry import make_harness
    from tests.skills.conftest import tiny_policy

    with make_harness("minigrid:MiniGrid-Empty-5x5-v0") as h:
        tiny_policy(obs_space=h.observation_space, act_space=h.action_space).save(path)
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_dir(tmp_path_factory.mktemp("run") / "policy")


@pytest.fixture(scope="module")
def corpus_snapshot() -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in CORPUS.rglob("*")}


ALL = cases()


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_bad_input_gets_a_clear_error(case: Case, tmp_path: Path, run_dir: Path,
                                      corpus_snapshot: dict[str, float]) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    o = run_in_process(case, cwd, run_dir)
    assert not problems(case, o), f"{case.id}: {problems(case, o)}\n{o.output[-3000:]}"
    assert {str(p): p.stat().st_mtime for p in CORPUS.rglob("*")} == corpus_snapshot


def test_a_bad_suite_with_fresh_keeps_the_finished_cells(tmp_path: Path, run_dir: Path) -> None:
    cwd = tmp_path / "cwd"
    cell = cwd / "out" / "cells" / "rnd" / "CartPole-v1" / "seed-0.json"
    cell.parent.mkdir(parents=True)
    cell.write_text("{}")
    case = Case("fresh", ["compare", "{file}", "--out", "{out}", "--fresh"], ("harnesses.0.id",),
                CORPUS / "suite" / "dangling_harness.yaml")
    o = run_in_process(case, cwd, run_dir)
    assert o.code == 2 and "harnesses.0.id" in o.output
    assert cell.is_file() and o.created == ["out", "out/cells", "out/cells/rnd", "out/cells/rnd/CartPole-v1",
                                            "out/cells/rnd/CartPole-v1/seed-0.json"]


SUBPROCESS_CASES = ["suite/dangling_harness.yaml", "recipe/out_of_range_hidden.yaml",
                    "manifest/alias_bomb.yaml", "template/binary.j2"]


@pytest.mark.parametrize("case_id", SUBPROCESS_CASES)
def test_bad_input_in_a_real_subprocess(case_id: str, tmp_path: Path, run_dir: Path) -> None:
    case = next(c for c in ALL if c.id == case_id)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    o = run_subprocess(case, cwd, run_dir)
    assert not problems(case, o, limit_s=60), f"{case.id}: {problems(case, o)}\n{o.output[-3000:]}"


# --- artefacts from elsewhere that a corpus file cannot hold: a skill library (it has a SQLite
# index), a GGUF in Polar's cache -------------------------------------------------------------


def _register(tmp_path: Path, run_dir: Path) -> Path:
    lib = tmp_path / "lib"
    case = Case("register", ["skills", "register", "{run}", "--name", "walker", "--description", "walks",
                             "--harness", "minigrid:*", "--termination", "at(goal)", "-L", str(lib)], ())
    o = run_in_process(case, tmp_path, run_dir)
    assert o.code == 0, o.output
    return lib


@pytest.mark.parametrize("what", ["weights", "version_folder"])
def test_a_skill_folder_pointing_out_of_its_library_is_refused(what: str, tmp_path: Path, run_dir: Path) -> None:
    lib = _register(tmp_path, run_dir)
    version = lib / "walker" / "1"
    outside = tmp_path / "elsewhere"
    if what == "weights":  # the same bytes, so only the path is wrong
        outside.mkdir()
        target = outside / "weights.safetensors"
        (version / "weights.safetensors").replace(target)
        (version / "weights.safetensors").symlink_to(target)
        named = version / "weights.safetensors"
    else:
        version.replace(outside)
        version.symlink_to(outside, target_is_directory=True)
        named = version
    o = run_in_process(Case("show", ["skills", "show", "walker", "-L", str(lib)], ()), tmp_path, run_dir)
    assert o.code != 0 and "Traceback" not in o.output, o.output
    flat = " ".join(o.output.split())
    assert str(named) in flat and "leaves the skill library" in flat, o.output


def test_a_skill_librarys_hook_file_pointing_out_of_it_is_refused(tmp_path: Path) -> None:
    from polar.skills.model import SkillLoadError, resolve_hook

    lib, outside = tmp_path / "lib", tmp_path / "elsewhere.py"
    (lib / "hooks").mkdir(parents=True)
    outside.write_text("def fn(obs):\n    return [0.0]\n")
    (lib / "hooks" / "inside.py").write_text(outside.read_text())
    assert callable(resolve_hook("hooks.inside:fn", "features.fn", lib))
    (lib / "hooks" / "feat.py").symlink_to(outside)
    with pytest.raises(SkillLoadError, match=r"hooks/feat.py is a symlink pointing out of the skill library"):
        resolve_hook("hooks.feat:fn", "features.fn", lib)


def test_a_cached_gguf_that_fails_its_checksum_is_refused(tmp_path: Path, run_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A shipped model's merged GGUF in the cache is checked against the sha256 recorded when
    Polar built it, before anything reads it; one built before records were kept is built again."""
    import shutil

    from polar.llm.models import record_checksum, resolve_model, verify_cached

    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "models" / "polar-planner"
    shutil.copytree(ROOT / "planners" / "models" / "polar-planner", folder)
    gguf = Path(resolve_model(str(folder)).path)
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    assert not verify_cached(gguf)  # no record: not trusted (materialise builds it again)
    import hashlib

    record_checksum(gguf, hashlib.sha256(b"GGUF" + b"\0" * 60).hexdigest())
    assert verify_cached(gguf)
    gguf.write_bytes(b"GGUF" + b"\1" * 60)  # altered after it was built
    o = run_in_process(Case("gguf", ["llm", "models", "--path", str(folder)], ()), tmp_path / "models", run_dir)
    flat = " ".join(o.output.split())
    assert o.code == 2 and "Traceback" not in o.output, o.output
    assert gguf.name in flat and "fails its checksum" in flat, o.output


def test_the_shipped_models_record_their_checksums_and_pass_them() -> None:
    from polar.llm.models import read_shipped, shipped_folders

    folders = {n: f for n, f in shipped_folders().items() if f.is_relative_to(ROOT)}
    assert {"polar-planner", "polar-planner-seed1"} <= set(folders)
    for folder in folders.values():
        model = read_shipped(folder)  # raises on any mismatch
        assert len(model.files) == 2 * len(model.adapters)


def main() -> None:
    """Run every case as a subprocess and print which give the clear error."""
    import tempfile

    only = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run_dir(Path(tmp) / "policy")
        good = 0
        selected = [c for c in ALL if not only or any(c.id.startswith(s) for s in only)]
        for i, case in enumerate(selected):
            cwd = Path(tmp) / f"cwd{i}"
            cwd.mkdir()
            o = run_subprocess(case, cwd, run, timeout=60)
            why = problems(case, o, limit_s=60)
            good += not why
            last = (o.output.strip().splitlines() or [""])[-1][:150]
            print(f"{'OK ' if not why else 'BAD'} {case.id:45s} {o.seconds:5.1f}s {'; '.join(why)[:120]}"
                  f"\n      {last}", flush=True)
        print(f"{good}/{len(selected)} cases give the clear error")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
