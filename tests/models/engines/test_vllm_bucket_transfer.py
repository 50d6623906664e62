"""The request bodies of a streamed vLLM sync (``vllm.bucket_transfer``), without a server:
each holds at most the chunk bound (a larger tensor alone), a tensor under two names
(tied embeddings) goes once, floating tensors arrive in the servers' dtype, and decoding
the bodies the way the worker's backend does gives back every tensor."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import torch
from safetensors.torch import load

from reinforge.models.engines.vllm import server
from reinforge.models.engines.vllm.bucket_transfer import WEIGHT_TRANSFER_ARGS, chunk_bodies


def _decode(body: dict) -> dict[str, torch.Tensor]:
    return load(base64.b64decode(body["update_info"]["safetensors_b64"]))


def test_bodies_are_bounded_dedupe_tied_weights_and_cast_to_the_servers_dtype() -> None:
    torch.manual_seed(0)
    embed = torch.randn(64, 32)  # 8 KiB in fp32
    bucket = {
        "model.embed_tokens.weight": embed,
        "model.layers.0.mlp.up_proj.weight": torch.randn(16, 32),
        "model.layers.0.mlp.down_proj.weight": torch.randn(32, 16),
        "model.norm.weight": torch.randn(32),
        "lm_head.weight": embed,  # tied: the same tensor
        "model.rotary.inv_freq_steps": torch.arange(4),  # not floating: kept as is
    }
    bound = 2048
    bodies = [_decode(b) for b in chunk_bodies(bucket, "bfloat16", chunk_bytes=bound)]
    got: dict[str, torch.Tensor] = {}
    for tensors in bodies:
        size = sum(t.numel() * t.element_size() for t in tensors.values())
        assert size <= bound or len(tensors) == 1
        got.update(tensors)
    assert len(bodies) > 2
    assert "lm_head.weight" not in got  # sent once, under its first name
    assert got.keys() == bucket.keys() - {"lm_head.weight"}
    for name, tensor in got.items():
        want = bucket[name]
        if want.is_floating_point():
            assert tensor.dtype == torch.bfloat16
            assert torch.equal(tensor, want.to(torch.bfloat16)), name
        else:
            assert tensor.dtype == want.dtype and torch.equal(tensor, want), name


def test_a_float32_server_gets_the_exact_tensors() -> None:
    bucket = {"w": torch.randn(8, 8), "b": torch.randn(8)}
    (body,) = list(chunk_bodies(bucket, "float32"))
    got = _decode(body)
    assert all(torch.equal(got[k], v) for k, v in bucket.items())


def test_servers_are_started_with_the_backend_their_workers_register() -> None:
    """The name in the server flag is the one the worker extension registers (loaded
    here by path: without vLLM installed it registers nothing, but names it)."""
    path = Path(server.VLLM_SIDE_DIR) / "reinforge_vllm_worker.py"
    spec = importlib.util.spec_from_file_location("reinforge_vllm_worker", path)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    flag, value = WEIGHT_TRANSFER_ARGS
    assert flag == "--weight-transfer-config"
    assert json.loads(value) == {"backend": worker.HTTP_BACKEND}
