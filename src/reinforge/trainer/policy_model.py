"""The trainable policy: a transformers causal LM or vision-language model, optionally
wrapped with LoRA (peft)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from reinforge.trainer.trainer_config import TrainerConfig


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
    if cfg.gradient_checkpointing:
        # transformers renamed gradient_checkpointing_enable (a warning now, gone in v6)
        enable = getattr(
            model, "activation_checkpointing_enable", model.gradient_checkpointing_enable
        )
        enable(None if reentrant else {"use_reentrant": False})
        model.config.use_cache = False
    if cfg.lora.enabled:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=cfg.lora.r,
            lora_alpha=cfg.lora.alpha,
            lora_dropout=cfg.lora.dropout,
            target_modules=list(cfg.lora.target_modules),
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lora)
    model.train()
    return model


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
