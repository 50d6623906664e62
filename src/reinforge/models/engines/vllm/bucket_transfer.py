"""Streamed weights into vLLM replicas through vLLM's native weight-transfer protocol.

vLLM (0.32) updates weights in a session: ``POST /start_weight_update``, then any
number of ``POST /update_weights`` chunks, then ``POST /finish_weight_update`` (the
dev-mode routes, on since reinforge starts its servers with ``VLLM_SERVER_DEV_MODE``).
What a chunk carries depends on the backend the server was started with
(``--weight-transfer-config``). vLLM's own backends move CUDA tensors (``nccl``: a
broadcast group between trainer and workers; ``ipc``: CUDA IPC handles on one host)
and cannot run on a CPU, so reinforge registers its own, ``reinforge_http``
(``vllm_side/reinforge_vllm_worker.py``): each chunk is a safetensors file in the
request body, base64-encoded, loaded by the model's ``load_weights`` inside vLLM's
layerwise reload. Nothing touches the disk.

The NCCL and IPC backends are the GPU slot of the same session: a ``transport`` that
sends chunks by broadcast instead of by body differs only in ``chunk_bodies`` and the
init handshake. They need GPUs and are not wired here (not run on this CPU machine).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import torch

#: the backend name the worker extension registers (``reinforge_vllm_worker.HTTP_BACKEND``)
HTTP_BACKEND = "reinforge_http"
#: the server flag that builds it in every worker
WEIGHT_TRANSFER_ARGS = ["--weight-transfer-config", json.dumps({"backend": HTTP_BACKEND})]
#: the most bytes of tensors in one request: a bucket is split into chunks this size,
#: since the request body holds them base64-encoded (4/3) next to their encoding
CHUNK_BYTES = 64 * 2**20


def chunk_bodies(
    bucket: dict[str, Any], dtype: str | None, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[dict[str, Any]]:
    """``/update_weights`` bodies for ``bucket``'s tensors: floating tensors cast to the
    servers' ``dtype`` (half the bytes for bf16 servers), a tensor under two names
    (tied embeddings) sent once under its first, at most ``chunk_bytes`` a request (a
    larger tensor alone). Each body is built only when the previous one was sent."""
    from safetensors.torch import save

    target = getattr(torch, dtype) if dtype and dtype != "auto" else None
    seen: set[int] = set()
    chunk: dict[str, torch.Tensor] = {}
    size = 0

    def body(tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
        data = base64.b64encode(save(tensors)).decode("ascii")
        return {"update_info": {"safetensors_b64": data}}

    for name, value in bucket.items():
        if id(value) in seen:
            continue
        seen.add(id(value))
        tensor = value.detach()
        if target is not None and tensor.is_floating_point():
            tensor = tensor.to(target)
        tensor = tensor.to("cpu").contiguous()
        nbytes = tensor.numel() * tensor.element_size()
        if chunk and size + nbytes > chunk_bytes:
            yield body(chunk)
            chunk, size = {}, 0
        chunk[name] = tensor
        size += nbytes
    if chunk:
        yield body(chunk)
