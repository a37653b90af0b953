"""Checkpoint -> GGUF with llama.cpp's own converter, taken at run time from the
llama-cpp-python source distribution (never vendored into Polar).

`converter_dir()` finds the converter (`convert_hf_to_gguf.py`, its `conversion` package and
`gguf-py`) extracted in Polar's cache, extracting it from the sdist named by
`$POLAR_LLAMA_CPP_SDIST` or downloading that sdist with pip (`make install` does this once:
`python -m polar.llm.convert --fetch`). `to_gguf(checkpoint, out)` runs it in a subprocess.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from polar.errors import PolarError
from polar.llm.models import cache_dir

DEFAULT_VERSION = "0.3.36"  # the llama-cpp-python the local-llm extra pins
_MEMBERS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")


class ConvertError(PolarError):
    """The converter is missing or failed."""

    exit_code = 2


def llama_cpp_version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return DEFAULT_VERSION


def converter_ready(version: str | None = None) -> bool:
    """Whether `to_gguf` can run without a download: the converter is extracted in the cache,
    or $POLAR_LLAMA_CPP_SDIST names the sdist to extract it from."""
    root = cache_dir() / "llama.cpp-converter" / (version or llama_cpp_version())
    return (root / "convert_hf_to_gguf.py").exists() or bool(os.environ.get("POLAR_LLAMA_CPP_SDIST"))


def converter_dir(version: str | None = None, fetch: bool = False) -> Path:
    """The extracted converter for `version` (default: the installed llama-cpp-python's)."""
    version = version or llama_cpp_version()
    root = cache_dir() / "llama.cpp-converter" / version
    if (root / "convert_hf_to_gguf.py").exists():
        return root
    sdist = os.environ.get("POLAR_LLAMA_CPP_SDIST")
    if sdist is None and not fetch:
        raise ConvertError(
            f"llama.cpp's GGUF converter (llama-cpp-python {version} sdist) is not in {root}; fetch it once: "
            f"python -m polar.llm.convert --fetch (or set POLAR_LLAMA_CPP_SDIST to the .tar.gz)")
    with tempfile.TemporaryDirectory() as tmp:
        if sdist is None:
            print(f"downloading the llama-cpp-python {version} source distribution (its GGUF converter) with pip",
                  file=sys.stderr, flush=True)
            sdist = str(download_sdist(version, Path(tmp)))
        _extract(Path(sdist), root)
    return root


def download_sdist(version: str, dest: Path) -> Path:
    """The llama-cpp-python `version` source distribution, downloaded with pip into `dest`."""
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={version}", "-d", str(dest)], capture_output=True, text=True)
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz"))
    if r.returncode != 0 or not found:
        raise ConvertError(f"pip download llama-cpp-python=={version} failed: {r.stderr.strip()[-500:]}")
    return found[0]


def _extract(sdist: Path, root: Path) -> None:
    if not sdist.exists():
        raise ConvertError(f"POLAR_LLAMA_CPP_SDIST: {sdist} does not exist")
    tmp_root = root.with_name(root.name + ".tmp")
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            _, sep, rel = m.name.partition("/vendor/llama.cpp/")
            if sep and rel.startswith(_MEMBERS) and (m.isfile() or m.isdir()):
                m.name = rel
                members.append(m)
        if not any(m.name == "convert_hf_to_gguf.py" for m in members):
            raise ConvertError(f"{sdist}: no vendor/llama.cpp/convert_hf_to_gguf.py inside")
        tar.extractall(tmp_root, members=members, filter="data")
    root.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp_root, root)


def to_gguf(checkpoint: str | Path, out: str | Path, outtype: str = "q8_0") -> Path:
    """Convert a Hugging Face checkpoint folder (a merged model, not a LoRA adapter) to GGUF."""
    conv = converter_dir()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(conv / "gguf-py"), str(conv)]),
           "NO_LOCAL_GGUF": ""}
    cmd = [sys.executable, str(conv / "convert_hf_to_gguf.py"), str(checkpoint), "--outfile", str(out),
           "--outtype", outtype]
    from polar.files import die_with_parent

    r = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=die_with_parent)
    if r.returncode != 0 or not out.exists():
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise ConvertError(f"llama.cpp's converter failed on {checkpoint} (exit {r.returncode}):\n{tail}")
    return out


if __name__ == "__main__":
    if sys.argv[1:] != ["--fetch"]:
        sys.exit("usage: python -m polar.llm.convert --fetch   (puts llama.cpp's GGUF converter in Polar's cache)")
    print(converter_dir(fetch=True))
