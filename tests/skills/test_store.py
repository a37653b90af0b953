"""Registration, versions, atomicity under kill -9, concurrency and clear load errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from polar.errors import PolarError
from polar.skills.model import (
    Measurement,
    PolicySpec,
    Skill,
    SkillArgumentError,
    SkillError,
    SkillLoadError,
    SkillNotFound,
)
from polar.skills.store import STAGING, WEIGHTS_FILE, SkillLibrary, load_skill_policy
from tests.skills.conftest import manifest, tiny_policy

ROOT = Path(__file__).resolve().parents[2]


def test_round_trip_weights_identical(library: SkillLibrary) -> None:
    policy = tiny_policy(seed=3)
    skill = library.register_policy(policy, **manifest())
    assert skill.ref == "reach@1" and skill.path == library.root / "reach" / "1"
    loaded = load_skill_policy(library.get("reach"))
    want, _ = policy.to_state()
    got, _ = loaded.to_state()
    assert set(want) == set(got)
    for k in want:
        assert torch.equal(want[k], got[k]), k
    obs = {"x": np.linspace(-1, 1, 4, dtype=np.float32)}
    assert loaded.value(obs) == policy.value(obs)
    assert loaded.act(obs) == policy.act(obs)
    # the manifest on disk is the one in the index
    on_disk = json.loads((skill.path / "manifest.json").read_text())
    assert on_disk["version"] == 1 and on_disk["weights_sha256"] == skill.weights_sha256


def test_versions_resolve_and_are_never_reused(library: SkillLibrary) -> None:
    for seed in (0, 1):
        library.register_policy(tiny_policy(seed), **manifest())
    assert library.get("reach").version == 2
    assert library.get("reach@1").version == 1
    assert library.get("reach@latest").version == 2
    with pytest.raises(SkillNotFound, match="version 7"):
        library.get("reach@7")
    with pytest.raises(SkillNotFound, match="skills here: reach"):
        library.get("nope")
    assert library.remove("reach@2") == ["reach@2"]
    assert not (library.root / "reach" / "2").exists()
    assert library.get("reach").version == 1
    assert library.register_policy(tiny_policy(), **manifest()).version == 3
    assert library.remove("reach") == ["reach@1", "reach@3"]
    assert library.list() == []


def test_revise_makes_a_new_version_with_the_same_weights(library: SkillLibrary) -> None:
    old = library.register_policy(tiny_policy(), **manifest(provenance={"env_steps": 99, "source": "runs/x"}))
    library.record_evaluation(old, Measurement.from_counts(3, 4, harness="h"))
    new = library.revise("reach@1", {"effects": ["at(goal)"], "description": "Reach it."}, note="declared effects",
                         keep_evaluations=True)
    assert new.ref == "reach@2" and new.effects == ["at(goal)"] and new.weights_sha256 == old.weights_sha256
    assert new.provenance.env_steps == 99 and new.provenance.source.startswith("reach@1 revised: declared effects")
    assert [m.successes for m in library.get("reach@2").evaluations] == [3]
    assert library.revise("reach", {"step_budget": 8}, note="b").evaluations == []  # not kept unless asked
    with pytest.raises(SkillError, match="cannot change in a revision"):
        library.revise("reach", {"policy": None}, note="x")


def test_evaluations_attach_to_a_version(library: SkillLibrary) -> None:
    skill = library.register_policy(tiny_policy(), **manifest())
    library.record_evaluation(skill, Measurement.from_counts(9, 10, harness="minigrid:A"))
    library.record_evaluation(skill, Measurement.from_counts(1, 4, harness="minigrid:B"))
    again = library.get("reach")
    assert [m.successes for m in again.evaluations] == [9, 1]
    assert again.success_for("minigrid:A").rate == 0.9


_REGISTER = """
import os, sys, time
from polar.skills.store import SkillLibrary
from tests.skills.conftest import manifest, tiny_policy
lib = SkillLibrary(sys.argv[1])
if len(sys.argv) > 3:  # start together: wait for the go file
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.01)
for i in range(int(sys.argv[2])):
    s = lib.register_policy(tiny_policy(seed=i), **manifest())
    print(s.version, flush=True)
