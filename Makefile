# Every target is idempotent: re-running `make install` does nothing when nothing changed.
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.polar-installed
LLMSTAMP := $(VENV)/.polar-local-llm
TRAINSTAMP := $(VENV)/.polar-train
SYSSTAMP := $(VENV)/.polar-system-deps

.PHONY: install system-deps demo test bench lint clean

install: $(STAMP) $(SYSSTAMP) $(LLMSTAMP) $(TRAINSTAMP)

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch first and pinned: the CPU wheel; an unpinned torch pulls a CUDA build of several GB.
$(STAMP): $(VENV)/bin/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

# The local-LLM extra: llama.cpp's server (built from source the first time, with progress)
# and the model wheels. Its own step so that the long build shows what it is doing.
$(LLMSTAMP): $(STAMP) scripts/install_local_llm.sh
	bash scripts/install_local_llm.sh $(VENV)
	touch $(LLMSTAMP)

# Planner training: TRL, PEFT and friends, and llama.cpp's own GGUF converter (taken from the
# llama-cpp-python sdist into Polar's cache, never vendored), which turns a fine-tuned
# checkpoint into a model llama.cpp serves; then Polar's trained planner (the default planner
# of free-form tasks and an arm of the demo) merged from its shipped adapters, once.
$(TRAINSTAMP): $(LLMSTAMP) pyproject.toml
	$(BIN)/pip install -q -e '.[dev,train]'
	$(BIN)/python -m polar.llm.convert --fetch
	$(BIN)/python -m polar.llm.adapters polar-planner
	touch $(TRAINSTAMP)

# System packages the sandboxes and report tests need (podman+runc serve the Docker API,
# bubblewrap isolates the process sandbox, chromium renders report.html).
$(SYSSTAMP): scripts/install_system_deps.sh | $(VENV)/bin/python
	bash scripts/install_system_deps.sh
	touch $(SYSSTAMP)

system-deps: $(SYSSTAMP)

demo: install
	$(BIN)/polar demo

test: install
	$(BIN)/python -m pytest -q

# Every benchmark writes benchmarks/results/<name>.json; the summary table and the README's
# generated tables come last, also when a benchmark failed (benchmarks/README.md).
bench: install
	$(BIN)/pip install -q -e '.[dev,bench]'
	$(BIN)/python -m pytest -q -m bench --timeout=7200 benchmarks benchmarks/planner_overhead.py; \
	status=$$?; $(BIN)/python benchmarks/summary.py --readme README.md; exit $$status

lint: install
	$(BIN)/ruff check polar tests benchmarks harnesses evals planners prompts sandboxes scripts skills skills_crafter skills_crafter_memory skills_memory

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
