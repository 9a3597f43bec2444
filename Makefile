# fivectl: the two commands of the README contract.
#   make train  -> creates .venv, installs fivectl, trains the quickstart recipe on the embedded game
#   make test   -> creates .venv, installs fivectl, runs ruff and the test suite
#   make test-slow -> the tests marked slow (the paper-scale network; ~3 GB of memory), skipped by make test
#   make test-gpu  -> only the tests marked gpu (CUDA learners, NCCL); make test runs them too, skipped without CUDA
# EXTRAS picks the pip extras installed with it: dev (pytest, ruff) by default; CI adds ray and pettingzoo
# (make test EXTRAS=dev,ray,pettingzoo). Tests of an extra that is not installed skip, saying what to install.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0
EXTRAS ?= dev
comma  := ,
# One stamp per set of extras: asking for other extras installs again.
STAMP  := $(VENV)/.installed-$(subst $(comma),+,$(EXTRAS))

.PHONY: install train test test-slow test-gpu lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first: any other torch request would pull a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --disable-pip-version-check $(TORCH)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

RUN ?= runs/quickstart

# Starts the quickstart run, or resumes it when it already exists (Ctrl-C writes a checkpoint and stops).
# The game's numba kernels are compiled first, two at a time (see test).
train: $(STAMP)
	$(BIN)/python -m fivectl.sim.warmup
	@if [ -f $(RUN)/run.json ]; then \
		$(BIN)/fivectl train --run $(RUN) --resume $(TRAIN_ARGS); \
	else \
		$(BIN)/fivectl train quickstart --run $(RUN) $(TRAIN_ARGS); \
	fi

lint: $(STAMP)
	$(BIN)/ruff check fivectl tests benchmarks examples

# The game's numba kernels compiled into the cache first, two at a time (a cold cache: about 100 s instead of 190 s
# inside the first test that plays a game; a warm one: a few seconds).
test: $(STAMP) lint
	$(BIN)/python -m fivectl.sim.warmup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# -m slow replaces the "not slow" filter that pyproject.toml's addopts sets.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

# The tests marked gpu alone, on a machine with CUDA and a CUDA build of torch in the venv.
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