"""


def _spawn(root: Path, n: int, env: dict | None = None, go: Path | None = None) -> subprocess.Popen:
    extra = [str(go)] if go else []
    return subprocess.Popen([sys.executable, "-c", _REGISTER, str(root), str(n), *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def test_concurrent_registrations_from_processes(library: SkillLibrary, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [_spawn(library.root, 4, go=go) for _ in range(3)]
    time.sleep(4)  # let every process import torch, then release them at once
    go.touch()
    versions = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        versions += [int(v) for v in out.split()]
    assert sorted(versions) == list(range(1, 13))
    assert library.versions("reach") == list(range(1, 13))
    for v in (1, 7, 12):
        load_skill_policy(library.get(f"reach@{v}"))  # every folder is complete and verified
    assert not (library.root / STAGING).exists() or not any((library.root / STAGING).iterdir())


def _killed_at(library: SkillLibrary, tmp_path: Path, stage: str) -> None:
    """Start a registration, stop it at `stage` with kill -9."""
    marker = tmp_path / f"paused-{stage}"
    p = _spawn(library.root, 1, {"POLAR_SKILLS_PAUSE_AT": stage, "POLAR_SKILLS_PAUSE_FILE": str(marker)})
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert p.poll() is None, p.stderr.read()
        assert time.monotonic() < deadline, "registration never reached the pause point"
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)


@pytest.mark.parametrize("stage", ["after_write", "after_rename"])
def test_kill_9_mid_registration_leaves_nothing_visible(library: SkillLibrary, tmp_path: Path, stage: str) -> None:
    library.register_policy(tiny_policy(), **manifest(name="other"))  # an existing index
    _killed_at(library, tmp_path, stage)
    assert [s.ref for s in library.list()] == ["other@1"]
    with pytest.raises(SkillNotFound):
        library.get("reach")
    if stage == "after_rename":  # the folder was in place, the row never committed: an orphan
        assert (library.root / "reach" / "1").is_dir()
    removed = library.cleanup()
    assert removed, "cleanup found nothing to remove"
    assert not (library.root / "reach" / "1").exists()
    assert not (library.root / STAGING).exists() or not any((library.root / STAGING).iterdir())
    # the library still works, and the version is allocated afresh
    assert library.register_policy(tiny_policy(), **manifest()).ref == "reach@1"


def test_corrupt_or_missing_weights_are_clear_errors(library: SkillLibrary) -> None:
    skill = library.register_policy(tiny_policy(), **manifest())
    wfile = skill.path / WEIGHTS_FILE
    data = bytearray(wfile.read_bytes())
    data[-5] ^= 0xFF
    wfile.write_bytes(bytes(data))
    with pytest.raises(SkillLoadError, match=rf"{wfile}.*corrupt") as exc:
        load_skill_policy(library.get("reach"))
    assert isinstance(exc.value, PolarError)
    wfile.write_bytes(b"not a safetensors file")
    with pytest.raises(SkillLoadError, match=str(wfile)):
        load_skill_policy(library.get("reach"))
    wfile.unlink()
    with pytest.raises(SkillLoadError, match=rf"{wfile}: weights file missing"):
        load_skill_policy(library.get("reach"))


def test_unreadable_weights_without_hash_name_the_file(library: SkillLibrary) -> None:
    tensors, config = tiny_policy().to_state()
    skill = Skill(**manifest(), kind="policy", policy={"config": config})
    reg = library.register(skill, tensors=tensors)
    # an old manifest without a recorded hash still gets a clear error from safetensors
    (reg.path / WEIGHTS_FILE).write_bytes(b"\x00" * 3)
    bare = reg.model_copy(update={"weights_sha256": None})
    bare._dir = reg.path
    with pytest.raises(SkillLoadError, match=rf"{reg.path / WEIGHTS_FILE}: cannot read weights"):
        load_skill_policy(bare)


def test_manifest_validation_and_arguments() -> None:
    with pytest.raises(ValueError, match="placeholder"):
        Skill(name="x", description="d", kind="primitive", action="pickup", effects=["carrying({object})"])
    with pytest.raises(ValueError, match="lowercase"):
        Skill(name="Bad Name", description="d", kind="primitive", action="pickup")
    with pytest.raises(ValueError, match="policy config"):
        Skill(name="x", description="d", kind="policy", termination={"predicates": ["at(goal)"]})
    s = Skill(name="x", description="d", kind="primitive", action="pickup",
              parameters={"object": {"choices": ["key", "ball"], "required": True}, "color": ["red"]})
    assert s.bind({"object": "key"}) == {"object": "key", "color": "any"}
    with pytest.raises(SkillArgumentError, match="required"):
        s.bind({})
    with pytest.raises(SkillArgumentError, match=r"color='blue' is not one of \['red'\]"):
        s.bind({"object": "key", "color": "blue"})
    with pytest.raises(SkillArgumentError, match="unknown argument"):
        s.bind({"object": "key", "size": 3})


def test_policy_loader_outside_polar_is_refused(library: SkillLibrary) -> None:
    tensors, config = tiny_policy().to_state()
    bad = Skill(**manifest(), kind="policy", policy={"loader": "os:system", "config": config})
    with pytest.raises(SkillLoadError, match="policy.loader: 'os:system' is outside the allowed modules"):
        library.register(bad, tensors=tensors)  # refused at registration: no version is used
    assert library.versions("reach") == []
    skill = library.register(bad.model_copy(update={"policy": PolicySpec(loader="polar.rl.policy:Policy",
                                                                        config=config)}), tensors=tensors)
    assert skill.ref == "reach@1"
    edited = skill.model_copy(update={"policy": bad.policy})  # a manifest edited after registration
    edited._dir = skill.path
    with pytest.raises(SkillLoadError, match="outside the allowed modules"):
        load_skill_policy(edited)


def test_read_only_library_reads_but_refuses_writes(library: SkillLibrary) -> None:
    library.register_policy(tiny_policy(), **manifest())
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions")
    os.chmod(library.index, 0o444)
    os.chmod(library.root, 0o555)
    try:
        assert library.get("reach").version == 1
        with pytest.raises(PolarError, match="read-only"):
            library.register_policy(tiny_policy(), **manifest())
    finally:
        os.chmod(library.root, 0o755)
        os.chmod(library.index, 0o644)


def test_every_registration_cleans_staging_left_by_a_killed_one(library: SkillLibrary, tmp_path: Path) -> None:
    library.register_policy(tiny_policy(), **manifest(name="other"))
    _killed_at(library, tmp_path, "after_write")
    left = list((library.root / STAGING).iterdir())
    assert len(left) == 1 and left[0].name.startswith("reach.")  # the dead registration's folder
    library.register_policy(tiny_policy(), **manifest(name="third"))  # no cleanup() call
    assert not (library.root / STAGING).exists() or not any((library.root / STAGING).iterdir())


def test_a_corrupt_index_names_the_file_and_is_rebuilt_from_the_manifests(library: SkillLibrary) -> None:
    first = library.register_policy(tiny_policy(), **manifest())
    library.register_policy(tiny_policy(seed=1), **manifest())
    library.record_evaluation(first, Measurement.from_counts(3, 4, harness="minigrid:x"))
    library.index.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SkillLoadError, match=r"library.sqlite: the skill index cannot be read.*"
                                             r"polar skills doctor --rebuild-index"):
        library.list()
    refs, skipped, old = library.rebuild_index()
    assert refs == ["reach@1", "reach@2"] and skipped == [] and old is not None and old.is_file()
    assert [s.ref for s in library.list(all_versions=True)] == ["reach@1", "reach@2"]
    load_skill_policy(library.get("reach@2"))
    assert library.register_policy(tiny_policy(), **manifest()).ref == "reach@3"  # numbering goes on
    # a readable index keeps its evaluations through a rebuild; a damaged folder is left out
    (library.root / "reach" / "2" / WEIGHTS_FILE).write_bytes(b"junk")
    (library.root / "reach" / "9").mkdir()
    (library.root / "reach" / "9" / "manifest.json").write_bytes(b"\x00\x01binary")
    library.record_evaluation(library.get("reach@1"), Measurement.from_counts(1, 2))
    refs, skipped, _ = library.rebuild_index()
    assert refs == ["reach@1", "reach@3"] and len(skipped) == 2
    assert "reach/2" in skipped[0] and "sha256" in skipped[0] and "binary data" in skipped[1]
    assert [m.episodes for m in library.get("reach@1").evaluations] == [2]
