"""The parameters' gradients as views of one buffer per step, on a CPU trainer in one process.

Why: freed after every optimiser step (``zero_grad(set_to_none=True)``), a model's
gradients (SmolLM2-135M: 0.5 GiB in fp32, 272 tensors of 0.1-108 MiB) leave as many
holes in glibc's heap, between the tensors that live on: the AdamW state, the sampling
engine's weights rebuilt after each sync. The exploring steps and evaluations that follow
scatter their short-lived buffers over those holes, so the process's resident memory
grows towards the heap's whole span. One buffer of the model's size is one ``mmap``
block: freeing it hands its pages back at once and leaves no hole.

The arithmetic is unchanged: the buffer starts at zero and every backward adds into it
in place, as it adds into an existing ``.grad`` from the second micro-batch on. A
parameter no backward reached (an unused layer) loses its zero gradient before the
optimiser steps (:meth:`FlatGradients.drop_unused`), so the optimiser skips it as it did
when its ``.grad`` stayed None.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class FlatGradients:
    """Zero gradients, views of one new buffer per dtype, for every parameter of
    ``params`` that needs a gradient and has none; ``nbytes`` is what was allocated.

    Only dense CPU tensors: a GPU's caching allocator keeps no heap holes, and sharded
    (DTensor) parameters get their gradients from their own collectives."""

    def __init__(self, params: Iterable[torch.nn.Parameter]) -> None:
        groups: dict[torch.dtype, list[torch.nn.Parameter]] = {}
        for p in params:
            if p.requires_grad and p.grad is None and _plain_cpu(p):
                groups.setdefault(p.dtype, []).append(p)
        self.params = [p for members in groups.values() for p in members]
        self.nbytes = 0
        for dtype, members in groups.items():
            flat = torch.zeros(sum(p.numel() for p in members), dtype=dtype)
            offset = 0
            for p in members:
                p.grad = flat[offset : offset + p.numel()].view_as(p)
                offset += p.numel()
            self.nbytes += flat.numel() * flat.element_size()
        self._reached: set[int] = set()
        self._hooks = [p.register_post_accumulate_grad_hook(self._reach) for p in self.params]

    def _reach(self, param: torch.Tensor) -> None:
        self._reached.add(id(param))

    def drop_unused(self) -> None:
        """Set ``.grad`` back to None where no backward added a gradient: autograd never
        reached the parameter, and nothing wrote into its ``.grad`` directly (as the
        fused head does; such a gradient counts where it is not all zero)."""
        for p in self.params:
            if id(p) not in self._reached and p.grad is not None and not p.grad.any():
                p.grad = None

    def close(self) -> None:
        """Remove the hooks that watch gradients arrive (after the passes, whatever
        their outcome; :meth:`drop_unused` reads what they saw)."""
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


def _plain_cpu(p: torch.Tensor) -> bool:
    return p.device.type == "cpu" and p.layout == torch.strided and type(p.data) is torch.Tensor
