"""How the policy is spread over the trainer's ranks: one process (``single``), replicated
with all-reduced gradients (``ddp``) or sharded (``fsdp2``, torch's ``fully_shard``).

Every forward pass of the trainer goes through :class:`LogprobModule`, wrapped by the
strategy, so DDP's and FSDP2's hooks see each forward (FSDP2 gathers a layer's shards
in its pre-forward hook; DDP prepares its reducer in its forward). The helpers here
are what differs between strategies: the wrapped module, which backward passes
synchronise gradients, the gradient norm of sharded gradients, and the full
(unsharded) weights for a checkpoint or an inference engine.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reinforge.algorithms import TrainBatch
from reinforge.trainer.token_logprobs import token_logprobs


@dataclass(frozen=True)
class RankContext:
    """Where this trainer process sits among the trainer's ranks."""

    rank: int = 0
    world_size: int = 1
    #: ``single``, ``ddp`` or ``fsdp2``
    strategy: str = "single"
    cpu_offload: bool = False

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


SINGLE = RankContext()


class LogprobModule(nn.Module):
    """The policy's token log-probabilities as one module call, so a parallel wrapper's
    forward hooks run around the whole forward pass (decoder and vocabulary head)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, batch: TrainBatch, with_logits: bool = False, only: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return token_logprobs(self.model, batch, with_logits=with_logits, only=only)


def _has_unused_parameters(model: nn.Module) -> bool:
    """A vision-language model's vision tower takes no part in text-only batches."""
    config = getattr(model, "config", None)
    return getattr(config, "vision_config", None) is not None


def _decoder_layers(model: nn.Module) -> list[nn.Module]:
    base = model.get_base_model() if hasattr(model, "peft_config") else model
    decoder = base.get_decoder()
    return list(getattr(decoder, "layers", []))


def wrap(model: nn.Module, ctx: RankContext, device: torch.device) -> nn.Module:
    """``model`` inside a :class:`LogprobModule`, wrapped for ``ctx.strategy``. The
    optimizer must be built after this: FSDP2 replaces the parameters by sharded ones."""
    module = LogprobModule(model)
    if ctx.strategy == "single":
        return module
    if ctx.strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(
            module,
            device_ids=[device.index] if device.type == "cuda" else None,
            find_unused_parameters=_has_unused_parameters(model),
        )
    if ctx.strategy == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard

        mesh = init_device_mesh(device.type, (ctx.world_size,))
        extra: dict[str, Any] = {"mesh": mesh}
        if ctx.cpu_offload:
            # pinned host memory speeds the copies to a GPU; without one, pinning fails
            pin = device.type == "cuda"
            extra["offload_policy"] = CPUOffloadPolicy(pin_memory=pin)
        for layer in _decoder_layers(model):
            fully_shard(layer, **extra)
        fully_shard(module, **extra)  # the rest: embeddings, final norm, (tied) head
        return module
    raise ValueError(f"unknown parallel strategy {ctx.strategy!r}")


def process_group_backend(device: str) -> str:
    """The ranks' ``torch.distributed`` backend on ``device``: gloo on the CPU; on GPUs
    NCCL for CUDA tensors and gloo for CPU ones (``trainer.parallel.cpu_offload`` keeps
    the shards in host memory, and clipping their gradients all-reduces a norm computed
    there), as torchtune, torchtitan and verl open it."""
    return "cuda:nccl,cpu:gloo" if device.startswith("cuda") else "gloo"


def grad_sync(
    wrapped: nn.Module, ctx: RankContext, last: bool
) -> contextlib.AbstractContextManager:
    """The context of one backward pass: DDP all-reduces only in the step's last one
    (earlier ones accumulate locally); FSDP2 reduce-scatters in every one (each rank
    runs the same number of passes, so the collectives pair up)."""
    if ctx.strategy == "ddp" and not last:
        return wrapped.no_sync()
    return contextlib.nullcontext()


def grad_norm_value(norm: torch.Tensor) -> float:
    """A gradient norm as a float; FSDP2's is a DTensor whose full value needs a reduce."""
    from torch.distributed.tensor import DTensor

    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return float(norm)


def is_sharded(model: nn.Module) -> bool:
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in model.parameters())


def full_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s whole state dict on the CPU: gathered from every rank when sharded
    (a collective: every rank calls it; only rank 0 gets the tensors, the others an
    empty dict), else the local one."""
    if not is_sharded(model):
        return {k: v.detach() for k, v in model.state_dict().items()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options)


def load_full_state_dict(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Copy full tensors (``model``'s own names) into ``model``, sharding them where its
    parameters are sharded; names not given keep their values."""
    if not is_sharded(model):
        model.load_state_dict(weights, strict=False)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    options = StateDictOptions(full_state_dict=True, strict=False)
    set_model_state_dict(model, weights, options=options)


def merged_from_full(model: nn.Module, full: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The engine's view (base-model names, LoRA merged) of ``full``, a full state dict of
    ``model``: what ``policy_model.merged_state_dict`` computes, from gathered tensors."""
    if not hasattr(model, "peft_config"):
        return full
    from peft.tuners.lora import LoraLayer

    out: dict[str, torch.Tensor] = {}
    prefix = "base_model.model."
    for name, module in model.get_base_model().named_modules():
        if not isinstance(module, LoraLayer):
            continue
        key = f"{prefix}{name}"
        weight = full[f"{key}.base_layer.weight"]
        for adapter in module.active_adapters:
            if adapter not in module.lora_A:
                continue
            a = full[f"{key}.lora_A.{adapter}.weight"].float()
            b = full[f"{key}.lora_B.{adapter}.weight"].float()
            weight = weight + ((b @ a) * module.scaling[adapter]).to(weight.dtype)
        out[f"{name}.weight"] = weight
    return out
