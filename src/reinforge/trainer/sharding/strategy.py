"""How the policy is spread over the trainer's ranks: one process (:class:`Single`),
replicated with all-reduced gradients (:class:`DDP`) or sharded (:class:`FSDP2`, torch's
``fully_shard``). One interface, chosen from the config by :func:`make_strategy`: the
trainer calls its methods and never asks which strategy it has.

Every forward pass of the trainer goes through :class:`LogprobModule`, wrapped by the
strategy, so DDP's and FSDP2's hooks see each forward (FSDP2 gathers a layer's shards
in its pre-forward hook; DDP prepares its reducer in its forward). What differs
between strategies: the wrapped module, whether a rank starts from its shard alone
(``starts_sharded``, see ``trainer/sharded_start.py``), which backward passes
synchronise gradients, the gradient norm of sharded gradients, fp16's gradient scaler,
and how the full (unsharded) weights reach a checkpoint or an inference engine.
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
    forward hooks run around the whole forward pass (decoder and vocabulary head).
    ``fused_head``: this process alone trains the model, so the head's weight gradient
    may go straight into ``.grad`` (``head_logprobs.py``); no wrapper watches it."""

    def __init__(self, model: nn.Module, fused_head: bool = False) -> None:
        super().__init__()
        self.model = model
        self.fused_head = fused_head

    def forward(
        self, batch: TrainBatch, with_logits: bool = False, only: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return token_logprobs(
            self.model, batch, with_logits=with_logits, only=only, fused_head=self.fused_head
        )


def _has_unused_parameters(model: nn.Module) -> bool:
    """A vision-language model's vision tower takes no part in text-only batches."""
    config = getattr(model, "config", None)
    return getattr(config, "vision_config", None) is not None


def _decoder_layers(model: nn.Module) -> list[nn.Module]:
    base = model.get_base_model() if hasattr(model, "peft_config") else model
    decoder = base.get_decoder()
    return list(getattr(decoder, "layers", []))


def process_group_backend(device: str) -> str:
    """The ranks' ``torch.distributed`` backend on ``device``: gloo on the CPU; on GPUs
    NCCL for CUDA tensors and gloo for CPU ones (``trainer.parallel.cpu_offload`` keeps
    the shards in host memory, and clipping their gradients all-reduces a norm computed
    there), as torchtune, torchtitan and verl open it."""
    return "cuda:nccl,cpu:gloo" if device.startswith("cuda") else "gloo"


def grad_norm_value(norm: torch.Tensor) -> float:
    """A gradient norm as a float; FSDP2's is a DTensor whose full value needs a reduce."""
    from torch.distributed.tensor import DTensor

    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return float(norm)


class Single:
    """One process: the model as it is. The base of the strategies: what DDP and FSDP2
    do differently, they override."""

    name = "single"
    #: whether the models are sharded (their forwards are collectives, to be paired)
    sharded = False
    #: whether a rank builds the model on ``meta`` and loads only its shard
    starts_sharded = False

    def __init__(self, ctx: RankContext, device: torch.device, mixed_precision: str = "no") -> None:
        self.ctx = ctx
        self.device = device
        #: ``trainer.mixed_precision`` resolved for the device ("no", "bf16", "fp16")
        self.mixed_precision = mixed_precision

    @property
    def reentrant_checkpointing(self) -> bool:
        """Activation checkpointing that re-enters autograd (HF's default) is only for
        one process; DDP's and FSDP2's hooks need the non-reentrant kind."""
        return not self.ctx.distributed

    def wrap(self, model: nn.Module) -> nn.Module:
        """``model`` inside a :class:`LogprobModule`, wrapped for the strategy. The
        optimizer must be built after this: FSDP2 replaces the parameters by shards."""
        return LogprobModule(model, fused_head=True)

    def wrap_frozen(self, model: nn.Module) -> nn.Module:
        """A model that is never trained (the KL reference), as its forwards call it."""
        return LogprobModule(model)

    def grad_sync(self, wrapped: nn.Module, last: bool) -> contextlib.AbstractContextManager:
        """The context of one backward pass (``last``: the step's last one)."""
        return contextlib.nullcontext()

    def clip_grad_norm(self, params: list[nn.Parameter], limit: float) -> float:
        """Clip the gradients of ``params`` to ``limit`` in total; their norm before."""
        return grad_norm_value(torch.nn.utils.clip_grad_norm_(params, limit))

    def grad_scaler(self) -> Any:
        """fp16's loss scaler (its gradients underflow without one); None otherwise."""
        if self.mixed_precision != "fp16":
            return None
        return torch.amp.GradScaler(self.device.type)

    def sync_weights(self, model: nn.Module) -> dict[str, torch.Tensor]:
        """The policy's full weights for an inference engine (LoRA merged, base-model
        names): every rank holds them whole here."""
        from reinforge.trainer.policy_model import merged_state_dict

        return merged_state_dict(model)


class DDP(Single):
    """Every rank holds the whole model; gradients are all-reduced in the last backward
    of a step."""

    name = "ddp"

    def wrap(self, model: nn.Module) -> nn.Module:
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(
            LogprobModule(model),
            device_ids=[self.device.index] if self.device.type == "cuda" else None,
            find_unused_parameters=_has_unused_parameters(model),
        )

    def grad_sync(self, wrapped: nn.Module, last: bool) -> contextlib.AbstractContextManager:
        """Earlier backward passes accumulate locally; the last one all-reduces."""
        return contextlib.nullcontext() if last else wrapped.no_sync()


class FSDP2(Single):
    """Parameters, gradients and optimizer state sharded over the ranks (torch's
    ``fully_shard``: each decoder layer one unit, the rest the root's); FSDP2
    reduce-scatters in every backward (each rank runs the same number of passes, so
    the collectives pair up). Under bf16 mixed precision the shards stay fp32 (the
    optimizer's master weights) and each layer is gathered in bf16 for its forward."""

    name = "fsdp2"
    sharded = True
    starts_sharded = True

    def _shard_options(self, *, trained: bool) -> dict[str, Any]:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy

        options: dict[str, Any] = {
            "mesh": init_device_mesh(self.device.type, (self.ctx.world_size,))
        }
        if self.ctx.cpu_offload:
            # pinned host memory speeds the copies to a GPU; without one, pinning fails
            options["offload_policy"] = CPUOffloadPolicy(pin_memory=self.device.type == "cuda")
        if trained and self.mixed_precision == "bf16":
            options["mp_policy"] = MixedPrecisionPolicy(
                param_dtype=torch.bfloat16, reduce_dtype=torch.float32
            )
        return options

    def _shard(self, model: nn.Module, *, trained: bool) -> nn.Module:
        from torch.distributed.fsdp import fully_shard

        options = self._shard_options(trained=trained)
        module = LogprobModule(model)
        for layer in _decoder_layers(model):
            fully_shard(layer, **options)
        fully_shard(module, **options)  # the rest: embeddings, final norm, (tied) head
        return module

    def wrap(self, model: nn.Module) -> nn.Module:
        return self._shard(model, trained=True)

    def wrap_frozen(self, model: nn.Module) -> nn.Module:
        return self._shard(model, trained=False)

    def grad_scaler(self) -> Any:
        if self.mixed_precision != "fp16":
            return None
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

        return ShardedGradScaler(self.device.type)

    def sync_weights(self, model: nn.Module) -> dict[str, torch.Tensor]:
        """A collective: every rank calls it, rank 0 gets the gathered weights, the
        others an empty dict."""
        full = full_state_dict(model)
        return merged_from_full(model, full) if self.ctx.is_main else {}


def grad_sync(
    wrapped: nn.Module, ctx: RankContext, last: bool
) -> contextlib.AbstractContextManager:
    """``make_strategy(ctx, ...).grad_sync(wrapped, last)``, for callers that hold a
    rank context and no strategy."""
    return make_strategy(ctx, torch.device("cpu")).grad_sync(wrapped, last)


STRATEGIES: dict[str, type[Single]] = {"single": Single, "ddp": DDP, "fsdp2": FSDP2}


def make_strategy(ctx: RankContext, device: torch.device, mixed_precision: str = "no") -> Single:
    """The strategy ``ctx`` names (``trainer.parallel.strategy``; ``single`` for one
    process), for this rank on ``device``."""
    name = ctx.strategy if ctx.distributed else "single"
    try:
        kind = STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"trainer.parallel.strategy: unknown parallel strategy {name!r} "
            f"(known: {', '.join(STRATEGIES)})"
        ) from None
    return kind(ctx, device, mixed_precision)


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
