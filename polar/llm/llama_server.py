"""llama.cpp's own `llama-server` binary, built once from the llama.cpp source that Polar
already builds (the `vendor/llama.cpp` inside the llama-cpp-python sdist the local-llm extra
pins) and kept in Polar's cache, never vendored.

Why a second engine beside llama-cpp-python's server: llama-server has parallel slots (`-np K`)
and continuous batching, so K episodes' decisions are evaluated together in one batch instead
of queueing behind one model lock (docs/local-llm.md, "Parallel slots").

The binary lives in `<cache>/llama-server/<version>-<flags hash>/llama-server`: the key holds the
llama.cpp version and the CPU flags (the same flags as the llama-cpp-python wheel, from
`cpu_cmake_args`, so the AMX fault avoided there is avoided here too). `ensure_binary()` builds it
when it is missing, under a file lock so parallel test workers or Polar processes build it
once; the full build log stays beside it. `python -m polar.llm.llama_server --build` builds it
ahead of time (`make install` does); `--cmake-args` prints the CPU flags the install script uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from polar.errors import PolarError
from polar.files import file_lock
from polar.llm.convert import download_sdist, llama_cpp_version
from polar.llm.models import cache_dir
from polar.ownership import record_owner

BUILD_TIMEOUT_S = 3600.0  # a cold build on 2 busy cores takes minutes; an hour means it is stuck
# Only what the server needs: no tests/examples, no web UI (the prebuilt one is a download, the
# built one needs npm), no HTTPS (it serves 127.0.0.1), one static binary (no .so to find).
# Without llamafile's sgemm: it takes a matrix product only when the batch has 2 rows or more
# (one decoding slot goes to ggml's one-row kernel, K slots to sgemm's tiles, which sum in
# another order), so a greedy decision would depend on how many episodes are in flight. With it
# off, every product is ggml's per-row dot product, the same for any batch (docs/local-llm.md,
# "Greedy decisions"; the server's flags in polar.llm.serve.DETERMINISM_ARGS do the rest).
_BASE_ARGS = ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_SERVER=ON",
              "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF",
              "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_LLAMAFILE=OFF")


class BuildError(PolarError):
    """llama-server could not be built (no compiler, no source, a compile error)."""

    exit_code = 2


def cpu_cmake_args() -> str:
    """ggml's CPU flags for this machine: the native instruction set without AMX (on CPUs that
    report AMX, the native build's AMX kernels die with a general-protection fault at their first
    `ldtilecfg` under some kernels and hypervisors). The exact string
    scripts/install_local_llm.sh keys the llama-cpp-python wheel cache with."""
    if platform.machine() != "x86_64":
        return "-DGGML_NATIVE=ON"  # AMX is x86 only: native is safe elsewhere
    flags: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    args = "-DGGML_NATIVE=OFF"
    for flag, opt in (("avx", "AVX"), ("avx2", "AVX2"), ("fma", "FMA"), ("f16c", "F16C"), ("bmi2", "BMI2"),
                      ("avx_vnni", "AVX_VNNI")):
        if flag in flags:
            args += f" -DGGML_{opt}=ON"
    if {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"} <= flags:
        args += " -DGGML_AVX512=ON"
        for flag, opt in (("avx512vbmi", "AVX512_VBMI"), ("avx512_vnni", "AVX512_VNNI"),
                          ("avx512_bf16", "AVX512_BF16")):
            if flag in flags:
                args += f" -DGGML_{opt}=ON"
    return args + " -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"


def build_key(version: str | None = None) -> str:
    """`<llama-cpp-python version>-<hash of the cmake arguments>`: a new version or other CPU
    flags build a new binary beside the old one."""
    args = " ".join(_BASE_ARGS) + " " + cpu_cmake_args()
    return f"{version or llama_cpp_version()}-{hashlib.sha256(args.encode()).hexdigest()[:12]}"


def binary_path(version: str | None = None) -> Path:
    """Where the llama-server binary for this version and CPU lives (built or not)."""
    return cache_dir() / "llama-server" / build_key(version) / "llama-server"


def binary_ready(version: str | None = None) -> bool:
    return os.access(binary_path(version), os.X_OK)


def _build_lock(path: Path) -> contextlib.AbstractContextManager[None]:
    return file_lock(path)


def _extract_source(sdist: Path, dest: Path) -> Path:
    """vendor/llama.cpp of the sdist, extracted into `dest`; returns its root."""
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            _, sep, rel = m.name.partition("/vendor/llama.cpp/")
            if sep and (m.isfile() or m.isdir()):
                m.name = rel
                members.append(m)
        if not any(m.name == "tools/server/server.cpp" for m in members):
            raise BuildError(f"{sdist}: no vendor/llama.cpp/tools/server inside (not a llama-cpp-python sdist "
                             "with llama-server's source)")
        tar.extractall(dest, members=members, filter="data")
    return dest


def _run_logged(cmd: list[str], log: Path, cwd: Path | None = None) -> None:
    from polar.files import die_with_parent

    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, timeout=BUILD_TIMEOUT_S,
                           preexec_fn=die_with_parent)
    if r.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise BuildError(f"building llama-server failed at `{' '.join(cmd[:3])} ...` (exit {r.returncode}); "
                         f"last lines of {log}:\n{tail}")


def ensure_binary(version: str | None = None, announce: Callable[[str], None] | None = None) -> Path:
    """The llama-server binary, built first when it is not in the cache (minutes, once)."""
    version = version or llama_cpp_version()
    exe = binary_path(version)
    if os.access(exe, os.X_OK):
        return exe
    say = announce or (lambda msg: print(msg, file=sys.stderr, flush=True))
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildError(f"building llama-server needs `{tool}` on PATH (apt-get install cmake g++)")
    with _build_lock(exe.parent.with_name(exe.parent.name + ".lock")):
        if os.access(exe, os.X_OK):  # another process built it while we waited
            return exe
        log = exe.parent.with_name(exe.parent.name + ".build.log")
        log.unlink(missing_ok=True)
        say(f"building llama.cpp's llama-server {version} from source (once; a few minutes; log: {log})")
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="polar-llama-server-") as tmp:
            sdist = os.environ.get("POLAR_LLAMA_CPP_SDIST")
            src = _extract_source(Path(sdist) if sdist else download_sdist(version, Path(tmp)), Path(tmp) / "src")
            build = Path(tmp) / "build"
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            _run_logged(["cmake", "-S", str(src), "-B", str(build), *gen, *_BASE_ARGS,
                         *cpu_cmake_args().split()], log)
            jobs = str(os.cpu_count() or 1)
            _run_logged(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs], log)
            built = build / "bin" / "llama-server"
            if not built.exists():
                raise BuildError(f"the build finished but {built} is missing; see {log}")
            part = exe.parent.with_name(exe.parent.name + ".partial")
            shutil.rmtree(part, ignore_errors=True)
            part.mkdir(parents=True)
            shutil.copy2(built, part / "llama-server")
            shutil.rmtree(exe.parent, ignore_errors=True)
            os.replace(part, exe.parent)
        record_owner(exe.parent)
        say(f"llama-server built in {time.monotonic() - t0:.0f} s: {exe}")
    return exe


if __name__ == "__main__":
    if sys.argv[1:] == ["--cmake-args"]:
        print(cpu_cmake_args())
    elif sys.argv[1:] == ["--build"]:
        print(ensure_binary())
    else:
        sys.exit("usage: python -m polar.llm.llama_server --build | --cmake-args")
