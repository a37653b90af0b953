"""`polar skills ...` end to end in a subprocess, on a library in a temp folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from polar.harnesses.registry import make_harness
from tests.skills.conftest import tiny_policy

ROOT = Path(__file__).resolve().parents[2]
DOORKEY = "minigrid:MiniGrid-DoorKey-5x5-v0"


def polar(*args: str, lib: Path, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "polar", "skills", *args, "-L", str(lib)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_register_list_show_eval_remove(tmp_path: Path) -> None:
    lib = tmp_path / "skills"
    h = make_harness(DOORKEY)
    run_dir = tmp_path / "run"
    tiny_policy(obs_space=h.observation_space, act_space=h.action_space).save(run_dir)
    (run_dir / "config.yaml").write_text("harness: minigrid:MiniGrid-DoorKey-5x5-v0\nsteps: 1000\n")
    h.close()
    out = polar("register", str(run_dir), "--name", "fetchbox", "--description", "Fetch the box.",
                "--params", '{"color": ["red", "purple"]}', "--harness", "minigrid:*",
                "--termination", "carrying(box,{color})", "--budget", "4", "--json", lib=lib)
    reg = json.loads(out.stdout)
    assert reg["ref"] == "fetchbox@1" and reg["provenance"]["trained_on"] == [DOORKEY]
    assert len(reg["provenance"]["training_config_hash"]) == 64

    polar("install-primitives", lib=lib)
    listed = json.loads(polar("list", "--json", lib=lib).stdout)
    assert sorted(s["name"] for s in listed) == ["drop", "fetchbox", "forward", "left", "pickup", "right", "toggle", "unlock"]

    out = polar("eval", "fetchbox", "--harness", DOORKEY, "--episodes", "3", "--args", '{"color": "red"}',
                "--json", lib=lib)
    ev = json.loads(out.stdout)
    assert ev["measurement"]["episodes"] == 3 and ev["measurement"]["successes"] == 0
    assert ev["reasons"] == {"step budget (4) exhausted": 3}
    shown = json.loads(polar("show", "fetchbox@1", "--json", lib=lib).stdout)
    assert shown["success"]["episodes"] == 3 and shown["success"]["harness"] == DOORKEY
    assert "fetchbox@1" in polar("show", "fetchbox", lib=lib).stdout

    bad = polar("eval", "fetchbox", "--harness", DOORKEY, "--args", '{"color": "pink"}', lib=lib, check=False)
    assert bad.returncode == 1 and "SkillArgumentError" in bad.stderr and "pink" in bad.stderr
    polar("remove", "fetchbox", lib=lib)
    gone = polar("show", "fetchbox", lib=lib, check=False)
    assert gone.returncode == 1 and "SkillNotFound" in gone.stderr


def test_register_rejects_a_missing_run_dir(tmp_path: Path) -> None:
    p = polar("register", str(tmp_path / "nope"), "--name", "x", "--description", "d",
              "--termination", "at(goal)", lib=tmp_path / "skills", check=False)
    assert p.returncode != 0 and "nope" in p.stderr


def test_doctor_rebuilds_a_corrupt_index_and_cleans_staging(tmp_path: Path) -> None:
    from polar.skills.store import STAGING, SkillLibrary
    from tests.skills.conftest import manifest

    lib = tmp_path / "skills"
    SkillLibrary(lib).register_policy(tiny_policy(), **manifest())
    (lib / "library.sqlite").write_bytes(b"\x00garbage" * 64)
    broken = polar("list", lib=lib, check=False)
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    assert "library.sqlite" in broken.stderr and "--rebuild-index" in " ".join(broken.stderr.split())
    (lib / STAGING / "reach.999999999.deadbeef").mkdir(parents=True)  # a killed registration's
    out = polar("doctor", "--rebuild-index", lib=lib)
    assert "1 skill version(s)" in out.stdout and not any((lib / STAGING).iterdir())
    assert json.loads(polar("list", "--json", lib=lib).stdout)[0]["ref"] == "reach@1"
    (lib / STAGING / "reach.999999999.deadbeef").mkdir(parents=True)
    out = polar("doctor", lib=lib)
    assert "1 leftover folder(s) removed" in " ".join(out.stdout.split())
    assert not (lib / STAGING).exists() or not any((lib / STAGING).iterdir())


def test_register_checks_the_manifest_before_touching_the_library(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    tiny_policy().save(run_dir)
    manifest = tmp_path / "m.yaml"
    manifest.write_text("name: fromfile\ndescription: d\ntermination: {predicates: [at(goal)]}\n"
                        "features: {fn: 'polar.skills.nowhere:f'}\n")
    p = polar("register", str(run_dir), "--manifest", str(manifest), lib=tmp_path / "skills", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "m.yaml: features.fn: cannot import 'polar.skills.nowhere:f'" in " ".join(p.stderr.split())
    assert not (tmp_path / "skills").exists()
    manifest.write_text("name: fromfile\ndescription: d\ntermination: {predicates: [at(goal)]}\n")
    out = polar("register", str(run_dir), "--manifest", str(manifest), "--any-harness", "--json", lib=tmp_path / "skills")
    assert json.loads(out.stdout)["ref"] == "fromfile@1"  # the name comes from the manifest


def test_add_primitive_and_python_skills_checked_before_anything_is_written(tmp_path: Path) -> None:
    lib = tmp_path / "skills"
    bad_action = polar("add-primitive", "jump", "--action", "jump", "--harness", DOORKEY,
                       "--description", "Jump.", lib=lib, check=False)
    assert bad_action.returncode == 2 and "has no action 'jump'" in bad_action.stderr and "pickup" in bad_action.stderr
    assert not (lib / "library.sqlite").exists()
    out = polar("add-primitive", "grab", "--action", "pickup", "--harness", DOORKEY, "--description", "Grab it.",
                "--params", '{"color": ["red", "yellow"]}', "--precondition", "facing(key,{color})",
                "--effect", "carrying(key,{color})", "--json", lib=lib)
    grab = json.loads(out.stdout)
    assert grab["ref"] == "grab@1" and grab["kind"] == "primitive" and grab["effects"] == ["carrying(key,{color})"]

    (lib / "hooks").mkdir()
    (lib / "hooks" / "mine.py").write_text("def spin(obs, args):\n    return 0\n")
    manifest = tmp_path / "spin.skill.yaml"
    manifest.write_text("name: spin\nkind: python\ndescription: Turn left forever.\nharnesses: ['minigrid:*']\n"
                        "policy: {loader: hooks.mine:nosuch, config: {}}\ntermination: {predicates: ['at(goal)']}\n")
    refused = polar("add", str(manifest), lib=lib, check=False)
    assert refused.returncode == 2 and "nosuch" in refused.stderr
    manifest.write_text(manifest.read_text().replace("hooks.mine:nosuch", "hooks.mine:spin"))
    spin = json.loads(polar("add", str(manifest), "--json", lib=lib).stdout)
    assert spin["ref"] == "spin@1"  # the refused registration used no version number
    ev = json.loads(polar("eval", "spin", "--harness", DOORKEY, "--episodes", "2", "--budget", "3", "--json",
                          lib=lib).stdout)
    assert ev["reasons"] == {"step budget (3) exhausted": 2}  # it ran: three left turns per episode
    policy = tmp_path / "policy.skill.yaml"
    policy.write_text("name: p\nkind: policy\ndescription: x\n")
    wrong = polar("add", str(policy), lib=lib, check=False)
    assert wrong.returncode == 2 and "polar skills register RUN_DIR" in wrong.stderr


def test_register_stochastic_or_deterministic(tmp_path: Path) -> None:
    lib = tmp_path / "skills"
    h = make_harness(DOORKEY)
    run_dir = tmp_path / "run"
    tiny_policy(obs_space=h.observation_space, act_space=h.action_space).save(run_dir)
    h.close()
    common = ["--description", "d", "--termination", "at(goal)", "--env-steps", "10", "--harness", DOORKEY, "--json"]
    sampled = json.loads(polar("register", str(run_dir), "--name", "s", "--stochastic", *common, lib=lib).stdout)
    greedy = json.loads(polar("register", str(run_dir), "--name", "g", "--deterministic", *common, lib=lib).stdout)
    default = json.loads(polar("register", str(run_dir), "--name", "d", *common, lib=lib).stdout)
    assert (sampled["deterministic"], greedy["deterministic"], default["deterministic"]) == (False, True, True)
