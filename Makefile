# fivectl: the two commands of the README contract.
#   make train  -> creates .venv, installs fivectl, trains the quickstart recipe on the embedded game
#   make test   -> creates .venv, installs fivectl, runs ruff and the test suite
#   make test-slow -> the tests marked slow (the paper-scale network; ~3 GB of memory), skipped by make test
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  ?= torch==2.13.0

.PHONY: install train test test-slow lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first: any other torch request would pull a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --disable-pip-version-check $(TORCH)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev,ray]'
	touch $(STAMP)

install: $(STAMP)

RUN ?= runs/quickstart

# Starts the quickstart run, or resumes it when it already exists (Ctrl-C writes a checkpoint and stops).
train: $(STAMP)
	@if [ -f $(RUN)/run.json ]; then \
		$(BIN)/fivectl train --run $(RUN) --resume $(TRAIN_ARGS); \
	else \
		$(BIN)/fivectl train recipes/quickstart.toml --run $(RUN) $(TRAIN_ARGS); \
	fi

lint: $(STAMP)
	$(BIN)/ruff check fivectl tests benchmarks examples

test: $(STAMP) lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# -m slow replaces the "not slow" filter that pyproject.toml's addopts sets.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
