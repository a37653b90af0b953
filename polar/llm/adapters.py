"""Trained planner models shipped as LoRA adapters (`polar llm ship`).

A fine-tuned model's GGUF is 100+ MB; the LoRA adapters it was trained as are a few MB.
`polar llm ship NAME` copies a registered model's adapters (the whole chain when a round
fine-tuned an earlier fine-tune) and its provenance into `planners/models/NAME/`, a folder to
commit. Anyone with the checkout then uses the model by name: on first use
(`resolve_model("NAME")` -> `weights_path`), the adapters are merged into the base model
again, in order, in float32 (the base checkpoint is the one training used: the built-in GGUF
de-quantised), and the result is converted with llama.cpp's own converter into Polar's cache,
once. Merging is deterministic, so the served model is the one that was evaluated. Finding a
shipped model by name (`shipped_entry`, `ShippedModel`) is in `polar.llm.models`; this module
makes and writes them.

    planners/models/polar-planner/
        model.json          # name, base, adapter folders in order, GGUF type, provenance
        adapter-1/          # adapter_config.json + adapter_model.safetensors (PEFT's own files)
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

from polar.errors import ConfigError
from polar.llm.models import (
    ADAPTER_FILES,
    INSTALL_HINT,
    ModelEntry,
    ShippedModel,
    adapter_checksums,
    builtin_installed,
    read_shipped,
    record_checksum,
    resolve_model,
    verify_cached,
)

# what merging and converting on first use imports (the `train` extra; gguf: transformers
# reads the base GGUF with it; sentencepiece: llama.cpp's converter imports it)
MERGE_MODULES = ("torch", "peft", "transformers", "gguf", "sentencepiece")
TRAIN_HINT = "pip install 'polar[train]' (or `make install`)"

# provenance keys that are paths on the training machine: dropped from a shipped copy
LOCAL_PATHS = ("base_checkpoint", "dataset", "checkpoint", "adapter")


def unavailable(entry: ModelEntry) -> str | None:
    """Why a shipped model cannot be served here, or None when it can: its merged GGUF is in
    the cache already, or everything its first use needs is here (its adapters' files, the
    base model's weights, the modules that merge and convert, llama.cpp's converter)."""
    if Path(entry.path).exists():
        return None
    from polar.llm.convert import converter_ready

    folder = Path(entry.source.removeprefix("shipped:"))
    try:
        model = read_shipped(folder)
    except ConfigError as err:
        return str(err)
    if not builtin_installed(model.base):
        return f"its base model {model.base} is not installed: {INSTALL_HINT}"
    missing = [m for m in MERGE_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        return f"merging its LoRA adapters (once) needs {', '.join(missing)}: {TRAIN_HINT}"
    if not converter_ready():
        return "llama.cpp's GGUF converter is not in Polar's cache: python -m polar.llm.convert --fetch"
    return None


def materialise(entry: ModelEntry) -> Path:
    """Merge a shipped model's adapters into its base and convert it to GGUF (once)."""
    from polar.files import file_lock

    gguf = Path(entry.path)
    if verify_cached(gguf):  # a ConfigError when it fails its checksum
        return gguf
    # one process at a time merges a given model (its work folder and temporary file have fixed
    # names); one that waited finds the other's GGUF and uses it
    with file_lock(gguf.with_name(gguf.name + ".lock")):
        if verify_cached(gguf):
            return gguf
        return _merge_and_convert(entry, gguf)


def _merge_and_convert(entry: ModelEntry, gguf: Path) -> Path:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from polar.files import sha256_of
    from polar.llm.convert import to_gguf
    from polar.llm.finetune import base_checkpoint, load_tokenizer

    folder = Path(entry.source.removeprefix("shipped:"))
    model = read_shipped(folder)  # checked again right before loading: paths, checksums, no pickles
    print(f"{entry.name}: merging {len(model.adapters)} adapter(s) into {model.base} and converting "
          f"to GGUF (once): {gguf}", flush=True)
    base_dir = base_checkpoint(model.base)
    lm = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32, use_safetensors=True)
    # read_shipped made sure each adapter folder holds its safetensors file and no pickle, so
    # PEFT reads the safetensors file (it falls back to torch.load only for adapter_model.bin)
    for a in model.adapters:
        lm = PeftModel.from_pretrained(lm, folder / a).merge_and_unload()
    work = gguf.with_suffix(".merging")
    shutil.rmtree(work, ignore_errors=True)
    lm.save_pretrained(work)
    load_tokenizer(base_dir).save_pretrained(work)
    try:
        tmp = to_gguf(work, gguf.with_suffix(".gguf.tmp"), model.gguf_type)
        record_checksum(gguf, sha256_of(tmp))  # checked before every later use
        tmp.replace(gguf)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return gguf


