"""The policy's weights as a stream of bounded buckets, for a weight sync.

A sync used to gather the whole model on rank 0 (``full_state_dict``), pickle it to
the driver whole and hand the engine one dict: three full copies at once. Here the
full tensors are gathered one parameter (or one LoRA layer) at a time and handed out
in buckets of at most ``bucket_bytes`` (a single tensor larger than that is a bucket of
its own), so whoever moves them holds about one bucket, whatever the model's size.

Names and values are the engine's view, as ``policy_model.merged_state_dict`` and
``strategy.merged_from_full`` compute it: base-model names; for LoRA, only the adapted
layers, with ``W + B @ A * scaling`` merged. ``lora_adapter_buckets`` streams the
adapter's own tensors for engines that hot-load adapters (and for the adapter's
checkpoint), never gathering a base weight.

On a sharded model (FSDP2's DTensor parameters) each gather is a collective: every
rank must run the generator to its end, in the same order; only the rank with
``keep=True`` (rank 0) gets tensors, the others' generators yield nothing. Plain
models (one process, DDP replicas) read their local tensors and need no peers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

#: the default bound of one bucket (``synchronizer.bucket_mb``)
DEFAULT_BUCKET_BYTES = 256 * 2**20


def _is_dtensor(t: torch.Tensor) -> bool:
    from torch.distributed.tensor import DTensor

    return isinstance(t, DTensor)


def _full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor on the CPU, detached: a collective when ``t`` is a DTensor."""
    t = t.detach()
    if _is_dtensor(t):
        t = t.full_tensor()
    return t.cpu()


def tensor_bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class _Buckets:
    """Fills buckets up to the bound; ``add`` says when one is full and handed out."""

    def __init__(self, bucket_bytes: int) -> None:
        if bucket_bytes < 1:
            raise ValueError(f"bucket_bytes must be >= 1, got {bucket_bytes}")
        self.bound = bucket_bytes
        self.bucket: dict[str, torch.Tensor] = {}
        self.size = 0

    def add(self, names: list[str], tensor: torch.Tensor) -> dict[str, torch.Tensor] | None:
        """Put ``tensor`` in under every name in ``names`` (tied weights share it and
        count once); returns the previous bucket if this tensor did not fit in it."""
        nbytes = tensor_bytes(tensor)
        full = None
        if self.bucket and self.size + nbytes > self.bound:
            full, self.bucket, self.size = self.bucket, {}, 0
        for name in names:
            self.bucket[name] = tensor
        self.size += nbytes
        return full

    def rest(self) -> dict[str, torch.Tensor] | None:
        full, self.bucket, self.size = self.bucket, {}, 0
        return full or None


def _stream(
    items: Iterator[tuple[list[str], Callable[[], torch.Tensor]]], bucket_bytes: int, keep: bool
) -> Iterator[dict[str, torch.Tensor]]:
    """Buckets of the tensors ``items`` produce (each item: its names and a function
    that gathers it). Every item is gathered, kept or not: on a sharded model each
    gather is a collective the other ranks take part in."""
    buckets = _Buckets(bucket_bytes)
    for names, gather in items:
        tensor = gather()
        if not keep:
            continue
        full = buckets.add(names, tensor)
        del tensor
        if full is not None:
            yield full
            del full  # hold one bucket at a time, not the one handed out too
    rest = buckets.rest()
    if rest is not None:
        yield rest


def _state_items(model: nn.Module) -> Iterator[tuple[list[str], Callable[[], torch.Tensor]]]:
    """``model.state_dict()``'s entries, tied entries (one parameter under two names, as
    tied input and output embeddings are) gathered once, in the order of their first
    name. Ties are read from the module tree, never from local storage, so every rank
    groups (and gathers) alike even where its shard of a tensor is empty."""
    owner: dict[str, int] = {
        name: id(t)
        for name, t in (
            *model.named_parameters(remove_duplicate=False),
            *model.named_buffers(remove_duplicate=False),
        )
    }
    groups: dict[Any, list[str]] = {}
    values: dict[Any, torch.Tensor] = {}
    for name, value in model.state_dict().items():
        key = owner.get(name, name)
        groups.setdefault(key, []).append(name)
        values.setdefault(key, value)
    for key, names in groups.items():
        yield names, (lambda v=values[key]: _full(v))


def _lora_layers(model: nn.Module) -> Iterator[tuple[str, Any]]:
    from peft.tuners.lora import LoraLayer

    for name, module in model.get_base_model().named_modules():
        if isinstance(module, LoraLayer):
            yield name, module


def _merged_items(model: nn.Module) -> Iterator[tuple[list[str], Callable[[], torch.Tensor]]]:
    """Each adapted layer's ``W + B @ A * scaling`` under its base-model name."""

    def merged(module: Any) -> torch.Tensor:
        weight = _full(module.base_layer.weight)
        for adapter in module.active_adapters:
            if adapter not in module.lora_A:
                continue
            a = _full(module.lora_A[adapter].weight).float()
            b = _full(module.lora_B[adapter].weight).float()
            weight = weight + ((b @ a) * module.scaling[adapter]).to(weight.dtype)
        return weight

    for name, module in _lora_layers(model):
        yield [f"{name}.weight"], (lambda m=module: merged(m))


def full_weight_buckets(
    model: nn.Module, *, bucket_bytes: int = DEFAULT_BUCKET_BYTES, keep: bool = True
) -> Iterator[dict[str, torch.Tensor]]:
    """The engine's view of ``model`` (base-model names, LoRA merged) in buckets of at
    most ``bucket_bytes``, CPU tensors. On a sharded model a collective: every rank
    runs it to the end; ``keep=False`` (ranks other than 0) yields nothing."""
    items = _merged_items(model) if hasattr(model, "peft_config") else _state_items(model)
    if not keep and not any(_is_dtensor(p) for p in model.parameters()):
        return iter(())  # a replica's tensors are rank 0's too: nothing to take part in
    return _stream(items, bucket_bytes, keep)


def lora_adapter_buckets(
    model: nn.Module, *, bucket_bytes: int = DEFAULT_BUCKET_BYTES, keep: bool = True
) -> Iterator[dict[str, torch.Tensor]]:
    """Only the LoRA adapter's tensors, under the model's own state-dict names (what
    peft's ``save_pretrained(state_dict=...)`` takes), in buckets: no base weight is
    gathered. The same collective rules as :func:`full_weight_buckets`."""
    if not hasattr(model, "peft_config"):
        raise ValueError("lora_adapter_buckets needs a LoRA (peft) model")
    if not keep and not any(_is_dtensor(p) for p in model.parameters()):
        return iter(())
    items = ((names, gather) for names, gather in _state_items(model) if ".lora_" in names[0])
    return _stream(items, bucket_bytes, keep)
