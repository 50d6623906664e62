"""The parameters' gradients as views of one buffer per step, on a CPU trainer in one process.

Why: freed after every optimiser step (``zero_grad(set_to_none=True)``), a model's
gradients (SmolLM2-135M: 0.5 GiB in fp32, 272 tensors of 0.1-108 MiB) leave as many
holes in glibc's heap, between the tensors that live on: the AdamW state, the sampling
engine's weights rebuilt after each sync. The exploring steps and evaluations that follow
scatter their short-lived buffers over those holes, so the process's resident memory
grows towards the heap's whole span. One buffer of the model's size is one ``mmap``
block: freeing it hands its pages back at once and leaves no hole.

The arithmetic is unchanged: the buffer starts at zero and every backward adds into it
in place, as it adds into an existing ``.grad`` from the second micro-batch on.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def flat_gradients(params: Iterable[torch.nn.Parameter]) -> int:
    """Give every parameter in ``params`` that needs a gradient and has none a zero
    ``.grad`` that is a view of one new buffer per dtype; returns the bytes allocated.

    Only dense CPU tensors: a GPU's caching allocator keeps no heap holes, and sharded
    (DTensor) parameters get their gradients from their own collectives."""
    groups: dict[torch.dtype, list[torch.nn.Parameter]] = {}
    for p in params:
        if p.requires_grad and p.grad is None and _plain_cpu(p):
            groups.setdefault(p.dtype, []).append(p)
    allocated = 0
    for dtype, members in groups.items():
        flat = torch.zeros(sum(p.numel() for p in members), dtype=dtype)
        offset = 0
        for p in members:
            p.grad = flat[offset : offset + p.numel()].view_as(p)
            offset += p.numel()
        allocated += flat.numel() * flat.element_size()
    return allocated


def _plain_cpu(p: torch.Tensor) -> bool:
    return p.device.type == "cpu" and p.layout == torch.strided and type(p.data) is torch.Tensor
