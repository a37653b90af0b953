"""Read the metadata of a GGUF file (llama.cpp's model format) without loading the model.

Only the key-value header is parsed: architecture, name, context length, chat template,
quantisation. Arrays (the tokenizer's vocabulary) are skipped and kept as their length, so
reading a 100 MB file takes milliseconds and needs no engine installed.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from polar.errors import ConfigError

_SCALARS = {  # GGUF value type -> struct format
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9

# llama.cpp's file types (general.file_type), the common ones
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise EOFError("the file ends inside its header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    data = f.read(n)
    if len(data) != n:
        raise EOFError("the file ends inside a string")
    return data.decode("utf-8", errors="replace")


def _value(f: BinaryIO, vtype: int, keep: bool = False) -> Any:
    if vtype in _SCALARS:
        return _read(f, _SCALARS[vtype])
    if vtype == _STRING:
        return _string(f)
    if vtype == _ARRAY:
        itype, count = _read(f, "<I"), _read(f, "<Q")
        if keep:
            return [_value(f, itype) for _ in range(count)]
        if itype in _SCALARS:
            f.seek(count * struct.calcsize(_SCALARS[itype]), 1)
        elif itype == _STRING:
            for _ in range(count):
                f.seek(_read(f, "<Q"), 1)
        else:
            for _ in range(count):
                _value(f, itype)
        return {"array_length": count}
    raise ValueError(f"unknown GGUF value type {vtype}")


def read_metadata(path: str | Path, arrays: tuple[str, ...] = ()) -> dict[str, Any]:
    """The header's key-value pairs; arrays as `{"array_length": n}` except those named in
    `arrays` (e.g. "tokenizer.ggml.tokens", the vocabulary), which are read in full."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise ConfigError(f"{p}: not a GGUF file (no GGUF magic at the start)")
            version = _read(f, "<I")
            if version < 2:
                raise ConfigError(f"{p}: GGUF version {version} is too old (2 or later expected)")
            _read(f, "<Q")  # tensor count
            n_kv = _read(f, "<Q")
            out: dict[str, Any] = {"gguf.version": version}
            for _ in range(n_kv):
                key = _string(f)
                out[key] = _value(f, _read(f, "<I"), keep=key in arrays)
            return out
    except OSError as err:
        raise ConfigError(f"{p}: cannot read: {err.strerror}") from None
    except (EOFError, ValueError, struct.error) as err:
        raise ConfigError(f"{p}: corrupt GGUF header: {err}") from None


def summarize(meta: dict[str, Any]) -> dict[str, Any]:
    """What `polar llm models` shows: architecture, name, context length, quantisation, vocab."""
    arch = meta.get("general.architecture")
    tokens = meta.get("tokenizer.ggml.tokens")
    return {
        "architecture": arch,
        "gguf_name": meta.get("general.name"),
        "context_length": meta.get(f"{arch}.context_length"),
        "quantization": FILE_TYPES.get(meta.get("general.file_type", -1)),
        "vocab_size": tokens.get("array_length") if isinstance(tokens, dict) else None,
        "has_chat_template": "tokenizer.chat_template" in meta,
        "gguf_license": meta.get("general.license"),
    }
