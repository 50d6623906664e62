"""Streamed weights into vLLM replicas through vLLM's native weight-transfer protocol.

vLLM (0.32) updates weights in a session: ``POST /start_weight_update``, then any
number of ``POST /update_weights`` chunks, then ``POST /finish_weight_update`` (the
dev-mode routes, on since reinforge starts its servers with ``VLLM_SERVER_DEV_MODE``).
What a chunk's ``update_info`` carries depends on the backend the server was started
with (``--weight-transfer-config``). vLLM's own backends move CUDA tensors (``nccl``:
a broadcast group between trainer and workers; ``ipc``: CUDA IPC handles on one host)
and cannot run on a CPU, so reinforge registers its own, ``reinforge_http``
(``vllm_side/reinforge_vllm_worker.py``).

Its ``update_info`` is a small descriptor (``Chunk.descriptor``): a URL and, for each
tensor, its name, dtype, shape and byte offset. The bytes themselves do not ride in
the JSON request: the driver serves them raw from the tensors' own memory
(``chunk_server.ChunkServer``) and each worker pulls them with one HTTP GET into one
buffer, views the tensors in it and loads them with the model's ``load_weights``
inside vLLM's layerwise reload. Base64 in a JSON body (the first version) cost 4/3
of the bytes plus two JSON copies on the driver, and a JSON parse, an IPC hop and a
decode of the whole text on the server (docs/lab/2026-12-02-streamed-sync.md).
Nothing touches the disk.

The NCCL and IPC backends are the GPU slot of the same session: a transport that
broadcasts chunks instead of serving them differs only in the descriptor and the
init handshake. They need GPUs and are not wired here (not run on this CPU machine).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

#: the backend name the worker extension registers (``reinforge_vllm_worker.HTTP_BACKEND``)
HTTP_BACKEND = "reinforge_http"
#: the server flag that builds it in every worker
WEIGHT_TRANSFER_ARGS = ["--weight-transfer-config", json.dumps({"backend": HTTP_BACKEND})]
#: the most bytes of tensors in one ``/update_weights`` request (a larger tensor goes
#: alone): each worker holds one chunk in a receive buffer while it loads it
CHUNK_BYTES = 128 * 2**20
#: each tensor starts at a multiple of this in the chunk's bytes, so the worker can
#: view any dtype in its buffer without a copy
ALIGN = 64


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class Chunk:
    """Tensors sent in one request: their bytes are laid end to end (each at an
    ``ALIGN``-ed offset) in the order of ``tensors``; ``nbytes`` counts the padding."""

    tensors: list[tuple[str, torch.Tensor]] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    nbytes: int = 0

    def end_with(self, tensor: torch.Tensor) -> int:
        """``nbytes`` once ``tensor`` is added."""
        start = -(-self.nbytes // ALIGN) * ALIGN
        return start + tensor.numel() * tensor.element_size()

    def add(self, name: str, tensor: torch.Tensor) -> None:
        end = self.end_with(tensor)
        self.tensors.append((name, tensor))
        self.offsets.append(end - tensor.numel() * tensor.element_size())
        self.nbytes = end

    def pieces(self) -> Iterator[memoryview]:
        """The chunk's bytes as the tensors' own memory (zero padding between): what
        the chunk server writes to a socket, with no copy of a tensor."""
        at = 0
        for (_, tensor), offset in zip(self.tensors, self.offsets, strict=True):
            if offset > at:
                yield memoryview(bytes(offset - at))
            raw = tensor.reshape(-1).view(torch.uint8).numpy()
            yield memoryview(raw)
            at = offset + raw.nbytes

    def descriptor(self, url: str) -> dict[str, Any]:
        """The ``update_info`` of this chunk when it is served at ``url``."""
        return {
            "url": url,
            "nbytes": self.nbytes,
            "tensors": [
                {"name": name, "dtype": _dtype_name(t.dtype), "shape": list(t.shape),
                 "offset": offset}
                for (name, t), offset in zip(self.tensors, self.offsets, strict=True)
            ],
        }  # fmt: skip


def pack_chunks(
    bucket: dict[str, Any], dtype: str | None, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[Chunk]:
    """``bucket``'s tensors in chunks of at most ``chunk_bytes`` bytes, padding included
    (a larger tensor alone):
    floating tensors cast to the servers' ``dtype`` (half the bytes for bf16 servers; no
    copy when the dtype already matches), a tensor under two names (tied embeddings)
    sent once under its first. Each chunk is built only when the previous one was
    sent, so the driver holds the bucket plus at most one chunk's casts."""
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    target = getattr(torch, dtype) if dtype and dtype != "auto" else None
    seen: set[int] = set()
    chunk = Chunk()
    for name, value in bucket.items():
        if id(value) in seen:
            continue
        seen.add(id(value))
        tensor = value.detach()
        if target is not None and tensor.is_floating_point():
            tensor = tensor.to(target)
        tensor = tensor.to("cpu").contiguous()
        if chunk.tensors and chunk.end_with(tensor) > chunk_bytes:
            yield chunk
            chunk = Chunk()
        chunk.add(name, tensor)
    if chunk.tensors:
        yield chunk
