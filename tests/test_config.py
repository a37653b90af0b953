import subprocess
import sys

import pytest

from polar.config import (
    MAX_CONFIG_BYTES,
    StrictModel,
    check_safe_name,
    load_yaml,
    parse_yaml,
    read_mapping,
    read_text,
)
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
    r = subprocess.run([sys.executable, "-m", "polar", "harness", "describe", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "ConfigError" in r.stderr and "kwrags: unknown key" in r.stderr
    assert "Traceback" not in r.stderr


# --- the one loader ------------------------------------------------------------------------


def _err(fn, *args) -> str:
    return str(pytest.raises(ConfigError, fn, *args).value)


def test_anchors_and_merge_keys_still_work() -> None:
    data = parse_yaml("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  a: 3\ny: *b\n", "s")
    assert data == {"base": {"a": 1, "b": 2}, "x": {"a": 3, "b": 2}, "y": {"a": 1, "b": 2}}


def test_duplicate_keys_are_refused_with_both_lines() -> None:
    assert _err(parse_yaml, "a: 1\nb: 2\na: 3\n", "f.yaml") == \
        "f.yaml: line 3, column 1: duplicate key 'a' (first on line 1)"
    assert "duplicate key 'x'" in _err(parse_yaml, '{"x": 1, "x": 2}', "m.json")  # JSON too


def test_alias_bombs_and_self_reference_are_refused_fast() -> None:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = "\n".join(lines)  # under 1 KB; 9**9 values once expanded
    assert len(bomb) < 1000 and "alias bomb" in _err(parse_yaml, bomb, "b.yaml")
    assert "refers to a collection that contains it" in _err(parse_yaml, "a: &a [1, *a]", "r.yaml")


def test_deep_nesting_is_refused_before_the_parser_recurses() -> None:
    for text in ("x: " + "[" * 100_000, "- " * 5000 + "x", "".join(" " * i + f"k{i}:\n" for i in range(500))):
        assert "nested more than 64 levels deep" in _err(parse_yaml, text, "d.yaml")


def test_bytes_that_are_not_a_config_name_the_file(tmp_path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"a: 1\n\x00\x01\x02")
    assert _err(read_text, p) == f"{p}: holds binary data (NUL bytes), not text"
    p.write_bytes(b"name: caf\xe9\n")
    assert _err(read_text, p) == f"{p}: not UTF-8 text (byte 0xe9 on line 1); save the file as UTF-8"
    p.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES)
    assert "larger than the 1024 KiB limit" in _err(read_text, p)
    p.write_bytes(b"\xef\xbb\xbfa: 1\n")  # a UTF-8 byte-order mark is fine
    assert read_mapping(p) == {"a": 1}
    assert _err(read_text, tmp_path) == f"{tmp_path}: is a folder, not a file"


def test_the_top_of_a_config_is_a_non_empty_mapping(tmp_path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("# only a comment\n")
    assert "the file is empty" in _err(read_mapping, p)
    assert read_mapping(p, allow_empty=True) == {}
    p.write_text("- a\n- b\n")
    assert "expected a mapping of keys to values at the top, got a list" in _err(read_mapping, p)
    p.write_text("name: x\n")
    assert load_yaml(p, Outer).name == "x"
    p.write_text("")
    assert "the file is empty" in _err(load_yaml, p, Outer)  # Outer needs `name`
    assert load_yaml(p, Inner) == Inner()  # every field has a default


def test_names_used_as_paths_are_checked() -> None:
    for ok in ("doorkey", "DoorKey-8x8", "a.b_c-1"):
        assert check_safe_name(ok) == ok
    for bad in ("..", "../etc/passwd", "a/b", ".hidden", "", "a..b"):
        with pytest.raises(ValueError, match="no '/' or '..'"):
            check_safe_name(bad)


def test_at_default_names_the_fields_left_at_their_defaults() -> None:
    from pydantic import Field

    class Added(StrictModel):
        name: str
        tags: list[str] = Field(default_factory=list)
        engine: str | None = None
        slots: int = 1

    assert Added(name="x").at_default("tags", "engine", "slots") == {"tags", "engine", "slots"}
    assert Added(name="x", tags=["a"], slots=2).at_default("tags", "engine", "slots") == {"engine"}
    assert Added(name="x").at_default() == set()
