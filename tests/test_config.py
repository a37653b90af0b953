import subprocess
import sys

import pytest

from polar.config import StrictModel, load_yaml
from polar.errors import ConfigError
from polar.harnesses.registry import HarnessFile, make_harness


class Inner(StrictModel):
    steps: int = 10


class Outer(StrictModel):
    name: str
    inner: Inner = Inner()


def test_misspelled_key_names_its_path(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: x\ninner:\n  stpes: 5\n")
    with pytest.raises(ConfigError) as e:
        load_yaml(p, Outer)
    assert f"{p}: inner.stpes: unknown key" in str(e.value)


def test_wrong_type_and_missing_field(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("inner:\n  steps: many\n")
    msg = str(pytest.raises(ConfigError, load_yaml, p, Outer).value)
    assert "inner.steps: Input should be a valid integer" in msg
    assert "name: Field required" in msg


def test_yaml_syntax_error_names_line(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: [unclosed\n")
    assert "invalid YAML (line 2" in str(pytest.raises(ConfigError, load_yaml, p, Outer).value)


def test_harness_yaml_alias(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text("id: small-doorkey\nbase: minigrid:MiniGrid-DoorKey-5x5-v0\nkwargs: {max_steps: 20}\n")
    h = make_harness(str(p))
    assert h.spec.id == "small-doorkey" and h.spec.max_steps == 20
    assert HarnessFile.model_fields.keys() >= {"id", "base", "connector"}


def test_cli_bad_config_exits_2_without_traceback(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("id: x\nbase: gym:CartPole-v1\nkwrags: {}\n")
    r = subprocess.run([sys.executable, "-m", "polar.cli", "harness", "describe", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "ConfigError" in r.stderr and "kwrags: unknown key" in r.stderr
    assert "Traceback" not in r.stderr
