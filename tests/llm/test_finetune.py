"""Fine-tuning end to end on a tiny randomly initialised Llama (2 layers) with SmolLM2's real
tokenizer: the loss falls, the model is registered with its provenance, llama.cpp's server
(after conversion with llama.cpp's own converter) serves it, and its greedy replies are the
training targets."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from polar.llm.dataset import DatasetInfo, Example, write_dataset
from tests.llm.engine import free_port, require_engine, require_model

SYSTEM = "You plan for a robot in a grid world. Reply with one JSON object."
TOY = [
    ("Goal: at(goal)\nFacts: reachable(goal)", {"kind": "skill", "skill": "goto", "args": {"object": "goal"}}),
    ("Goal: open(door,yellow)\nFacts: facing(door,yellow), carrying(key,yellow)",
     {"kind": "skill", "skill": "toggle", "args": {"color": "yellow"}}),
    ("Goal: carrying(box,purple)\nFacts: facing(box,purple)",
     {"kind": "skill", "skill": "pickup", "args": {"color": "purple", "object": "box"}}),
    ("Goal: at(goal)\nFacts: at(goal)", {"kind": "finish", "success": True}),
]


def toy_examples() -> list[Example]:
    return [Example(messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                    completion=json.dumps({"decision": d}), source="teacher:test", harness_id="toy",
                    seed=i, episode_id=f"e{i}", decision_index=0, skill=d.get("skill", d["kind"]))
            for i, (user, d) in enumerate(TOY)]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    """A 2-layer Llama with random weights and the real SmolLM2 tokenizer, as a checkpoint folder."""
    require_model("smollm2-135m")
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from polar.llm.finetune import tokenizer_dir

    tok = AutoTokenizer.from_pretrained(tokenizer_dir("smollm2-135m"))
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    out = tmp_path_factory.mktemp("tiny") / "base"
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


# ~55 CPU-seconds in all (measured: imports ~8, 80 steps + merge + score ~14, llama.cpp's
# converter ~8, the server and replies ~2, pytest the rest): about a minute on a quiet machine;
# one torch thread, so a shared machine's load slows it least
@pytest.mark.timeout(1200)
def test_tiny_model_learns_the_targets_is_registered_and_served(tiny_base, tmp_path, monkeypatch):
    from polar.llm.finetune import FinetuneConfig, finetune
    from polar.llm.models import ModelRegistry, resolve_model
    from polar.llm.serve import ServerSettings, start, stop

    monkeypatch.setenv("POLAR_MODELS", str(tmp_path / "models.json"))
    data = tmp_path / "data"
    exs = toy_examples()
    info = write_dataset(data, {"train": exs, "validation": exs}, DatasetInfo())
    # full fine-tuning: a LoRA adapter cannot train a random model's embeddings and final norm,
    # so it cannot make the tiny model's output distribution peaked (SmolLM2 runs use LoRA)
    cfg = FinetuneConfig(base=str(tiny_base), data=str(data), name="toy-planner", method="full",
                         learning_rate=1e-2, lr_scheduler="constant", max_steps=80, batch_size=4,
                         max_length=256, warmup_ratio=0.0, save_steps=80, threads=1, work_dir=str(tmp_path / "work"),
                         gguf_type="f32")
    entry = finetune(cfg, progress=False)

    log = json.loads((tmp_path / "work" / "train_log.json").read_text())["log"]
    assert log[-1]["loss"] < 0.2 * log[0]["loss"], [r["loss"] for r in log]
    assert all(r["tokens_per_s"] > 0 for r in log)
    # registered like a skill: versioned, with provenance
    assert entry.ref == "toy-planner@1" and entry.engine == "llamacpp" and entry.path.endswith(".gguf")
    prov = resolve_model("toy-planner").provenance
    assert prov["dataset_sha256"] == info.sha256 and prov["base"] == str(tiny_base)
    assert prov["steps"] == 80 and prov["tokens_seen"] > 0 and prov["wall_s"] > 0
    assert prov["eval"]["exact_match"] == 1.0
    assert ModelRegistry().get("toy-planner").version == 1

    # served by llama.cpp's server: its greedy replies are the training targets
    require_engine()
    port = free_port()
    start(ServerSettings(model="toy-planner", port=port, n_ctx=512, threads=1), announce=lambda _m: None)
    try:
        for ex in exs:
            body = json.dumps({"model": "toy-planner", "messages": ex.messages, "temperature": 0.0,
                               "max_tokens": 48}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                reply = json.loads(r.read())["choices"][0]["message"]["content"]
            assert reply.strip() == ex.completion
    finally:
        stop("127.0.0.1", port)


def _gguf_tensors(path: str | Path) -> dict[str, bytes]:
    """Every tensor's raw bytes, read with llama.cpp's own gguf-py (from the converter)."""
    import sys

    from polar.llm.convert import converter_dir

    sys.path.insert(0, str(converter_dir() / "gguf-py"))
    try:
        from gguf import GGUFReader
    finally:
        sys.path.pop(0)
    return {t.name: t.data.tobytes() for t in GGUFReader(str(path)).tensors}


@pytest.mark.timeout(1200)
def test_a_lora_fine_tune_ships_as_its_adapter_and_merges_back_to_the_same_model(tiny_base, tmp_path, monkeypatch):
    """`polar llm ship` writes the adapter (not the weights) and provenance; the shipped folder
    is found by name, and its first use merges the adapter into the base again: the GGUF's
    tensors are exactly those of the model that was trained and evaluated."""
    from typer.testing import CliRunner

    from polar.commands.app import app
    from polar.errors import ConfigError
    from polar.llm.adapters import ship
    from polar.llm.finetune import FinetuneConfig, finetune
    from polar.llm.models import list_models, resolve_model, weights_path

    monkeypatch.setenv("POLAR_MODELS", str(tmp_path / "models.json"))
    from polar.llm.models import cache_dir

    converter = cache_dir() / "llama.cpp-converter"  # the merged GGUF goes to a cache of the test's own
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "llama.cpp-converter").symlink_to(converter)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    write_dataset(data, {"train": toy_examples(), "validation": []}, DatasetInfo())
    common = dict(data=str(data), learning_rate=1e-2, max_steps=6, batch_size=4, max_length=256,
                  warmup_ratio=0.0, save_steps=100, threads=1, gguf_type="f32", eval_examples=0)
    trained = finetune(FinetuneConfig(base=str(tiny_base), name="toy-lora", lora_r=4,
                                      work_dir=str(tmp_path / "w1"), **common), progress=False)
    # a second fine-tune on top of the first (an improvement round): the chain is shipped
    round1 = finetune(FinetuneConfig(base=trained.ref, name="toy-lora", lora_r=4,
                                     work_dir=str(tmp_path / "w2"), **common), progress=False)
    assert round1.ref == "toy-lora@2" and round1.provenance["base_ref"] == "toy-lora@1"  # not "the latest"

    r = CliRunner().invoke(app, ["llm", "ship", "toy-lora@2", "--out", "planners/models/toy-shipped"])
    assert r.exit_code == 0, r.output
    folder = tmp_path / "planners" / "models" / "toy-shipped"
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == ["adapter-1/adapter_config.json", "adapter-1/adapter_model.safetensors",
                     "adapter-2/adapter_config.json", "adapter-2/adapter_model.safetensors", "model.json"]
    meta = json.loads((folder / "model.json").read_text())
    assert meta["base"] == str(tiny_base) and meta["provenance"]["shipped_from"] == "toy-lora@2"
    assert [p["dataset_sha256"] for p in meta["provenance"]["chain"]] == [trained.provenance["dataset_sha256"]] * 2
    assert "checkpoint" not in meta["provenance"]["chain"][0]  # no paths of the training machine

    entry = resolve_model("toy-shipped")
    assert entry.source.startswith("shipped:") and not Path(entry.path).exists()  # merged on first use
    assert any(name == "toy-shipped" and missing is None for _e, name, missing in list_models())
    gguf = weights_path(entry)
    assert gguf.exists() and weights_path(entry) == gguf  # made once, then reused
    want, got = _gguf_tensors(round1.path), _gguf_tensors(gguf)
    assert sorted(got) == sorted(want) and all(got[k] == want[k] for k in want)
    # the env steps its training data cost go with it: a suite charges them to the model's arm
    from polar.evals.planner_agent import model_charges

    assert model_charges("toy-shipped") == {}
    ship("toy-lora@2", tmp_path / "planners" / "models" / "toy-charged", env_steps=1234, env_steps_source="t")
    assert list(model_charges("toy-charged").values()) == [1234]

    # a fine-tune on the shipped model (a DAgger round on the shipped SFT model), shipped under the
    # same name: the folder holds the shipped chain and the new adapter, based on the built-in base
    # (before, it named itself as its base); f32 GGUFs, so the merged chain is the trained model
    dagger = finetune(FinetuneConfig(base="toy-shipped", name="toy-dagger", lora_r=4,
                                     work_dir=str(tmp_path / "w4"), **common), progress=False)
    ship(dagger.ref, folder)
    meta = json.loads((folder / "model.json").read_text())
    assert meta["base"] == str(tiny_base) and meta["adapters"] == ["adapter-1", "adapter-2", "adapter-3"]
    assert len(meta["provenance"]["chain"]) == 3 and meta["provenance"]["chain"][-1]["base"] == "toy-shipped"
    merged = weights_path(resolve_model("toy-shipped"))
    want, got = _gguf_tensors(dagger.path), _gguf_tensors(merged)
    assert sorted(got) == sorted(want) and all(got[k] == want[k] for k in want)

    # a full fine-tune has no adapter: it cannot be shipped, and the error says why
    full = finetune(FinetuneConfig(base=str(tiny_base), name="toy-full", method="full", engine="transformers",
                                   work_dir=str(tmp_path / "w3"), **common), progress=False)
    with pytest.raises(ConfigError, match="only LoRA fine-tunes can be shipped"):
        ship(full.ref, tmp_path / "nope")


def test_a_missing_gguf_converter_fails_before_any_training(tiny_base, tmp_path, monkeypatch):
    from polar.llm.convert import ConvertError
    from polar.llm.finetune import FinetuneConfig, finetune

    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "empty-cache"))  # no converter extracted there
    monkeypatch.delenv("POLAR_LLAMA_CPP_SDIST", raising=False)
    monkeypatch.setenv("POLAR_MODELS", str(tmp_path / "models.json"))
    data = tmp_path / "data"
    write_dataset(data, {"train": toy_examples(), "validation": toy_examples()}, DatasetInfo())
    cfg = FinetuneConfig(base=str(tiny_base), data=str(data), name="toy-planner", method="full", max_steps=5,
                         batch_size=4, max_length=256, threads=1, work_dir=str(tmp_path / "work"))
    with pytest.raises(ConvertError, match="converter"):
        finetune(cfg, progress=False)
    assert not (tmp_path / "work" / "train_log.json").exists(), "training ran before the converter was checked"


def test_an_epoch_is_the_packed_sequences_the_trainer_makes(tiny_base, tmp_path):
    """The planned steps per epoch are the sequences TRL's packing really makes: examples
    too long to share a window are not counted as if they filled it (epochs: 1 trained 0.6
    of a pass over ~280-token examples in 512-token windows)."""
    import math

    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig

    from polar.llm.finetune import (
        _completion_loss_trainer,
        load_tokenizer,
        packed_sequences,
        tokenize_example,
    )

    tok = load_tokenizer(tiny_base)
    rows = [tokenize_example(tok, ex) for ex in toy_examples()] * 6
    longest = max(len(r["input_ids"]) for r in rows)
    window = longest + 8  # two examples never fit one window
    args = SFTConfig(output_dir=str(tmp_path), packing=True, packing_strategy="bfd", max_length=window,
                     completion_only_loss=True, report_to=[], use_cpu=True, max_steps=1,
                     eos_token=tok.eos_token, pad_token=tok.pad_token or tok.eos_token)
    trainer = _completion_loss_trainer()(model=AutoModelForCausalLM.from_pretrained(tiny_base), args=args,
                                         train_dataset=Dataset.from_list(rows), processing_class=tok)
    assert packed_sequences(rows, window) == len(trainer.train_dataset) == len(rows)
    assert math.ceil(sum(len(r["input_ids"]) for r in rows) / window) < len(rows)  # the old estimate
    assert packed_sequences(rows, 4 * longest) < len(rows)  # where they do share windows, fewer
