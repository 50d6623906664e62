"""Copying full weights (base-model names) into a policy or reference that is not
sharded: ``model.init_from``'s weights at start (``init_weights.py`` reads them).

Apart from ``init_weights.py`` so that building the models (``policy_model.py``) does
not import the checkpoint module, which imports ``policy_model.py`` back.
"""

from __future__ import annotations

from typing import Any

import torch


def load_into(model: Any, weights: dict[str, torch.Tensor], what: str) -> None:
    """Copy ``weights`` (base model names) into ``model``, a plain HF model or a LoRA
    one (whose adapted layers keep the base weight as ``...base_layer.weight``).
    Raises ValueError naming ``what`` if a weight has no place in the model."""
    target = model.get_base_model() if hasattr(model, "peft_config") else model
    own = target.state_dict()
    renamed: dict[str, torch.Tensor] = {}
    for name, tensor in weights.items():
        module, _, leaf = name.rpartition(".")
        place = name if name in own else f"{module}.base_layer.{leaf}"
        if place not in own or own[place].shape != tensor.shape:
            raise ValueError(f"{what}: the init_from weight {name} does not fit the base model")
        renamed[place] = tensor
    target.load_state_dict(renamed, strict=False)


def apply_init_weights(trainer: Any, weights: dict[str, torch.Tensor]) -> None:
    """Start ``trainer``'s policy (``.model``), and its reference model (``.ref_model``)
    if it has one, from ``weights``."""
    with torch.no_grad():
        load_into(trainer.model, weights, "the policy")
        if trainer.ref_model is not None:
            load_into(trainer.ref_model, weights, "the reference model")
