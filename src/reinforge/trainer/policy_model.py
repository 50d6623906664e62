"""The trainable policy: a transformers causal LM or vision-language model, optionally
wrapped with LoRA (peft), and the frozen reference model beside it when the algorithm
has a KL term.

:func:`start_models` builds both for a rank's parallel strategy: whole and then
wrapped (one process, DDP, vision-language models), or on ``meta`` and loaded shard by
shard (FSDP2, ``sharded_start.py``), so that no rank ever holds the whole model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from reinforge.trainer.trainer_config import TrainerConfig

if TYPE_CHECKING:
    from reinforge.trainer.sharding.strategy import Single


def load_policy(
    model_path: str | Path, cfg: TrainerConfig, device: str = "cpu", reentrant: bool = True
) -> Any:
    """Load weights from a local directory for training (LoRA adapters added when enabled);
    a vision-language model through ``AutoModelForImageTextToText``. ``reentrant: False``
    checkpoints activations without re-entering autograd (what DDP and FSDP2 need)."""
    from reinforge.models.vision.loading import model_class

    model = model_class(model_path).from_pretrained(
        model_path, dtype=getattr(torch, cfg.dtype), local_files_only=True
    )
    model.to(device)
    _checkpoint_activations(model, cfg, reentrant)
    if cfg.lora.enabled:
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(cfg))
    model.train()
    return model


def _checkpoint_activations(model: Any, cfg: TrainerConfig, reentrant: bool) -> None:
    if not cfg.checkpoint_activations:
        return
    # transformers renamed gradient_checkpointing_enable (a warning now, gone in v6)
    enable = getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)
    enable(None if reentrant else {"use_reentrant": False})
    model.config.use_cache = False


def lora_config(cfg: TrainerConfig) -> Any:
    """peft's ``LoraConfig`` for the ``trainer.lora`` section."""
    from peft import LoraConfig

    return LoraConfig(
        r=cfg.lora.r,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=list(cfg.lora.target_modules),
        task_type="CAUSAL_LM",
    )


@dataclass
class StartedModels:
    """What a trainer trains and compares against, as its forward passes call them."""

    #: the policy (a HF model, LoRA-wrapped when enabled): its parameters, shards or not
    model: Any
    #: the policy wrapped by the strategy (DDP, FSDP2): what every forward pass calls
    forward_module: torch.nn.Module
    #: the frozen reference (KL, full fine-tunes only), or None
    ref_model: Any = None
    #: the reference as its forwards call it (sharded like the policy under FSDP2)
    ref_forward: torch.nn.Module | None = None
    #: whether the models started from their shards alone (``sharded_start.py``)
    sharded_start: bool = False


def reference_dtype(cfg: TrainerConfig, mixed_precision: str) -> torch.dtype:
    """Under bf16 autocast the reference's matmuls see bf16 weights anyway: store them
    so (half the memory, no cast per forward); otherwise the policy's dtype."""
    return torch.bfloat16 if mixed_precision == "bf16" else getattr(torch, cfg.dtype)


def start_models(
    model_path: str | Path,
    cfg: TrainerConfig,
    strategy: Single,
    *,
    use_reference: bool,
    init_weights: dict[str, torch.Tensor] | None = None,
) -> StartedModels:
    """The policy, and the reference when ``use_reference`` (not with LoRA: its base
    with the adapters off is the reference), built for ``strategy`` on its device and
    started from ``init_weights`` (full, base-model names) when given."""
    from reinforge.trainer.sharded_start import can_start_sharded

    with_reference = use_reference and not cfg.lora.enabled
    if strategy.starts_sharded and can_start_sharded(model_path):
        return _start_sharded(model_path, cfg, strategy, with_reference, init_weights)
    from reinforge.models.vision.loading import model_class

    device = str(strategy.device)
    model = load_policy(model_path, cfg, device, reentrant=strategy.reentrant_checkpointing)
    ref_model = None
    if with_reference:
        ref_model = (
            model_class(model_path)
            .from_pretrained(
                model_path,
                dtype=reference_dtype(cfg, strategy.mixed_precision),
                local_files_only=True,
            )
            .to(device)
            .eval()
        )
        ref_model.requires_grad_(False)
    started = StartedModels(model=model, forward_module=model, ref_model=ref_model)
    if init_weights is not None:
        from reinforge.trainer.weights_into import apply_init_weights

        apply_init_weights(started, init_weights)
    started.forward_module = strategy.wrap(model)
    started.ref_forward = None if ref_model is None else strategy.wrap_frozen(ref_model)
    return started


def _start_sharded(
    model_path: str | Path,
    cfg: TrainerConfig,
    strategy: Single,
    with_reference: bool,
    init_weights: dict[str, torch.Tensor] | None,
) -> StartedModels:
    """Every model on ``meta``, sharded, then each rank's rows read into its shards."""
    from reinforge.trainer import sharded_start

    reader = sharded_start.safetensors_reader(model_path)
    if init_weights is not None:  # init_from's weights first, the base model's for the rest
        reader = sharded_start.overlay(sharded_start.dict_reader(init_weights), reader)
    model = sharded_start.empty_model(model_path, getattr(torch, cfg.dtype))
    _checkpoint_activations(model, cfg, reentrant=False)
    if cfg.lora.enabled:
        model = sharded_start.add_lora(model, lora_config(cfg))
    model.train()
    made = {n: p.detach().clone() for n, p in model.named_parameters() if not p.is_meta}
    forward_module = strategy.wrap(model)
    # FSDP2's CPU offload keeps the shards in host memory; the buffers go to the device
    shards = torch.device("cpu") if strategy.ctx.cpu_offload else strategy.device
    sharded_start.materialise(model, shards, *reader, keep=made, buffer_device=strategy.device)
    started = StartedModels(model=model, forward_module=forward_module, sharded_start=True)
    if with_reference:
        ref = sharded_start.empty_model(model_path, reference_dtype(cfg, strategy.mixed_precision))
        ref.eval()
        ref.requires_grad_(False)
        started.ref_forward = strategy.wrap_frozen(ref)
        sharded_start.materialise(ref, shards, *reader, buffer_device=strategy.device)
        started.ref_model = ref
    return started


def merged_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """Weights an inference engine needs to act like ``model``, under the base model's names.

    For a full fine-tune that is the plain state dict. For LoRA it is, for every
    adapted layer, ``W + ΔW`` (the engine holds a plain model without adapters);
    other parameters never change and are not sent.
    """
    if not hasattr(model, "peft_config"):
        return {k: v.detach() for k, v in model.state_dict().items()}
    from peft.tuners.lora import LoraLayer

    out: dict[str, torch.Tensor] = {}
    base = model.get_base_model()
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer):
            weight = module.base_layer.weight.detach()
            delta = sum(
                module.get_delta_weight(a) for a in module.active_adapters if a in module.lora_A
            )
            out[f"{name}.weight"] = (weight + delta).detach()
    return out


def trainable_parameters(model: Any) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]
