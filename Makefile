# Two commands set up and run everything on a fresh clone:
#   make run   - venv + torch (CPU) + verl-doctor, then the main job on the bundled corpus and model
#   make test  - the same set-up plus the dev tools, then the whole test suite (in random order:
#                pytest-randomly; `-p no:randomly` keeps the file order, `--randomly-seed=N` replays an order)
#   make test-fast - the same without the tests marked slow (under a minute)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The CPU build of torch lies on this machine's disk; installing it first keeps pip from pulling
# the multi-GB CUDA build when sentence-transformers asks for torch.
TORCH  := torch==2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test test-fast lint eval setup dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.torch: $(BIN)/python
	$(BIN)/pip install --quiet $(TORCH)
	@touch $@

$(VENV)/.installed: $(VENV)/.torch pyproject.toml
	$(BIN)/pip install --quiet -e .
	@touch $@

$(VENV)/.dev: $(VENV)/.installed
	$(BIN)/pip install --quiet -e ".[dev,ray]"
	@touch $@

# An editable install leaves the sources uncompiled, and where PYTHONDONTWRITEBYTECODE is set every
# start would compile them again (a tenth of a second per command): compile them once here.
setup: $(VENV)/.installed
	$(BIN)/python -m compileall -q kb indexer server tui >/dev/null

dev: $(VENV)/.dev
	$(BIN)/python -m compileall -q kb indexer server tui >/dev/null

# The main job: the HTTP API, the searchable FAQ at http://127.0.0.1:8000/ and MCP at /mcp,
# on the bundled corpus and embedding model.
run: setup
	$(BIN)/verl-doctor corpus validate
	$(BIN)/verl-doctor index
	$(BIN)/verl-doctor serve

# The real benchmark (issue threads; dev, then the frozen holdout), then the self-made dev set.
eval: setup
	$(BIN)/verl-doctor eval tests/eval/real --split dev
	$(BIN)/verl-doctor eval tests/eval/real --split holdout
	$(BIN)/verl-doctor eval tests/eval/cases

test: dev
	$(BIN)/python -m pytest -q

test-fast: dev
	$(BIN)/python -m pytest -q -m "not slow"

lint: dev
	$(BIN)/ruff check kb indexer server tui tests scripts bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
