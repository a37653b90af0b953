"""`polar skills register` decides which harnesses a skill accepts: the ones given, else the
ones its training run trained on, every one only with --any-harness; each concrete one's
spaces are checked against the policy's. A real `polar train` run, the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.skills.test_cli import ROOT, polar

COMMON = ["--description", "Balance the pole.", "--termination", "at(goal)", "--json"]


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CartPole PPO run, as `polar train --out DIR` writes it (512 env steps: seconds)."""
    out = tmp_path_factory.mktemp("train") / "cartpole"
    p = subprocess.run([sys.executable, "-m", "polar", "train", "ppo_cartpole", "--out", str(out),
                        "--steps", "512", "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def test_the_harnesses_come_from_the_training_run(cartpole_run: Path, tmp_path: Path) -> None:
    lib = tmp_path / "skills"
    reg = json.loads(polar("register", str(cartpole_run), "--name", "balance", *COMMON, lib=lib).stdout)
    assert reg["harnesses"] == ["gym:CartPole-v1"]  # config.yaml's `harness:`, not every harness
    assert reg["provenance"]["trained_on"] == ["gym:CartPole-v1"] and reg["provenance"]["env_steps"] == 512
    # the run's policy/ folder leads to the same run (its config.yaml one level up)
    sub = json.loads(polar("register", str(cartpole_run / "policy"), "--name", "balance2", *COMMON, lib=lib).stdout)
    assert sub["harnesses"] == ["gym:CartPole-v1"] and sub["provenance"]["env_steps"] == 512


def test_no_harness_anywhere_is_an_error_naming_both_ways(cartpole_run: Path, tmp_path: Path) -> None:
    bare = tmp_path / "saved"  # a saved policy with no training run around it
    shutil.copytree(cartpole_run / "policy", bare)
    lib = tmp_path / "skills"
    p = polar("register", str(bare), "--name", "balance", *COMMON, lib=lib, check=False)
    msg = " ".join(p.stderr.split())
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--harness" in msg and "config.yaml" in msg and "--any-harness" in msg, msg
    assert not lib.exists()  # refused before the library was touched
    both = polar("register", str(bare), "--name", "balance", "--any-harness", "--harness", "gym:*", *COMMON,
                 lib=lib, check=False)
    assert both.returncode == 2 and "give one of them" in both.stderr
    anyh = json.loads(polar("register", str(bare), "--name", "balance", "--any-harness", *COMMON, lib=lib).stdout)
    assert anyh["harnesses"] == ["*"] and anyh["ref"] == "balance@1"


def test_a_harness_whose_spaces_do_not_fit_is_refused(cartpole_run: Path, tmp_path: Path) -> None:
    lib = tmp_path / "skills"
    p = polar("register", str(cartpole_run), "--name", "balance", "--harness", "gym:MountainCar-v0", *COMMON,
              lib=lib, check=False)
    msg = " ".join(p.stderr.split())
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "observation space: 'gym:MountainCar-v0' gives shape [2] where shape [4] is expected by balance" in msg
    assert not lib.exists()
    # a pattern is checked where it covers the training harness: CartPole fits, so it registers
    ok = json.loads(polar("register", str(cartpole_run), "--name", "balance", "--harness", "gym:*", *COMMON,
                          lib=lib).stdout)
    assert ok["harnesses"] == ["gym:*"]