def adapter_chain(ref: str) -> tuple[str, list[Path], list[dict[str, Any]]]:
    """(the base model, the adapter folders from the first fine-tune to `ref`, their
    provenances) for a registered model trained with LoRA, following each one's `base`, and on
    into a shipped model's own adapters when a fine-tune started from one (a DAgger round on the
    shipped SFT model): else the shipped copy would name itself as its base. Such a fine-tune
    trained on the shipped model's GGUF de-quantised, so the chain merged again differs from it
    by that GGUF's rounding (q8_0); evaluate the shipped copy, as users get it."""
    adapters: list[Path] = []
    provenances: list[dict[str, Any]] = []
    entry = resolve_model(ref)
    while entry.source == "registry" and "dataset_sha256" in entry.provenance:
        adapter = entry.provenance.get("adapter")
        if not adapter or not Path(adapter).is_dir():
            raise ConfigError(f"model {entry.ref}: no LoRA adapter on disk (full fine-tuning, or trained before "
                              "adapters were kept); only LoRA fine-tunes can be shipped")
        adapters.insert(0, Path(adapter))
        provenances.insert(0, entry.provenance)
        # the exact version trained on (older runs kept only the name they were given)
        entry = resolve_model(str(entry.provenance.get("base_ref") or entry.provenance["base"]))
    if entry.source.startswith("shipped:") and adapters:  # fine-tuned on a shipped model: its chain first
        folder = Path(entry.source.removeprefix("shipped:"))
        shipped = read_shipped(folder)
        adapters[:0] = [folder / a for a in shipped.adapters]
        provenances[:0] = shipped.provenance.get("chain", [])
        return shipped.base, adapters, provenances
    if not adapters:
        raise ConfigError(f"model {ref!r}: not a fine-tuned model in the registry")
    return str(provenances[0]["base"]), adapters, provenances


def ship(ref: str, out: Path, *, description: str = "", env_steps: int | None = None,
         env_steps_source: str = "", on_top: list[tuple[Path, dict[str, Any]]] | None = None,
         shipped_from: str | None = None) -> Path:
    """Write a registered LoRA fine-tune as a shipped model folder; returns the folder.
    `env_steps`: what the training data cost in env steps (suites charge it to the model's
    arm), with `env_steps_source` saying where the figure comes from. `on_top`: adapters
    trained on top of `ref` (an RL run's adapter over the SFT model it started from, which
    `polar.llm.rl` trains on `ref` merged), each with its provenance, merged after `ref`'s
    chain in this order; `shipped_from` then names what was shipped (e.g. the run's iteration)."""
    for adapter, _ in on_top or []:
        missing = [f for f in ADAPTER_FILES if not (Path(adapter) / f).is_file()]
        if missing:
            raise ConfigError(f"{adapter}: not a LoRA adapter folder (missing {', '.join(missing)})")
    base, adapters, provenances = adapter_chain(ref)
    entry = resolve_model(ref)
    gguf_type = provenances[-1].get("config", {}).get("gguf_type", "q8_0")
    adapters += [Path(a) for a, _ in on_top or []]
    provenances += [p for _, p in on_top or []]
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    names = []
    for i, a in enumerate(adapters, 1):
        names.append(f"adapter-{i}")
        (tmp / names[-1]).mkdir()
        for f in ADAPTER_FILES:
            shutil.copy2(a / f, tmp / names[-1] / f)
    chain = [{k: v for k, v in p.items() if k not in LOCAL_PATHS} for p in provenances]
    provenance: dict[str, Any] = {"shipped_from": shipped_from or entry.ref, "chain": chain}
    if env_steps is not None:
        provenance |= {"env_steps": env_steps, "env_steps_source": env_steps_source}
    shipped = ShippedModel(name=out.name, base=base, adapters=names, gguf_type=gguf_type,
                           description=description or entry.description, provenance=provenance,
                           files=adapter_checksums(tmp, names))
    (tmp / "model.json").write_text(shipped.model_dump_json(indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return out


if __name__ == "__main__":  # `make install`: merge the shipped trained planner once, ahead of its first use
    import sys

    for name in sys.argv[1:] or ["polar-planner"]:
        print(materialise(resolve_model(name)))
