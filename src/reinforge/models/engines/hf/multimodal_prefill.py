"""The prefill of a prompt with images in the hf engine.

Why a prefill of its own: the image tensors differ in shape from prompt to prompt,
so such a prompt is run alone (batch of one, no padding), with the processor's
tensors beside its ids. Its KV cache then holds the image's contribution, and the
row joins the running batch like any other: decode steps feed token ids only. The
prefix cache is never used for these prompts (the same ids may carry different
images).
"""

from __future__ import annotations

from typing import Any

import torch


def text_config(config: Any) -> Any:
    """The text model's config of a VLM (vocabulary, context length); ``config`` itself
    for a text-only model."""
    getter = getattr(config, "get_text_config", None)
    return getter() if callable(getter) else config


def model_inputs(multi_modal_inputs: dict[str, Any], device: str, dtype: torch.dtype) -> dict:
    """The request's tensors on ``device``; floating ones (pixels) in the model's dtype."""
    out = {}
    for name, value in multi_modal_inputs.items():
        tensor = torch.as_tensor(value).to(device)
        out[name] = tensor.to(dtype) if tensor.is_floating_point() else tensor
    return out
